package whatif

import (
	"slices"
	"time"

	"github.com/allot-sched/allot/internal/engine"
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

// Longest returns the longest runtime in the window, or false with too
// few samples (a nil window has none).
func (w *Window) Longest() (time.Duration, bool) {
	if w == nil || len(w.ring) < MinSamples {
		return 0, false
	}
	return slices.Max(w.ring), true
}

// Runtimes estimates how long an attempt of each of a job's unfinished
// tasks runs, from the job's task records by name and the spec entry each
// task came from: the mean observed runtime of the succeeded tasks of the
// same entry; else the entry's declared duration; else the median runtime
// of the queue's recent succeeded attempts (too few: none), capped by the
// entry's timeout; else that timeout. Each estimate also carries the
// longest runtime seen of the task's peers (its entry's succeeded tasks,
// else the queue's recent attempts) and the entry's timeout, which a
// running attempt past its typical runtime is expected to reach. Tasks
// with none of these are left out: the estimate then knows nothing of them
// (engine.BasisNone).
func Runtimes(tasks map[string]*store.Task, entry map[string]*spec.Task, queue *Window) map[string]engine.RuntimeEstimate {
	type sum struct {
		total, longest time.Duration
		n              int
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
		d := rec.Ended.Sub(rec.Started)
		observed[k].total += d
		observed[k].longest = max(observed[k].longest, d)
		observed[k].n++
	}
	queueMedian, _ := queue.Median()
	queueLongest, _ := queue.Longest()
	out := map[string]engine.RuntimeEstimate{}
	for name, rec := range tasks {
		if model.TaskState(rec.State).Terminal() {
			continue
		}
		e := entry[name]
		var r engine.RuntimeEstimate
		if e != nil {
			r.Timeout = time.Duration(e.Timeout)
		}
		r.Longest = queueLongest
		switch s := observed[entryOf(name)]; {
		case s != nil:
			r.Typical, r.Longest, r.Basis = s.total/time.Duration(s.n), s.longest, engine.BasisObserved
		case e != nil && e.Duration > 0:
			r.Typical, r.Basis = time.Duration(e.Duration), engine.BasisDeclared
		case queueMedian > 0:
			r.Typical, r.Basis = queueMedian, engine.BasisQueue
			if r.Timeout > 0 {
				r.Typical = min(queueMedian, r.Timeout)
			}
		case r.Timeout > 0:
			r.Typical, r.Basis = r.Timeout, engine.BasisTimeout
		default:
			continue
		}
		out[name] = r
	}
	return out
}
