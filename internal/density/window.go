package density

import (
	"slices"
	"sync"
	"time"
)

// DefaultBucket is the server's bucket size when placement.densityBucket
// is unset (seed 002: HOST_METRICS_DENSITY_BUCKET_SEC, default 60 s).
const DefaultBucket = time.Minute

// WindowBuckets bounds the series a server keeps in memory: a day of
// minutes.
const WindowBuckets = 1440

// Bucket is one bucket of a Window: [Start, Start + step).
type Bucket struct {
	Start time.Time
	Counts
}

// Window keeps the latest buckets of a running server's series. The
// scheduling loop writes it once a round; API goroutines read it without
// a loop round, hence the lock.
type Window struct {
	mu      sync.Mutex
	step    time.Duration
	max     int
	buckets []Bucket
	active  int // busy workers as of the last round
	enabled int // enabled workers as of the last count
}

// NewWindow keeps the latest max buckets of size step.
func NewWindow(step time.Duration, max int) *Window {
	return &Window{step: step, max: max}
}

// current returns the bucket holding now, opening it (and the buckets of a
// gap, which carry the worker counts on) as needed. Called with w.mu held.
func (w *Window) current(now time.Time) *Bucket {
	start := now.Truncate(w.step).UTC()
	n := len(w.buckets)
	if n > 0 && !w.buckets[n-1].Start.Before(start) {
		return &w.buckets[n-1] // this bucket, or the clock went back
	}
	next := start
	if n > 0 {
		next = w.buckets[n-1].Start.Add(w.step)
		if gap := start.Sub(next) / w.step; gap >= time.Duration(w.max) {
			next = start.Add(-time.Duration(w.max-1) * w.step)
		}
	}
	for ; !next.After(start); next = next.Add(w.step) {
		w.buckets = append(w.buckets, Bucket{Start: next, Counts: Counts{ActiveWorkers: w.active,
			PeakActiveWorkers: w.active, EnabledWorkers: w.enabled}})
	}
	if extra := len(w.buckets) - w.max; extra > 0 {
		w.buckets = slices.Delete(w.buckets, 0, extra)
	}
	return &w.buckets[len(w.buckets)-1]
}

// Record adds a round's submissions and starts and the busy workers at its
// end.
func (w *Window) Record(now time.Time, submitted, started, active int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.current(now)
	b.Submitted += submitted
	b.Started += started
	w.active = active
	b.ActiveWorkers, b.EnabledWorkers = active, w.enabled
	b.PeakActiveWorkers = max(b.PeakActiveWorkers, active)
}

// SetEnabled records the enabled workers from now on.
func (w *Window) SetEnabled(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.enabled = n
}

// Series copies the window out, the oldest bucket first.
func (w *Window) Series() (step time.Duration, buckets []Bucket) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.step, slices.Clone(w.buckets)
}
