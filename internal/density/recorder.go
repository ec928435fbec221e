package density

import "time"

// MaxRecorded bounds the buckets of a Recorder: a finer bucket is
// coarsened, so a long trace replay keeps a series of bounded size.
const MaxRecorded = 20_000

// Recorder accumulates the series of one simulated run. Times are
// nanoseconds after the run's start.
type Recorder struct {
	step    int64 // bucket size, ns
	buckets []Counts
	set     []bool // buckets whose end values were written
	active  int    // busy workers now
	enabled int    // enabled workers now
}

// NewRecorder starts a series of buckets of size step with enabled workers
// enabled at time zero.
func NewRecorder(step time.Duration, enabled int) *Recorder {
	return &Recorder{step: int64(step), enabled: enabled}
}

// at returns the bucket of time t, growing the series and coarsening it
// when it would exceed its bound.
func (d *Recorder) at(t int64) *Counts {
	for t/d.step >= MaxRecorded {
		d.coarsen()
	}
	i := int(t / d.step)
	for len(d.buckets) <= i {
		d.buckets = append(d.buckets, Counts{})
		d.set = append(d.set, false)
	}
	return &d.buckets[i]
}

// coarsen doubles the bucket size, merging pairs of buckets.
func (d *Recorder) coarsen() {
	d.step *= 2
	n := (len(d.buckets) + 1) / 2
	for i := 0; i < n; i++ {
		a := d.buckets[2*i]
		aset := d.set[2*i]
		if 2*i+1 < len(d.buckets) {
			b := d.buckets[2*i+1]
			a.Submitted += b.Submitted
			a.Started += b.Started
			a.PeakActiveWorkers = max(a.PeakActiveWorkers, b.PeakActiveWorkers)
			if d.set[2*i+1] {
				a.ActiveWorkers, a.EnabledWorkers, aset = b.ActiveWorkers, b.EnabledWorkers, true
			}
		}
		d.buckets[i], d.set[i] = a, aset
	}
	d.buckets, d.set = d.buckets[:n], d.set[:n]
}

// Submitted counts n tasks submitted at t.
func (d *Recorder) Submitted(t int64, n int) { d.at(t).Submitted += n }

// Started counts a task start at t.
func (d *Recorder) Started(t int64) { d.at(t).Started++ }

// Workers records the busy and enabled counts after a change at t.
func (d *Recorder) Workers(t int64, active, enabled int) {
	b := d.at(t)
	// The previous count held until now, so also at some time in this
	// bucket.
	b.PeakActiveWorkers = max(b.PeakActiveWorkers, d.active, active)
	d.active, d.enabled = active, enabled
	b.ActiveWorkers, b.EnabledWorkers = active, enabled
	d.set[int(t/d.step)] = true
}

// Finish ends the series at end and returns its bucket size and buckets
// (bucket i starts at i·step): buckets without a change carry the previous
// values, starting from initialEnabled enabled workers.
func (d *Recorder) Finish(end int64, initialEnabled int) (step time.Duration, buckets []Counts) {
	d.at(end)
	active, enabled := 0, initialEnabled
	for i := range d.buckets {
		b := &d.buckets[i]
		if d.set[i] {
			active, enabled = b.ActiveWorkers, b.EnabledWorkers
		} else {
			b.ActiveWorkers, b.EnabledWorkers = active, enabled
		}
		b.PeakActiveWorkers = max(b.PeakActiveWorkers, b.ActiveWorkers)
	}
	return time.Duration(d.step), d.buckets
}
