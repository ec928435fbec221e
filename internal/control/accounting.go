package control

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/store"
)

// Accounting: every attempt that ends is recorded (store.Attempt) with its
// job's queue, share and submitter, its GPUs and what the worker measured,
// in the same commit as the end itself. allot get shows each task's
// attempts from these records, and allot usage sums them over a period.

// measured is what a report said an attempt used.
type measured struct {
	cpuSeconds float64
	peakMemory int64
}

// measure keeps what a report measured of the attempt rec runs, for the
// record written when the round commits.
func (t *txn) measure(rec *store.Task, r api.Report) {
	if r.CPUSeconds == 0 && r.PeakMemory == 0 {
		return
	}
	if t.measured == nil {
		t.measured = map[*store.Task]measured{}
	}
	t.measured[rec] = measured{cpuSeconds: r.CPUSeconds, peakMemory: r.PeakMemory}
}

// endedNow reports whether rec records an attempt that ended in this
// round: its record is due. The attempt must have been running until this
// round (it is still in the index of running tasks, which the round's
// flush updates): a task that ends while it waits (cancelled after a
// requeue) still holds the start of an attempt whose record was written.
func (t *txn) endedNow(rec *store.Task) bool {
	if rec.Attempt <= 0 || rec.Started.IsZero() || !rec.Ended.Equal(t.now) {
		return false
	}
	_, ran := t.c.running[rec.Worker][rec]
	return ran
}

// recordAttempt adds the accounting record of the attempt rec describes,
// which ended in this round.
func (t *txn) recordAttempt(rec *store.Task) {
	a := store.Attempt{Job: rec.Job, Task: rec.Name, Attempt: rec.Attempt, Worker: rec.Worker,
		Started: rec.Started, Ended: rec.Ended, ExitCode: rec.ExitCode}
	if lj, ok := t.c.jobs[rec.Job]; ok {
		a.Queue, a.Share, a.Submitter = lj.rec.Queue, lj.rec.Share, lj.rec.Submitter
		for _, mt := range lj.model.Tasks {
			if mt.Name == rec.Name {
				a.GPUs = int(mt.Resources.GPUs)
				break
			}
		}
	}
	if m, ok := t.measured[rec]; ok {
		a.CPUSeconds, a.PeakMemory = m.cpuSeconds, m.peakMemory
		delete(t.measured, rec)
	}
	t.batch.Attempts = append(t.batch.Attempts, a)
	t.c.owesRecord(rec, a) // a cancelled attempt's report completes it (stopped.go)
}

// withAttempts adds to each task of job the attempts the accounting
// recorded, and to the task the usage of its current attempt.
func withAttempts(ctx context.Context, st store.Store, job api.Job) (api.Job, error) {
	recs, err := st.Attempts(ctx, store.AttemptFilter{Job: job.ID})
	if err != nil || len(recs) == 0 {
		return job, err
	}
	byTask := map[string][]store.Attempt{}
	for _, a := range recs {
		byTask[a.Task] = append(byTask[a.Task], a)
	}
	for i := range job.Tasks {
		tv := &job.Tasks[i]
		as := byTask[tv.Name]
		sort.Slice(as, func(i, j int) bool { return as[i].Attempt < as[j].Attempt })
		for _, a := range as {
			tv.Attempts = append(tv.Attempts, api.AttemptUsage{Attempt: a.Attempt, Worker: a.Worker, Started: a.Started,
				Ended: a.Ended, ExitCode: a.ExitCode, CPUSeconds: a.CPUSeconds, PeakMemory: a.PeakMemory,
				WallSeconds: a.Ended.Sub(a.Started).Seconds()})
			if a.Attempt == tv.Attempt {
				tv.CPUSeconds, tv.PeakMemory = a.CPUSeconds, a.PeakMemory
			}
		}
	}
	return job, nil
}

// DefaultUsagePeriod is the period allot usage covers when none is given.
const DefaultUsagePeriod = 7 * 24 * time.Hour

// Usage sums what the attempts recorded in [since, until) used, per share
// and per submitter (api.Usage says how). sees, when not nil, keeps the
// attempts of the jobs a caller may read (by their queue and share): the
// rest count nowhere, not in the total either, so that what a submitter
// is shown tells nothing of jobs outside its scope, whatever their share
// or submitter is called.
func Usage(ctx context.Context, st store.Store, since, until time.Time, sees func(queue, share string) bool) (api.Usage, error) {
	if !until.After(since) {
		return api.Usage{}, fmt.Errorf("%w: the period ends (%s) before it starts (%s)", ErrInvalid,
			until.Format(time.RFC3339), since.Format(time.RFC3339))
	}
	recs, err := st.Attempts(ctx, store.AttemptFilter{EndedAfter: since, StartedBefore: until})
	if err != nil {
		return api.Usage{}, err
	}
	out := api.Usage{Since: since, Until: until, Shares: []api.UsageRow{}, Submitters: []api.UsageRow{}}
	shares, subs := map[string]*api.UsageRow{}, map[string]*api.UsageRow{}
	add := func(m map[string]*api.UsageRow, name string, slot, cpu, gpu float64) {
		r := m[name]
		if r == nil {
			r = &api.UsageRow{Name: name}
			m[name] = r
		}
		r.Attempts++
		r.SlotHours += slot
		r.CPUHours += cpu
		r.GPUHours += gpu
	}
	for _, a := range recs {
		if sees != nil && !sees(a.Queue, a.Share) {
			continue
		}
		wall := a.Ended.Sub(a.Started)
		in := minTime(a.Ended, until).Sub(maxTime(a.Started, since))
		if in <= 0 || wall <= 0 {
			continue
		}
		slot := in.Hours()
		cpu := a.CPUSeconds / 3600 * (float64(in) / float64(wall))
		gpu := slot * float64(a.GPUs)
		add(shares, a.Share, slot, cpu, gpu)
		add(subs, a.Submitter, slot, cpu, gpu)
		out.Total.Attempts++
		out.Total.SlotHours += slot
		out.Total.CPUHours += cpu
		out.Total.GPUHours += gpu
	}
	for _, m := range []struct {
		rows map[string]*api.UsageRow
		dst  *[]api.UsageRow
	}{{shares, &out.Shares}, {subs, &out.Submitters}} {
		for _, r := range m.rows {
			*m.dst = append(*m.dst, *r)
		}
		sort.Slice(*m.dst, func(i, j int) bool { return (*m.dst)[i].Name < (*m.dst)[j].Name })
	}
	return out, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
