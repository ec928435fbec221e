package control

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

func TestSilentWorkerIsLostItsTaskRunsElsewhereAndItsStaleAttemptIsStopped(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	a1 := p.leaseUntil("w1", "the assignment", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0].Attempt
	p.register("w2", 1)

	// w2 keeps in touch; w1 falls silent for longer than the timeout.
	p.clock.Add(20 * time.Second)
	if err := p.c.Heartbeat("w2"); err != nil {
		t.Fatal(err)
	}
	p.clock.Add(11 * time.Second)
	p.waitWorkerState("w1", workerLost)
	if got := p.worker("w2").State; got != "ready" {
		t.Errorf("w2 is %s, want ready: it sent a heartbeat within the timeout", got)
	}

	second := p.leaseUntil("w2", "the requeued task", func(l api.Lease) bool { return len(l.Assignments) == 1 })
	a2 := second.Assignments[0].Attempt
	if a2.Task != "t" || a2.Attempt != a1.Attempt+1 {
		t.Fatalf("w2 got %+v, want task t's attempt %d", a2, a1.Attempt+1)
	}
	tk := p.task("j", "t")
	if tk.Fails != 0 || tk.Worker != "w2" || tk.State != "running" {
		t.Errorf("task after the loss: %+v; want running on w2 with no failure counted", tk)
	}
	lost := p.events(EventWorkerLost)
	if len(lost) != 1 || lost[0].Worker != "w1" || lost[0].Reason != model.ReasonWorkerLost {
		t.Errorf("worker_lost events %+v, want one for w1", lost)
	}
	requeued := p.events(EventTaskRequeued)
	if len(requeued) != 1 || requeued[0].Task != "t" || requeued[0].Worker != "w1" || requeued[0].Reason != model.ReasonWorkerLost {
		t.Errorf("task_requeued events %+v, want one for t on w1 with reason worker_lost", requeued)
	}

	// Every call of the lost worker tells it to register again.
	if err := p.c.Heartbeat("w1"); !isNotFound(err) {
		t.Errorf("heartbeat of a lost worker: %v, want not found", err)
	}
	if _, err := p.c.Lease(p.ctx(), "w1", 0, nil); !isNotFound(err) {
		t.Errorf("lease of a lost worker: %v, want not found", err)
	}
	if err := p.report("w1", succeeded(a1)); !isNotFound(err) {
		t.Errorf("report of a lost worker: %v, want not found", err)
	}
	if _, err := p.c.SetWorkerState(p.ctx(), "w1", model.WorkerDraining); err == nil {
		t.Errorf("draining a lost worker succeeded; want a conflict")
	}

	// It comes back still running its stale attempt: that attempt is
	// stopped, and its late result is ignored.
	p.register("w1", 1, a1)
	if got := p.worker("w1").State; got != "ready" {
		t.Errorf("w1 is %s after registering again, want ready", got)
	}
	p.leaseUntil("w1", "a stop order for the stale attempt", func(l api.Lease) bool { return hasStop(l.Stops, a1) })
	if err := p.report("w1", succeeded(a1)); err != nil {
		t.Fatal(err)
	}
	if tk := p.task("j", "t"); tk.State != "running" || tk.Worker != "w2" {
		t.Fatalf("the stale attempt's result was taken: %+v", tk)
	}
	if err := p.report("w2", succeeded(a2)); err != nil {
		t.Fatal(err)
	}
	if j := p.job("j"); j.State != "succeeded" {
		t.Errorf("job %s, want succeeded", j.State)
	}
	if n := len(p.events(EventTaskSucceeded)); n != 1 {
		t.Errorf("%d task_succeeded events, want 1", n)
	}
}

