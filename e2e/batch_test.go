package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// Task merging in the server (docs/placement.md#task-merging): the tasks
// of one job stage that share a model go to one worker as one batch, which
// runs them one after another in one slot; a failing member fails the
// members not yet run, naming the batch's head.
func TestMergedBatchRunsOnOneWorkerAndAFailingMemberFailsTheRest(t *testing.T) {
	c := start(t)
	// Two free one-slot workers: unmerged, the stage would spread over both.
	c.worker("w1", 1)
	c.worker("w2", 1)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")

	j := c.submit(fmt.Sprintf(`
id: merged
tasks:
  - name: infer
    count: 3
    model: bert
    run: |
      echo "start $ALLOT_TASK in $ALLOT_BATCH" >> %s
      sleep 0.2
      echo "end $ALLOT_TASK" >> %[1]s
`, log))
	final := c.waitJob(j.ID, 30*time.Second)
	if final.State != "succeeded" {
		t.Fatalf("job %s: %+v", final.State, final.Tasks)
	}
	worker := taskByName(final, "infer-0").Worker
	for _, tk := range final.Tasks {
		if tk.Worker != worker || tk.Attempt != 1 {
			t.Errorf("%s ran on %s at attempt %d; the batch ran on %s at attempt 1", tk.Name, tk.Worker, tk.Attempt, worker)
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "start infer-0 in infer-0\nend infer-0\nstart infer-1 in infer-0\nend infer-1\nstart infer-2 in infer-0\nend infer-2\n"
	if string(b) != want {
		t.Errorf("the batch's tasks did not run one after another:\n%s", b)
	}
	started := 0
	for _, e := range c.events() {
		if e.Job == "merged" && e.Kind == "task_started" && dataOf(t, e).Batch == "infer-0" {
			started++
		}
	}
	if started != 3 {
		t.Errorf("%d task_started events name the batch infer-0, want 3", started)
	}

	j = c.submit(fmt.Sprintf(`
id: merged-fail
tasks:
  - name: infer
    count: 3
    model: bert
    run: |
      touch %s/ran-$ALLOT_TASK
      if [ "$ALLOT_TASK" = infer-1 ]; then echo broken >&2; exit 4; fi
`, dir))
	final = c.waitJob(j.ID, 30*time.Second)
	if final.State != "failed" {
		t.Fatalf("job %s, want failed: %+v", final.State, final.Tasks)
	}
	for _, tc := range []struct{ task, reason, message string }{
		{"infer-0", "failed", `task "infer-1" of the batch failed: exit code 4`},
		{"infer-1", "failed", "exit code 4"},
		{"infer-2", "batch_failure", `merged batch "infer-0" failed: task "infer-1" of the batch failed: exit code 4`},
	} {
		tk := taskByName(final, tc.task)
		if tk.State != "failed" || tk.Reason == nil || tk.Reason.Code != tc.reason || !strings.Contains(tk.Reason.Message, tc.message) {
			t.Errorf("%s: %s %+v, want failed with %s naming %q", tc.task, tk.State, tk.Reason, tc.reason, tc.message)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran-infer-2")); !os.IsNotExist(err) {
		t.Error("infer-2 ran after infer-1 failed the batch")
	}
	var parent bool
	for _, e := range c.events() {
		if e.Job == "merged-fail" && e.Task == "infer-2" && e.Kind == "task_failed" {
			parent = e.Reason == "batch_failure" && dataOf(t, e).Parent == "infer-0"
		}
	}
	if !parent {
		t.Error("no task_failed event of infer-2 with reason batch_failure and parent infer-0")
	}
}

// batchData is what task events say about a merged batch.
type batchData struct {
	Batch  string `json:"batch"`  // task_started: the batch's head
	Parent string `json:"parent"` // task ends: the head a member ended with
}

func dataOf(t *testing.T, e api.Event) batchData {
	t.Helper()
	var d batchData
	if len(e.Data) > 0 {
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("event %d data %s: %v", e.ID, e.Data, err)
		}
	}
	return d
}
