//go:build unix

package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
)

// batchOf is a merged batch's lease entry as the server builds it: the
// head's attempt, a refusal for older agents, the members in order.
func batchOf(members ...api.Assignment) api.Assignment {
	return api.Assignment{Attempt: members[0].Attempt, Run: "exit 99", Batch: members}
}

// deliveredOrder lists the tasks of the delivered reports among names, in
// the order the server received them.
func deliveredOrder(fs *fakeServer, names ...string) []string {
	_, _, delivered := fs.snapshot()
	var out []string
	for _, r := range delivered {
		if slices.Contains(names, r.Task) {
			out = append(out, r.Task)
		}
	}
	return out
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestABatchRunsItsMembersInOrderInOneSlotAndReportsTheHeadLast(t *testing.T) {
	fs, url := newFakeServer(t)
	start(t, testConfig(url)) // one slot
	log := filepath.Join(t.TempDir(), "log")
	env := map[string]string{"LOG": log}
	step := func(task string) api.Assignment {
		return assign("j", task, 1, `echo "start $ALLOT_TASK in $ALLOT_BATCH" >> $LOG; sleep 0.05; echo "end $ALLOT_TASK" >> $LOG; echo $ALLOT_TASK`, env)
	}
	b := batchOf(step("h"), step("m1"), step("m2"))
	solo := assign("k", "solo", 1, `echo "solo in [$ALLOT_BATCH]" >> $LOG`, env)
	fs.give(api.Lease{Assignments: []api.Assignment{b, solo}})
	waitFor(t, "every report", func() bool { return len(deliveredOrder(fs, "h", "m1", "m2", "solo")) == 4 })

	want := "start h in h\nend h\nstart m1 in h\nend m1\nstart m2 in h\nend m2\nsolo in []\n"
	if got := readLog(t, log); got != want {
		t.Errorf("the batch did not run alone, in order, in the one slot:\n%s\nwant:\n%s", got, want)
	}
	if got := deliveredOrder(fs, "h", "m1", "m2"); !slices.Equal(got, []string{"m1", "m2", "h"}) {
		t.Errorf("reports in order %v, want the members as they end and the head last", got)
	}
	for _, m := range b.Batch {
		r, _ := fs.report(m.Attempt)
		if r.ExitCode != 0 || r.Error != "" || r.Output != m.Task+"\n" {
			t.Errorf("report of %s: %+v", m.Task, r)
		}
	}
}

func TestAFailureInABatchLeavesTheRestUnrunAndReportsThemAfterTheHead(t *testing.T) {
	tests := []struct {
		name      string
		failing   string   // the member that exits 2
		order     []string // reports as delivered
		headError string   // in the head's report
	}{
		{"the head fails", "h", []string{"h", "m1", "m2"}, ""},
		{"a member fails", "m1", []string{"m1", "h", "m2"}, `task "m1" of the batch failed: exit code 2`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs, url := newFakeServer(t)
			start(t, testConfig(url))
			dir := t.TempDir()
			step := func(task string) api.Assignment {
				code := "0"
				if task == tc.failing {
					code = "2"
				}
				return assign("j", task, 1, "touch "+filepath.Join(dir, task)+"; exit "+code, nil)
			}
			b := batchOf(step("h"), step("m1"), step("m2"))
			fs.give(api.Lease{Assignments: []api.Assignment{b}})
			waitFor(t, "every report", func() bool { return len(deliveredOrder(fs, "h", "m1", "m2")) == 3 })
			if got := deliveredOrder(fs, "h", "m1", "m2"); !slices.Equal(got, tc.order) {
				t.Errorf("reports in order %v, want %v", got, tc.order)
			}
			if _, err := os.Stat(filepath.Join(dir, "m2")); !os.IsNotExist(err) {
				t.Error("m2 ran after the batch failed")
			}
			head, _ := fs.report(b.Attempt)
			if head.Error != tc.headError {
				t.Errorf("head report error %q, want %q", head.Error, tc.headError)
			}
			m2, _ := fs.report(b.Batch[2].Attempt)
			if m2.ExitCode != -1 || m2.Stopped || !strings.Contains(m2.Error, `not run: merged batch "h" failed: task "`+tc.failing+`" of the batch failed: exit code 2`) {
				t.Errorf("m2's report %+v", m2)
			}
		})
	}
}

func TestAStoppedBatchMemberIsSkippedAndTheBatchGoesOn(t *testing.T) {
	fs, url := newFakeServer(t)
	start(t, testConfig(url))
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	h := assign("j", "h", 1, "while [ ! -e "+gate+" ]; do sleep 0.01; done", nil)
	m1 := assign("j", "m1", 1, "touch "+filepath.Join(dir, "m1"), nil)
	m2 := assign("j", "m2", 1, "touch "+filepath.Join(dir, "m2"), nil)
	fs.give(api.Lease{Assignments: []api.Assignment{batchOf(h, m1, m2)}})
	// While the head runs, the worker holds the whole batch.
	waitFor(t, "a lease request holding the batch", func() bool {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		for _, holds := range fs.leaseHolds {
			if slices.Contains(holds, h.Attempt) && slices.Contains(holds, m1.Attempt) && slices.Contains(holds, m2.Attempt) {
				return true
			}
		}
		return false
	})
	fs.mu.Lock()
	asked := len(fs.leaseHolds)
	fs.mu.Unlock()
	fs.give(api.Lease{Stops: []api.StopOrder{{Attempt: m1.Attempt, Reason: model.Reason{Code: "preempted"}}}})
	// The member has not run: it keeps its place, and is reported stopped
	// when the batch reaches it. A later lease request means the order was
	// applied.
	waitFor(t, "the stop order to be taken", func() bool {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		return len(fs.leases) == 0 && len(fs.leaseHolds) > asked+1
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every report", func() bool { return len(deliveredOrder(fs, "h", "m1", "m2")) == 3 })
	if r, _ := fs.report(m1.Attempt); !r.Stopped || !strings.Contains(r.Error, "before it started") {
		t.Errorf("m1's report %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "m1")); !os.IsNotExist(err) {
		t.Error("the stopped member ran")
	}
	if r, _ := fs.report(m2.Attempt); r.ExitCode != 0 || r.Error != "" {
		t.Errorf("m2 after a stopped member: %+v", r)
	}
	if r, _ := fs.report(h.Attempt); r.ExitCode != 0 || r.Error != "" {
		t.Errorf("the head, whose batch only lost a stopped member: %+v", r)
	}
}
