package control

import (
	"context"
	"log/slog"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// Observer is told what the scheduling loop does, so that metrics
// (internal/metrics) can count it without the control plane knowing about
// any metrics system. Cycle and StoreState run on the loop goroutine;
// Commit runs on the goroutine that commits a round beside the loop (Run),
// so it may run while the loop reports the next round's Cycle, but never
// beside another Commit. Every method must be quick and must not call back
// into the Controller; it must not keep or modify what it is given.
type Observer interface {
	// Cycle reports one engine cycle: its decisions and how long the
	// engine took to make them (seed 000's scheduling Duration).
	Cycle(d *engine.Decisions, took time.Duration)
	// Commit reports one store commit: the events it made durable (task
	// starts, ends, requeues with their reasons), how long it took, and
	// its error. On error the events were not stored; the same batch may
	// come again in a retry.
	Commit(events []store.Event, took time.Duration, err error)
	// StoreState reports that the store stopped taking writes, with the
	// cause ("disk full"), or, with an empty cause, that it takes them
	// again (degraded.go).
	StoreState(cause string)
}

// timedCycle runs one engine cycle, timing it, and tells the observer and
// the log about it. It replaces a bare c.eng.Cycle call in cycle.
func (c *Controller) timedCycle(now time.Time) *engine.Decisions {
	start := time.Now()
	d := c.eng.Cycle(now)
	took := time.Since(start)
	c.logDecisions(d)
	if o := c.cfg.Observer; o != nil {
		o.Cycle(d, took)
	}
	return d
}

// commit writes a round's batch, timing it for the observer.
func (c *Controller) commit(ctx context.Context, b store.Batch) error {
	c.noteStored(b)
	start := time.Now()
	err := c.st.Commit(ctx, b)
	if o := c.cfg.Observer; o != nil {
		o.Commit(b.Events, time.Since(start), err)
	}
	return err
}

// logDecisions writes the cycle's decisions that concern one job, each
// line with job= so that `grep job=ID` follows a job through the log.
// Starts are logged where they are dispatched (placement.go's "dispatch"
// line, at debug level); here go the ends and holds that need attention
// (failures, requeues, preemptions, throttles) at info or warn, and a
// sticky deferral, which repeats every cycle, at debug.
func (c *Controller) logDecisions(d *engine.Decisions) {
	log := c.cfg.Logger
	if log.Enabled(context.Background(), slog.LevelDebug) {
		for _, df := range d.Deferred {
			log.Debug("task deferred", "job", df.Job, "task", df.Task, "worker", df.Worker, "reason", df.Reason.Code)
		}
	}
	for _, s := range d.Stops {
		log.Info("task stopped", "job", s.Job, "task", s.Task, "worker", s.Worker, "reason", s.Reason.Code, "detail", s.Reason.Message)
	}
	for _, e := range d.Ended {
		switch {
		case e.State == model.TaskFailed:
			log.Warn("task failed", "job", e.Job, "task", e.Task, "worker", e.Worker, "reason", e.Reason.Code, "detail", e.Reason.Message)
		case e.State == model.TaskCancelled:
			log.Debug("task cancelled", "job", e.Job, "task", e.Task, "worker", e.Worker)
		default:
			log.Info("task requeued", "job", e.Job, "task", e.Task, "worker", e.Worker, "reason", e.Reason.Code, "detail", e.Reason.Message)
		}
	}
	for _, th := range d.Throttled {
		log.Info("job throttled", "job", th.Job, "reason", th.Reason.Code, "detail", th.Reason.Message)
	}
	for _, id := range d.DeadLettered {
		log.Warn("job dead-lettered", "job", id)
	}
	for _, je := range d.JobsDone {
		log.Info("job ended", "job", je.Job, "state", string(je.State))
	}
}
