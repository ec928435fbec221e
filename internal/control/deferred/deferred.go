// Package deferred writes the task_deferred events of placement (seed 002):
// when a cycle holds a task back for a sticky worker, the event log says so
// once per wait, not once per cycle it goes on waiting. It is a feature of
// the scheduling loop (internal/control/hook) that watches each cycle's
// decisions; the waits it remembers are loop state, touched on the loop
// goroutine only.
package deferred

import (
	"log/slog"

	"github.com/allot-sched/allot/internal/control/hook"
	"github.com/allot-sched/allot/internal/engine"
)

// Feature remembers the waits it wrote an event for. It implements
// hook.DecisionsWatcher.
type Feature struct {
	log *slog.Logger
	// waits lists, per job, the tasks that wait for a sticky worker and
	// whose task_deferred event was written.
	waits map[string]map[string]bool
}

// New returns the feature, logging each deferral at debug level to log.
func New(log *slog.Logger) *Feature {
	return &Feature{log: log, waits: map[string]map[string]bool{}}
}

// Name names the feature.
func (f *Feature) Name() string { return "deferred tasks" }

// Decisions ends the waits of the tasks that started, writes one
// task_deferred event per task per wait for the tasks the cycle held back,
// and forgets the waits of jobs that ended.
func (f *Feature) Decisions(r hook.Round, d *engine.Decisions) {
	for _, s := range d.Starts {
		if m := f.waits[s.Job]; m != nil {
			delete(m, s.Task) // its wait is over
		}
	}
	for _, df := range d.Deferred {
		m := f.waits[df.Job]
		if m == nil {
			m = map[string]bool{}
			f.waits[df.Job] = m
		}
		if m[df.Task] {
			continue
		}
		m[df.Task] = true
		r.Event(hook.EventTaskDeferred, df.Job, df.Task, df.Worker, df.Reason)
		f.log.Debug("task deferred", "job", df.Job, "task", df.Task, "worker", df.Worker, "reason", df.Reason.Code)
	}
	for _, je := range d.JobsDone {
		delete(f.waits, je.Job)
	}
}
