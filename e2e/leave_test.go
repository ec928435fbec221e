package e2e

import (
	"syscall"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// A worker stopped cleanly (SIGTERM) tells the server it is gone: it is out
// of the fleet at once, so no task is handed to it while the server would
// otherwise wait for the heartbeat timeout (30 s) to declare it lost.
func TestAWorkerThatStopsLeavesTheFleetAtOnce(t *testing.T) {
	c := start(t)
	leaving := c.worker("leaving", 1)
	c.worker("staying", 1)
	state := func(name string) string {
		var ws []api.Worker
		c.getJSON("/v1/workers", &ws)
		for _, w := range ws {
			if w.Name == name {
				return w.State
			}
		}
		return ""
	}
	deadline := time.Now().Add(10 * time.Second)
	for state("leaving") != "ready" || state("staying") != "ready" {
		if time.Now().After(deadline) {
			t.Fatal("the workers never registered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := leaving.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := leaving.Wait(); err != nil {
		t.Fatalf("the worker did not stop cleanly: %v", err)
	}
	if got := state("leaving"); got == "ready" {
		t.Fatalf("a worker that stopped is still %q: tasks would be handed to it until the heartbeat timeout", got)
	}
	for i := range 4 {
		j := c.submit("tasks: [{name: t, run: 'true'}]\n")
		got := c.waitJob(j.ID, 10*time.Second)
		if got.State != "succeeded" || got.Tasks[0].Worker != "staying" {
			t.Fatalf("job %d: %s on %q, want succeeded on the worker that stayed", i, got.State, got.Tasks[0].Worker)
		}
	}
}

// The task of an attempt a stopping worker ends goes to another worker, not
// back to the one that stops: no phantom start, no attempt counted in
// between.
func TestTheTaskAStoppingWorkerEndsGoesToAnotherWorker(t *testing.T) {
	c := start(t)
	pb := c.worker("pb", 1)
	j := c.submit("id: ph1\ntasks: [{name: t, run: 'sleep 100'}]\n")
	deadline := time.Now().Add(10 * time.Second)
	for c.job(j.ID).Tasks[0].State != "running" {
		if time.Now().After(deadline) {
			t.Fatal("the task never started on pb")
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.worker("pa", 1)
	for {
		var ws []api.Worker
		c.getJSON("/v1/workers", &ws)
		if len(ws) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("pa never registered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := pb.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := pb.Wait(); err != nil {
		t.Fatalf("pb did not stop cleanly: %v", err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		tk := c.job(j.ID).Tasks[0]
		if tk.State == "running" && tk.Worker == "pa" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s on %q, want running on pa", tk.State, tk.Worker)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var evs []api.Event
	c.getJSON("/v1/events?job=ph1", &evs)
	var started []string
	for _, e := range evs {
		if e.Kind == "task_started" {
			started = append(started, e.Worker)
		}
	}
	if len(started) != 2 || started[0] != "pb" || started[1] != "pa" {
		t.Errorf("task_started on %v, want [pb pa]", started)
	}
}
