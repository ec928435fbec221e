package control

import (
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// Every attempt that ends is recorded once, with its job's share and
// submitter and what the worker measured: a failed attempt whose retry
// starts in the same round, and a running attempt that is cancelled.
func TestEachEndedAttemptIsRecordedWithWhatTheWorkerMeasured(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	if _, err := p.c.SubmitBy(p.ctx(), "ann", spec.Job{ID: "j", Queue: "batch", Share: "vision",
		Tasks: []spec.Task{{Name: "t", Run: "true", MaxAttempts: 3}}}); err != nil {
		t.Fatal(err)
	}
	first := p.leaseUntil("w1", "attempt 1", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0].Attempt
	t0 := p.clock.Now()
	p.clock.Add(2 * time.Second)
	if err := p.report("w1", api.Report{Attempt: first, ExitCode: 1, CPUSeconds: 1.5, PeakMemory: 1000}); err != nil {
		t.Fatal(err)
	}
	second := p.leaseUntil("w1", "attempt 2", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0].Attempt
	if second.Attempt != 2 {
		t.Fatalf("second attempt %+v", second)
	}
	p.clock.Add(3 * time.Second)
	if _, err := p.c.Cancel(p.ctx(), "j"); err != nil {
		t.Fatal(err)
	}
	recs, err := p.st.Attempts(p.ctx(), store.AttemptFilter{Job: "j"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("records %+v, want 2", recs)
	}
	a1, a2 := recs[0], recs[1]
	if a1.Attempt != 1 || a1.Share != "vision" || a1.Submitter != "ann" || a1.Queue != "batch" || a1.Worker != "w1" ||
		!a1.Started.Equal(t0) || !a1.Ended.Equal(t0.Add(2*time.Second)) || a1.ExitCode == nil || *a1.ExitCode != 1 ||
		a1.CPUSeconds != 1.5 || a1.PeakMemory != 1000 {
		t.Errorf("attempt 1: %+v", a1)
	}
	if a2.Attempt != 2 || !a2.Started.Equal(t0.Add(2*time.Second)) || !a2.Ended.Equal(t0.Add(5*time.Second)) || a2.CPUSeconds != 0 {
		t.Errorf("attempt 2: %+v", a2)
	}
	tk := p.task("j", "t")
	if len(tk.Attempts) != 2 || tk.Attempts[0].WallSeconds != 2 || tk.Attempts[0].CPUSeconds != 1.5 || tk.Attempts[1].WallSeconds != 3 {
		t.Errorf("the job's task shows %+v", tk.Attempts)
	}
}

// An attempt requeued when its worker left is recorded then; cancelling
// the task while it waits for its next attempt records nothing more.
func TestAWaitingTaskThatEndsDoesNotRecordItsLastAttemptAgain(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Queue: "batch", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	p.leaseUntil("w1", "attempt 1", func(l api.Lease) bool { return len(l.Assignments) == 1 })
	p.clock.Add(time.Second)
	if err := p.c.Leave(p.ctx(), "w1"); err != nil {
		t.Fatal(err)
	}
	left := p.clock.Now()
	p.clock.Add(time.Minute)
	if _, err := p.c.Cancel(p.ctx(), "j"); err != nil {
		t.Fatal(err)
	}
	recs, err := p.st.Attempts(p.ctx(), store.AttemptFilter{Job: "j"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || !recs[0].Ended.Equal(left) {
		t.Errorf("records %+v, want attempt 1 ending when the worker left (%s)", recs, left)
	}
}

// Usage counts each attempt for its part inside the period and refuses a
// period that ends before it starts.
func TestUsageCountsThePartInsideThePeriod(t *testing.T) {
	p := newPlane(t)
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	err := p.st.Commit(p.ctx(), store.Batch{Attempts: []store.Attempt{
		{Job: "a", Task: "t", Attempt: 1, Share: "s", Submitter: "ann", Started: day.Add(-time.Hour), Ended: day.Add(3 * time.Hour),
			GPUs: 2, CPUSeconds: 4 * 3600},
	}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := Usage(p.ctx(), p.st, day, day.Add(2*time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	// 2 of its 4 hours: 2 slot-hours, 2 of 4 CPU-hours, 4 GPU-hours.
	want := api.UsageRow{Name: "s", Attempts: 1, SlotHours: 2, CPUHours: 2, GPUHours: 4}
	if len(u.Shares) != 1 || u.Shares[0] != want || u.Submitters[0].Name != "ann" || u.Total.SlotHours != 2 {
		t.Errorf("usage %+v", u)
	}
	if _, err := Usage(p.ctx(), p.st, day, day, nil); err == nil {
		t.Error("an empty period was accepted")
	}
}
