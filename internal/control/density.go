package control

import (
	"slices"
	"sync"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// The task/worker density series of seed 002 in the server: per bucket of
// placement.densityBucket, the tasks submitted and started and the workers
// busy and enabled (the meaning of internal/sim's series), kept for the
// last DensityBuckets buckets and served by GET /v1/density.

// DefaultDensityBucket is the bucket size when placement.densityBucket is
// unset (seed 002: HOST_METRICS_DENSITY_BUCKET_SEC, default 60 s).
const DefaultDensityBucket = time.Minute

// DensityBuckets bounds the series kept in memory: a day of minutes.
const DensityBuckets = 1440

// densitySeries accumulates the series; the loop writes, API goroutines
// read.
type densitySeries struct {
	mu      sync.Mutex
	step    time.Duration
	max     int
	buckets []api.DensityBucket
	active  int // busy workers as of the last round
	enabled int // enabled workers as of the last count
}

func newDensitySeries(step time.Duration, max int) *densitySeries {
	return &densitySeries{step: step, max: max}
}

// current returns the bucket holding now, opening it (and the buckets of a
// gap, which carry the worker counts on) as needed. Called with d.mu held.
func (d *densitySeries) current(now time.Time) *api.DensityBucket {
	start := now.Truncate(d.step).UTC()
	n := len(d.buckets)
	if n > 0 && !d.buckets[n-1].Start.Before(start) {
		return &d.buckets[n-1] // this bucket, or the clock went back
	}
	next := start
	if n > 0 {
		next = d.buckets[n-1].Start.Add(d.step)
		if gap := start.Sub(next) / d.step; gap >= time.Duration(d.max) {
			next = start.Add(-time.Duration(d.max-1) * d.step)
		}
	}
	for ; !next.After(start); next = next.Add(d.step) {
		d.buckets = append(d.buckets, api.DensityBucket{Start: next, ActiveWorkers: d.active,
			PeakActiveWorkers: d.active, EnabledWorkers: d.enabled})
	}
	if extra := len(d.buckets) - d.max; extra > 0 {
		d.buckets = slices.Delete(d.buckets, 0, extra)
	}
	return &d.buckets[len(d.buckets)-1]
}

// record adds a round's submissions and starts and the busy workers at its
// end.
func (d *densitySeries) record(now time.Time, submitted, started, active int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b := d.current(now)
	b.Submitted += submitted
	b.Started += started
	d.active = active
	b.ActiveWorkers, b.EnabledWorkers = active, d.enabled
	b.PeakActiveWorkers = max(b.PeakActiveWorkers, active)
}

// setEnabled records the enabled workers from now on.
func (d *densitySeries) setEnabled(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.enabled = n
}

// series copies the series out.
func (d *densitySeries) series() api.Density {
	d.mu.Lock()
	defer d.mu.Unlock()
	return api.Density{BucketSeconds: d.step.Seconds(), Buckets: slices.Clone(d.buckets)}
}

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
	c.pl.density.record(t.now, submitted, started, len(c.running))
}

// Density returns the task/worker density series without a loop round.
func (c *Controller) Density() api.Density { return c.pl.density.series() }
