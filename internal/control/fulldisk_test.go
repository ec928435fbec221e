package control

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// A full disk must not stop the server: the round whose commit failed is
// held, and retried until it is stored (the engine has applied it, so it
// must not be dropped); meanwhile changes are refused with
// store.ErrUnavailable (not applied, safe to send again), reads and worker
// contact go on, and nothing is lost when there is room again.

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// unavailable reports whether err refuses a change because the store
// cannot write, naming the cause.
func unavailable(err error) bool {
	return errors.Is(err, store.ErrUnavailable) && strings.Contains(err.Error(), "disk full")
}

func TestFullDiskHoldsTheRoundRefusesChangesKeepsReadsAndWorkersAndResumes(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 2)
	p.submit(spec.Job{ID: "a", Tasks: []spec.Task{{Name: "t1", Run: "true"}, {Name: "t2", Run: "true"}}})
	l := p.leaseUntil("w1", "t1 and t2", func(l api.Lease) bool { return len(l.Assignments) == 2 })
	t1, _ := attemptOf(l.Assignments, "t1")
	t2, _ := attemptOf(l.Assignments, "t2")

	p.disk.Fill()
	// The round that takes this report cannot be stored: the report is
	// answered only once it is.
	held := make(chan error, 1)
	go func() { held <- p.report("w1", succeeded(t1)) }()
	waitFor(t, "the controller to notice the full disk", func() bool { return p.c.StoreHealth().Degraded })
	if h := p.c.StoreHealth(); h.Cause != "disk full" || h.Since.IsZero() {
		t.Errorf("store health %+v, want degraded since a time, cause disk full", h)
	}

	// A change is refused at once: it was not applied.
	start := time.Now()
	if _, err := p.c.Submit(p.ctx(), spec.Job{ID: "b", Tasks: []spec.Task{{Name: "t", Run: "true"}}}); !unavailable(err) {
		t.Fatalf("submit on a full disk: %v; want store.ErrUnavailable naming the disk", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the refusal took %s", took)
	}
	if err := p.c.Ping(p.ctx()); !unavailable(err) {
		t.Errorf("Ping (readiness) on a full disk: %v; want store.ErrUnavailable naming the disk", err)
	}
	// Reads answer.
	if j := p.job("a"); j.State != "running" {
		t.Errorf("job a is %s, want running", j.State)
	}
	if _, err := p.c.Queues(p.ctx()); err != nil {
		t.Errorf("queues on a full disk: %v", err)
	}
	// The worker stays in contact, longer than the heartbeat timeout:
	// heartbeats (with cache hints, which change placement state) and
	// lease requests that say what it holds.
	for range 6 {
		p.clock.addHeld(10 * time.Second)
		hb := api.Heartbeat{Cache: []api.CacheHint{{Kind: "dataset", Name: "imagenet"}}}
		if err := p.c.HeartbeatCache(p.ctx(), "w1", hb); err != nil {
			t.Fatalf("heartbeat on a full disk: %v", err)
		}
		holds := []api.Attempt{t2}
		if _, err := p.c.Lease(p.ctx(), "w1", 0, &holds); err != nil {
			t.Fatalf("lease on a full disk: %v", err)
		}
		time.Sleep(5 * time.Millisecond) // ticks come and go
	}
	waitFor(t, "a retry of the held round", func() bool { return p.disk.Refused() >= 2 })
	select {
	case err := <-held:
		t.Fatalf("the report was answered (%v) before it was stored", err)
	default:
	}

	p.disk.Free()
	select {
	case err := <-held:
		if err != nil {
			t.Fatalf("the held report, once stored: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("the held report was never answered after the disk had room")
	}
	waitFor(t, "the controller to take writes again", func() bool { return !p.c.StoreHealth().Degraded })
	time.Sleep(20 * time.Millisecond) // ticks: a late lost-worker check would fire now
	if w := p.worker("w1"); w.State != "ready" {
		t.Errorf("w1 is %s after the outage, want ready", w.State)
	}
	if evs := p.events(EventWorkerLost); len(evs) > 0 {
		t.Errorf("worker lost during the outage: %+v", evs)
	}
	if tk := p.task("a", "t2"); tk.State != "running" || tk.Attempt != t2.Attempt {
		t.Errorf("t2 is %s at attempt %d, want still running attempt %d", tk.State, tk.Attempt, t2.Attempt)
	}
	if _, err := p.c.Job(p.ctx(), "b"); !isNotFound(err) {
		t.Errorf("the refused job b: %v, want not found", err)
	}
	p.submit(spec.Job{ID: "b", Tasks: []spec.Task{{Name: "t", Run: "true"}}})

	// What was acknowledged is durable.
	p.restart()
	if tk := p.task("a", "t1"); tk.State != "succeeded" {
		t.Errorf("t1 after a restart is %s, want succeeded (its report was acknowledged)", tk.State)
	}
	p.job("b")
}

func TestRestartOnAFullDiskWaitsForReturningWorkersPastTheOutage(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "a", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	a, _ := attemptOf(p.leaseUntil("w1", "t", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments, "t")

	p.startFull = true
	p.restart()
	// The first write after the restart finds the disk full: a
	// submission, held until it can be stored.
	held := make(chan error, 1)
	go func() {
		_, err := p.c.Submit(p.ctx(), spec.Job{ID: "b", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
		held <- err
	}()
	waitFor(t, "the restarted controller to notice the full disk", func() bool { return p.c.StoreHealth().Degraded })
	if err := p.c.Ping(p.ctx()); !unavailable(err) {
		t.Errorf("Ping (readiness) on a full disk: %v; want store.ErrUnavailable", err)
	}
	// w1 cannot register while nothing can be stored.
	reg := api.Register{Name: "w1", Resources: spec.Resources{CPU: 4000, Memory: 8192}, Slots: 1, Running: []api.Attempt{a}}
	if _, err := p.c.Register(p.ctx(), reg); !unavailable(err) {
		t.Fatalf("register on a full disk: %v; want store.ErrUnavailable", err)
	}
	p.clock.addHeld(time.Minute) // twice the heartbeat timeout
	p.disk.Free()
	if err := <-held; err != nil {
		t.Fatalf("the held submission, once stored: %v", err)
	}
	waitFor(t, "the controller to take writes again", func() bool { return p.c.Ping(p.ctx()) == nil })
	time.Sleep(20 * time.Millisecond) // ticks
	if evs := p.events(EventWorkerLost); len(evs) > 0 {
		t.Fatalf("w1 was declared lost for the time it could not register: %+v", evs)
	}
	p.register("w1", 1, a)
	if tk := p.task("a", "t"); tk.State != "running" || tk.Attempt != a.Attempt {
		t.Errorf("t is %s at attempt %d, want still running attempt %d", tk.State, tk.Attempt, a.Attempt)
	}
}

func TestStopOnAFullDiskEndsCleanlyAndStoresNothingOfTheHeldRound(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "a", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	a, _ := attemptOf(p.leaseUntil("w1", "t", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments, "t")
	p.disk.Fill()
	held := make(chan error, 1)
	go func() { held <- p.report("w1", succeeded(a)) }()
	waitFor(t, "the controller to notice the full disk", func() bool { return p.c.StoreHealth().Degraded })

	p.stop()
	if p.runErr != nil {
		t.Errorf("Run on a stop while the disk was full: %v, want nil", p.runErr)
	}
	if err := <-held; !errors.Is(err, ErrStopped) {
		t.Errorf("the held report at the stop: %v, want ErrStopped (it was never acknowledged)", err)
	}
	p.open()
	if tk := p.task("a", "t"); tk.State != "running" {
		t.Errorf("t after the restart is %s, want running: the unacknowledged report was not stored", tk.State)
	}
}

// holdRound makes the disk full and sends a change whose round cannot be
// stored; it returns the change's answer, which comes once it is.
func holdRound(t *testing.T, p *plane, id string) <-chan error {
	t.Helper()
	p.disk.Fill()
	held := make(chan error, 1)
	go func() {
		_, err := p.c.Submit(p.ctx(), spec.Job{ID: id, Tasks: []spec.Task{{Name: "t", Run: "true"}}})
		held <- err
	}()
	waitFor(t, "the controller to notice the full disk", func() bool { return p.c.StoreHealth().Degraded })
	return held
}

func TestWorkerRegisteredInTheHeldRoundIsNotLostForTheOutage(t *testing.T) {
	p := newPlane(t)
	p.disk.Fill()
	registered := make(chan error, 1)
	go func() {
		_, err := p.c.Register(p.ctx(), api.Register{Name: "w1", Resources: spec.Resources{CPU: 4000, Memory: 8192}, Slots: 1})
		registered <- err
	}()
	waitFor(t, "the controller to notice the full disk", func() bool { return p.c.StoreHealth().Degraded })
	p.clock.addHeld(time.Minute) // twice the heartbeat timeout
	p.disk.Free()
	if err := <-registered; err != nil {
		t.Fatalf("the held registration, once stored: %v", err)
	}
	time.Sleep(20 * time.Millisecond) // ticks
	if evs := p.events(EventWorkerLost); len(evs) > 0 {
		t.Errorf("w1 was declared lost for the outage its registration waited out: %+v", evs)
	}
}

func TestLeaseOnAFullDiskKeepsUnconfirmedAttemptsForAfterTheOutage(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "a", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	none := []api.Attempt{}
	waitFor(t, "t to be handed to w1", func() bool {
		l, err := p.c.Lease(p.ctx(), "w1", 0, &none)
		return err == nil && len(l.Assignments) == 1
	})
	held := holdRound(t, p, "b")
	// w1 says it holds nothing: the answer carrying t never arrived. That
	// cannot be stored now; the lease is answered all the same.
	if _, err := p.c.Lease(p.ctx(), "w1", 0, &none); err != nil {
		t.Fatalf("lease on a full disk: %v", err)
	}
	p.disk.Free()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	// After the outage, the next lease request finds t still missing: it
	// is requeued and handed out again.
	var again api.Attempt
	waitFor(t, "t to be handed out again", func() bool {
		l, err := p.c.Lease(p.ctx(), "w1", 0, &none)
		if err != nil {
			t.Fatal(err)
		}
		var ok bool
		again, ok = attemptOf(l.Assignments, "t")
		return ok
	})
	if again.Attempt != 2 {
		t.Errorf("t came back as attempt %d, want 2", again.Attempt)
	}
}
