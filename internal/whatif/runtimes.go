package whatif

import (
	"slices"
	"time"

	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// Window keeps the runtimes of a queue's last succeeded attempts, so that
// the estimate has a figure for a task nothing else estimates (no earlier
// run of its stage in its job, no declared duration): what tasks of that
// queue took lately. The zero value is empty; it is the loop's own.
type Window struct {
	ring []time.Duration
	next int
}

// WindowLen bounds a queue's window: enough for a stable median, small
// enough to copy for each explain.
const WindowLen = 256

// MinSamples is how many runtimes a window needs before its median is
// used; fewer say too little about the queue.
const MinSamples = 5

// Add records a runtime, forgetting the oldest of a full window.
func (w *Window) Add(d time.Duration) {
	if len(w.ring) < WindowLen {
		w.ring = append(w.ring, d)
		return
	}
	w.ring[w.next] = d
	w.next = (w.next + 1) % WindowLen
}

// Len returns how many runtimes the window holds.
func (w *Window) Len() int { return len(w.ring) }

// Median returns the window's median runtime, or false with too few
// samples (a nil window has none).
func (w *Window) Median() (time.Duration, bool) {
	if w == nil || len(w.ring) < MinSamples {
		return 0, false
	}
	s := slices.Clone(w.ring)
	slices.Sort(s)
	return s[len(s)/2], true
}

// Runtimes estimates how long an attempt of each of a job's unfinished
// tasks runs, from the job's task records by name and the spec entry each
// task came from: the mean observed runtime of the succeeded tasks of the
// same entry; else the entry's declared duration; else queueMedian, the
// median runtime of the queue's recent succeeded attempts (0: too few),
// capped by the entry's timeout; else that timeout. Tasks with none of these
// are left to engine.DefaultAttemptRuntime.
func Runtimes(tasks map[string]*store.Task, entry map[string]*spec.Task, queueMedian time.Duration) map[string]time.Duration {
	type sum struct {
		total time.Duration
		n     int
	}
	observed := map[string]*sum{}
	entryOf := func(name string) string {
		if e := entry[name]; e != nil {
			return e.Name
		}
		return name
	}
	for name, rec := range tasks {
		if rec.State != string(model.TaskSucceeded) || rec.Started.IsZero() || !rec.Ended.After(rec.Started) {
			continue
		}
		k := entryOf(name)
		if observed[k] == nil {
			observed[k] = &sum{}
		}
		observed[k].total += rec.Ended.Sub(rec.Started)
		observed[k].n++
	}
	out := map[string]time.Duration{}
	for name, rec := range tasks {
		if model.TaskState(rec.State).Terminal() {
			continue
		}
		e := entry[name]
		switch s := observed[entryOf(name)]; {
		case s != nil:
			out[name] = s.total / time.Duration(s.n)
		case e != nil && e.Duration > 0:
			out[name] = time.Duration(e.Duration)
		case queueMedian > 0:
			out[name] = queueMedian
			if e != nil && e.Timeout > 0 {
				out[name] = min(queueMedian, time.Duration(e.Timeout))
			}
		case e != nil && e.Timeout > 0:
			out[name] = time.Duration(e.Timeout)
		}
	}
	return out
}
