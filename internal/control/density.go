package control

import (
	"github.com/allot-sched/allot/internal/api"
)

// The task/worker density series of seed 002 in the server: per bucket of
// placement.densityBucket, the tasks submitted and started and the workers
// busy and enabled (the meaning of internal/sim's series, counted by the
// same package, internal/density), kept for the last density.WindowBuckets
// buckets and served by GET /v1/density.

// noteDensity counts the round's submissions and starts from its events,
// and recounts the fleet when a worker came, left or changed state. It
// runs after the round's records are flushed, so the running index holds
// exactly the busy workers.
func (c *Controller) noteDensity(t *txn) {
	submitted, started := 0, 0
	for i := range t.batch.Events {
		e := &t.batch.Events[i]
		switch e.Kind {
		case EventJobSubmitted:
			if lj := c.jobs[e.Job]; lj != nil {
				submitted += len(lj.tasks)
			}
		case EventTaskStarted:
			started++
		case EventWorkerRegistered, EventWorkerLost, EventWorkerState:
			c.pl.fleetDirty = true
		}
	}
	c.countFleet()
	c.pl.density.Record(t.now, submitted, started, len(c.running))
}

// Density returns the task/worker density series without a loop round.
func (c *Controller) Density() api.Density {
	step, buckets := c.pl.density.Series()
	out := api.Density{BucketSeconds: step.Seconds(), Buckets: make([]api.DensityBucket, len(buckets))}
	for i, b := range buckets {
		out.Buckets[i] = api.DensityBucket{Start: b.Start, Submitted: b.Submitted, Started: b.Started,
			ActiveWorkers: b.ActiveWorkers, PeakActiveWorkers: b.PeakActiveWorkers, EnabledWorkers: b.EnabledWorkers}
	}
	return out
}
