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
