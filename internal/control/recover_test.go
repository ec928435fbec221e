package control

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

func TestRestartKeepsStopsAndRequeuesWhatAReturningWorkerRuns(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 4)
	// "late" is written before the task it needs, so recovery must not
	// restore tasks in spec order alone.
	p.submit(spec.Job{ID: "dag", Tasks: []spec.Task{
		{Name: "late", Needs: []string{"first"}, Run: "true"},
		{Name: "first", Run: "true"},
		{Name: "kept", Run: "true"},
		{Name: "vanished", Run: "true"},
	}})
	l := p.leaseUntil("w1", "first, kept and vanished", func(l api.Lease) bool { return len(l.Assignments) == 3 })
	first, _ := attemptOf(l.Assignments, "first")
	kept, _ := attemptOf(l.Assignments, "kept")
	vanished, _ := attemptOf(l.Assignments, "vanished")
	done := succeeded(first)
	done.Result = json.RawMessage(`{"rows":42}`)
	if err := p.report("w1", done); err != nil {
		t.Fatal(err)
	}
	late, _ := attemptOf(p.leaseUntil("w1", "late", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments, "late")

	p.restart() // what was acknowledged is all there is

	if err := p.c.Heartbeat("w1"); !isNotFound(err) {
		t.Fatalf("heartbeat after a restart: %v, want not found (register again)", err)
	}
	// Until w1 says what it runs, it takes nothing new.
	p.submit(spec.Job{ID: "after", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	time.Sleep(20 * time.Millisecond)
	if tk := p.task("after", "t"); tk.State != "ready" {
		t.Errorf("a task submitted before the worker returned is %s, want ready", tk.State)
	}

	never := api.Attempt{Job: "dag", Task: "kept", Attempt: 9} // an attempt the server never gave out
	p.register("w1", 4, late, kept, never)                     // vanished is gone from the worker
	l = p.leaseUntil("w1", "the stop order, the requeued task and the new job", func(l api.Lease) bool {
		_, v := attemptOf(l.Assignments, "vanished")
		_, a := attemptOf(l.Assignments, "t")
		return hasStop(l.Stops, never) && v && a
	})
	if len(l.Stops) != 1 {
		t.Errorf("stops %+v, want only the unknown attempt", l.Stops)
	}
	vanished2, _ := attemptOf(l.Assignments, "vanished")
	after, _ := attemptOf(l.Assignments, "t")
	if vanished2.Attempt != vanished.Attempt+1 {
		t.Errorf("vanished restarted as attempt %d, want %d", vanished2.Attempt, vanished.Attempt+1)
	}
	if tk := p.task("dag", "vanished"); tk.Fails != 0 {
		t.Errorf("vanished counts %d failures; a worker that lost it is not its failure", tk.Fails)
	}
	if tk := p.task("dag", "first"); tk.State != "succeeded" || string(tk.Result) != `{"rows":42}` {
		t.Errorf("first after the restart: %s with result %s", tk.State, tk.Result)
	}

	// The stale first attempt of vanished reports late: ignored.
	for _, r := range []api.Report{succeeded(vanished), succeeded(late), succeeded(kept), succeeded(vanished2), succeeded(after), succeeded(late)} {
		if err := p.report("w1", r); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"dag", "after"} {
		if j := p.job(id); j.State != "succeeded" {
			t.Errorf("job %s is %s, want succeeded", id, j.State)
		}
	}
	perTask := map[string]int{}
	for _, e := range p.events(EventTaskSucceeded) {
		perTask[e.Job+"/"+e.Task]++
	}
	for _, k := range []string{"dag/late", "dag/first", "dag/kept", "dag/vanished", "after/t"} {
		if perTask[k] != 1 {
			t.Errorf("%s succeeded %d times in the event log, want once (all: %v)", k, perTask[k], perTask)
		}
	}
}

func TestWorkerThatDoesNotReturnAfterARestartIsLost(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	a1 := p.leaseUntil("w1", "the assignment", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0].Attempt
	if _, err := p.c.SetWorkerState(p.ctx(), "w1", model.WorkerDraining); err != nil {
		t.Fatal(err)
	}

	p.restart()
	p.register("w2", 1)
	time.Sleep(20 * time.Millisecond)
	if tk := p.task("j", "t"); tk.State != "running" || tk.Worker != "w1" {
		t.Fatalf("before the timeout the task is %s on %s, want still running on w1", tk.State, tk.Worker)
	}
	p.clock.Add(20 * time.Second)
	if err := p.c.Heartbeat("w2"); err != nil {
		t.Fatal(err)
	}
	p.clock.Add(11 * time.Second)
	p.waitWorkerState("w1", workerLost)
	a2, ok := attemptOf(p.leaseUntil("w2", "the requeued task", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments, "t")
	if !ok || a2.Attempt != a1.Attempt+1 {
		t.Errorf("w2 got %+v, want attempt %d of t", a2, a1.Attempt+1)
	}

	// Lost survives a restart; registering again brings the worker back
	// as new.
	p.restart()
	if got := p.worker("w1").State; got != workerLost {
		t.Errorf("w1 is %s after a restart, want still lost", got)
	}
	p.register("w1", 1)
	if got := p.worker("w1").State; got != "ready" {
		t.Errorf("w1 is %s after registering, want ready", got)
	}
}

func TestReturningWorkerComesBackInTheStateAnOperatorSet(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.restart()
	// Set while the server waits for w1 to come back.
	if _, err := p.c.SetWorkerState(p.ctx(), "w1", model.WorkerDraining); err != nil {
		t.Fatal(err)
	}
	p.register("w1", 1)
	if got := p.worker("w1").State; got != "draining" {
		t.Errorf("w1 is %s, want draining", got)
	}
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	time.Sleep(20 * time.Millisecond)
	if l := p.lease("w1"); len(l.Assignments) != 0 {
		t.Errorf("a draining worker got %+v", l.Assignments)
	}
}

// A start whose configuration lacks the queue of stored, unfinished jobs
// (a forgotten --config, a renamed queue) refuses to start, naming the
// queue, instead of failing those jobs for good: the jobs are still there,
// unchanged, when the server starts with the queue again.
func TestStartWithoutTheQueueOfStoredJobsIsRefusedAndLosesNothing(t *testing.T) {
	p := newPlane(t)
	p.submit(spec.Job{ID: "j1", Queue: "batch", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	p.stop()

	withQueue := p.cfg
	p.cfg = Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "other"}}}, HeartbeatTimeout: 30 * time.Second}
	st, err := sqlite.Open(p.path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := p.cfg
	cfg.Clock, cfg.Logger = p.clock.Now, slog.New(slog.DiscardHandler)
	_, err = New(context.Background(), cfg, st)
	st.Close()
	if err == nil || !strings.Contains(err.Error(), `"batch"`) {
		t.Fatalf("New without the queue = %v, want a refusal naming queue \"batch\"", err)
	}

	p.cfg = withQueue
	p.open()
	j, err := p.c.Job(p.ctx(), "j1")
	if err != nil || j.State != "pending" {
		t.Fatalf("job after a start with the queue again: %+v, %v; want it pending as it was", j, err)
	}
}

// Worker liveness does not depend on one replica's memory: a new leader
// (a controller rebuilt from the store, as at a promotion) gives every
// worker it recovers a fresh heartbeat timeout from its start. A worker
// silent for most of the timeout under the former leader is not declared
// lost at once; one that does not come back is declared lost after the
// timeout, and its task requeued.
func TestANewLeaderGivesRecoveredWorkersAFreshDeadline(t *testing.T) {
	p := newPlane(t) // heartbeat timeout 30 s
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	a1 := p.leaseUntil("w1", "the assignment", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0].Attempt
	p.register("w2", 1)

	// w1 goes silent; 25 s later the leader changes.
	p.clock.Add(25 * time.Second)
	if err := p.c.Heartbeat("w2"); err != nil {
		t.Fatal(err)
	}
	p.restart()
	p.register("w2", 1) // a live worker registers with the new leader

	// 35 s of silence in all, 10 s since the promotion: not lost yet.
	p.clock.Add(10 * time.Second)
	if err := p.c.Heartbeat("w2"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // rounds run
	if w := p.worker("w1"); w.State == workerLost {
		t.Fatal("w1 was declared lost 10 s after the promotion: its silence under the former leader counted")
	}
	if tk := p.task("j", "t"); tk.State != "running" || tk.Worker != "w1" {
		t.Fatalf("10 s after the promotion the task is %s on %s, want still running on w1", tk.State, tk.Worker)
	}

	// Past the timeout from the promotion: lost, the task requeued.
	p.clock.Add(21 * time.Second)
	if err := p.c.Heartbeat("w2"); err != nil {
		t.Fatal(err)
	}
	p.waitWorkerState("w1", workerLost)
	a2, ok := attemptOf(p.leaseUntil("w2", "the requeued task", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments, "t")
	if !ok || a2.Attempt != a1.Attempt+1 {
		t.Errorf("w2 got %+v, want attempt %d of t", a2, a1.Attempt+1)
	}
	if w := p.worker("w2"); w.State == workerLost {
		t.Error("w2, registered with the new leader, was declared lost")
	}
}
