package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A gang of 4 on a worker with 3 free slots does not start until a fourth
// slot frees, and then all 4 start in one cycle.
func TestGangWaitsForAllItsSlotsThenStartsTogether(t *testing.T) {
	c := start(t)
	c.worker("w1", 4)
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	blocker := c.submit(fmt.Sprintf("id: blocker\ntasks: [{name: hold, run: 'while [ ! -f %s ]; do sleep 0.05; done'}]\n", release))
	deadline := time.Now().Add(15 * time.Second)
	for c.job(blocker.ID).Counts["running"] < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the blocker never started")
		}
		time.Sleep(50 * time.Millisecond)
	}
	g := c.submit(fmt.Sprintf(`
id: train
gang: true
tasks:
  - name: rank
    count: 4
    run: touch %s/$ALLOT_TASK
`, dir))
	if g.Spec == nil || !g.Spec.Gang {
		t.Fatalf("the API's job does not show the gang: %+v", g.Spec)
	}
	// Several cycles pass with 3 free slots: nothing of the gang starts.
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		j := c.job(g.ID)
		if j.Counts["running"] > 0 || j.Counts["succeeded"] > 0 {
			t.Fatalf("the gang started partly with 3 free slots: %+v", j.Counts)
		}
	}
	j := c.job(g.ID)
	for _, task := range j.Tasks {
		if task.Reason == nil || task.Reason.Code != "gang_waiting" || !strings.Contains(task.Reason.Message, "needs 4 slots at once; 3 free") {
			t.Fatalf("task %s waits for %+v, want the gang's reason", task.Name, task.Reason)
		}
	}
	out, err := c.cli("explain", g.ID)
	if err != nil || !strings.Contains(out, "gang of 4 needs 4 slots at once; 3 free") {
		t.Fatalf("allot explain: %v\n%s", err, out)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	final := c.waitJob(g.ID, 20*time.Second)
	if final.State != "succeeded" {
		t.Fatalf("the gang ended %s: %+v", final.State, final.Tasks)
	}
	var first *time.Time
	for _, task := range final.Tasks {
		if task.Attempt != 1 || task.Started == nil {
			t.Fatalf("task %s: attempt %d, started %v", task.Name, task.Attempt, task.Started)
		}
		if first == nil {
			first = task.Started
		} else if !task.Started.Equal(*first) {
			t.Fatalf("the gang's tasks started in different cycles: %s at %s, the first at %s", task.Name, task.Started, first)
		}
	}
	if got := c.waitJob(blocker.ID, 10*time.Second); got.State != "succeeded" {
		t.Fatalf("blocker: %s", got.State)
	}
}