func TestContactOfAnyKindKeepsAWorker(t *testing.T) {
	for _, tt := range []struct {
		name    string
		contact func(p *plane) error
	}{
		{"heartbeat", func(p *plane) error { return p.c.Heartbeat("w1") }},
		{"lease request", func(p *plane) error { _, err := p.c.Lease(p.ctx(), "w1", 0, nil); return err }},
		{"report", func(p *plane) error { return p.report("w1") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlane(t)
			p.register("w1", 1)
			for range 4 {
				p.clock.Add(20 * time.Second)
				if err := tt.contact(p); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(20 * time.Millisecond) // several ticks
			if got := p.worker("w1").State; got != "ready" {
				t.Errorf("w1 is %s after 80s with contact every 20s, want ready", got)
			}
			if n := len(p.events(EventWorkerLost)); n != 0 {
				t.Errorf("%d worker_lost events, want none", n)
			}
		})
	}
}

// A long poll is contact when it arrives, not when it ends: a worker that
// froze with a poll open is lost all the same.
func TestAnOpenLongPollIsNoSignOfLife(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	polled := make(chan error, 1)
	go func() {
		_, err := p.c.Lease(p.ctx(), "w1", time.Minute, nil)
		polled <- err
	}()
	time.Sleep(10 * time.Millisecond) // the poll is open
	p.clock.Add(31 * time.Second)
	p.waitWorkerState("w1", workerLost)
	select {
	case err := <-polled:
		if err != nil && !isNotFound(err) {
			t.Errorf("the open poll ended with %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("the open poll was not released when its worker was lost")
	}
}

func TestWorkerViewCountsRunningTasksAndLastContact(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 3)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "t", Count: 2, Run: "true"}}})
	l := p.leaseUntil("w1", "two assignments", func(l api.Lease) bool { return len(l.Assignments) == 2 })
	p.clock.Add(5 * time.Second)
	if err := p.c.Heartbeat("w1"); err != nil {
		t.Fatal(err)
	}
	w := p.worker("w1")
	if w.Running != 2 || !w.LastSeen.Equal(p.clock.Now()) {
		t.Errorf("worker view: running %d, last seen %v; want 2 and %v", w.Running, w.LastSeen, p.clock.Now())
	}
	if err := p.report("w1", succeeded(l.Assignments[0].Attempt)); err != nil {
		t.Fatal(err)
	}
	if w := p.worker("w1"); w.Running != 1 {
		t.Errorf("running %d after one report, want 1", w.Running)
	}
}

// Orders taken by one lease request leave a wake-up behind; the next long
// poll must not answer empty at once because of it (the agent would then
// pause before asking again, and every task would wait for it).
func TestLongPollWaitsPastAWakeUpForOrdersAlreadyTaken(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 2)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	p.leaseUntil("w1", "the assignment", func(l api.Lease) bool { return len(l.Assignments) == 1 })

	const wait = 300 * time.Millisecond
	start := time.Now()
	l, err := p.c.Lease(p.ctx(), "w1", wait, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); len(l.Assignments)+len(l.Stops) == 0 && took < wait*3/4 {
		t.Errorf("the long poll answered empty after %v, want it to wait %v", took, wait)
	}
}

func TestWorkerRegisteringAgainWithOtherHardwareHasItsAttemptsStopped(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	a1 := p.leaseUntil("w1", "the assignment", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0].Attempt

	// Same name, more slots: it left and joined again, so what it runs
	// from before is not the server's any more.
	p.register("w1", 2, a1)
	l := p.leaseUntil("w1", "the stop order and the task again", func(l api.Lease) bool {
		_, again := attemptOf(l.Assignments, "t")
		return hasStop(l.Stops, a1) && again
	})
	if a2, _ := attemptOf(l.Assignments, "t"); a2.Attempt != a1.Attempt+1 {
		t.Errorf("t restarted as attempt %d, want %d", a2.Attempt, a1.Attempt+1)
	}
	if tk := p.task("j", "t"); tk.Fails != 0 {
		t.Errorf("t counts %d failures, want none", tk.Fails)
	}
}

// A worker that registers again in the very round whose tick finds its old
// mailbox silent must not be declared lost by that old silence.
func TestWorkerRegisteringInATickRoundIsNotLostForItsPastSilence(t *testing.T) {
	clock := newFakeClock()
	st, err := sqlite.Open(sqlite.Memory)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := New(context.Background(), Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}},
		HeartbeatTimeout: 30 * time.Second, Clock: clock.Now, Logger: slog.New(slog.DiscardHandler)}, st)
	if err != nil {
		t.Fatal(err)
	}
	// step runs call's request in one round of the loop, by hand.
	step := func(ticked bool, call func() error) {
		t.Helper()
		errc := make(chan error, 1)
		go func() { errc <- call() }()
		r := <-c.reqs
		if err := c.round(context.Background(), []*request{r}, ticked); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	register := func() error {
		_, err := c.Register(context.Background(), api.Register{Name: "w1", Resources: spec.Resources{CPU: 1000, Memory: 1024}})
		return err
	}
	step(false, register)
	clock.Add(31 * time.Second)
	step(true, register)
	if got := c.workers["w1"].rec.State; got != "ready" {
		t.Fatalf("w1 is %s after registering in a tick round, want ready", got)
	}
	if err := c.Heartbeat("w1"); err != nil {
		t.Errorf("heartbeat after registering: %v", err)
	}
}
