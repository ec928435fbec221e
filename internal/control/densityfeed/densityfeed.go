// Package densityfeed feeds the server's task/worker density series (seed
// 002, GET /v1/density) from the scheduling loop: at the end of every round
// (internal/control/hook) it counts the round's submitted tasks and started
// attempts from its events, and the busy workers, into an
// internal/density.Window, the package that counts the simulator's series
// too, so that both mean the same. The enabled workers come from the loop's
// fleet count (internal/control/placement.go, SetEnabled), which runs just
// before it.
package densityfeed

import (
	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control/hook"
	"github.com/allot-sched/allot/internal/density"
)

// Feed records each round into a density window. It implements
// hook.RoundEnder.
type Feed struct {
	w *density.Window
}

// New returns a feed recording into w.
func New(w *density.Window) *Feed { return &Feed{w: w} }

// Name names the feature.
func (f *Feed) Name() string { return "density" }

// RoundEnd records the round's submissions and starts and the busy
// workers. It runs after the round's records are flushed, so the loop's
// running index holds exactly the busy workers.
func (f *Feed) RoundEnd(r hook.Round) {
	submitted, started := 0, 0
	evs := r.Events()
	for i := range evs {
		switch evs[i].Kind {
		case hook.EventJobSubmitted:
			submitted += r.JobTasks(evs[i].Job)
		case hook.EventTaskStarted:
			started++
		}
	}
	f.w.Record(r.Now(), submitted, started, r.BusyWorkers())
}

// Series returns the density series as the API serves it; it takes the
// window's lock, not a loop round.
func (f *Feed) Series() api.Density {
	step, buckets := f.w.Series()
	out := api.Density{BucketSeconds: step.Seconds(), Buckets: make([]api.DensityBucket, len(buckets))}
	for i, b := range buckets {
		out.Buckets[i] = api.DensityBucket{Start: b.Start, Submitted: b.Submitted, Started: b.Started,
			ActiveWorkers: b.ActiveWorkers, PeakActiveWorkers: b.PeakActiveWorkers, EnabledWorkers: b.EnabledWorkers}
	}
	return out
}
