package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/whatif"
)

// batchSpec is a job whose stage "infer" expands into n tasks sharing a
// model: the server merges them (placement.mergeMax defaults to 4).
func batchSpec(id string, n int) spec.Job {
	return spec.Job{ID: id, Tasks: []spec.Task{{Name: "infer", Count: n, Model: "bert", Run: "true"}}}
}

// leaseBatch waits for the one lease entry carrying a merged batch.
func (p *plane) leaseBatch(worker string) api.Assignment {
	p.t.Helper()
	l := p.leaseUntil(worker, "a merged batch", func(l api.Lease) bool {
		return slices.ContainsFunc(l.Assignments, func(a api.Assignment) bool { return len(a.Batch) > 0 })
	})
	for _, a := range l.Assignments {
		if len(a.Batch) > 0 {
			return a
		}
	}
	return api.Assignment{}
}

func batchTasks(a api.Assignment) []string {
	var out []string
	for _, m := range a.Batch {
		out = append(out, m.Task)
	}
	return out
}

func member(a api.Assignment, task string) api.Attempt {
	for _, m := range a.Batch {
		if m.Task == task {
			return m.Attempt
		}
	}
	return api.Attempt{}
}

func TestMergedBatchIsOneLeaseEntryInOneSlot(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 2)
	p.submit(batchSpec("j", 3))
	p.submit(spec.Job{ID: "solo", Tasks: []spec.Task{{Name: "s", Run: "true", Model: "bert"}}})
	// Two slots: the batch takes one, the other job the other.
	l := p.leaseUntil("w1", "the batch and the solo task", func(l api.Lease) bool { return len(l.Assignments) == 2 })
	var b api.Assignment
	for _, a := range l.Assignments {
		if a.Job == "j" {
			b = a
		} else if len(a.Batch) > 0 {
			t.Errorf("the solo task came as a batch: %+v", a)
		}
	}
	if got := batchTasks(b); !slices.Equal(got, []string{"infer-0", "infer-1", "infer-2"}) {
		t.Fatalf("batch %v, want infer-0..2 in order", got)
	}
	if b.Attempt != b.Batch[0].Attempt || b.Run != batchRefusal || len(b.Command) != 0 {
		t.Errorf("the batch entry %+v: its attempt must be the head's and its run the refusal", b.Attempt)
	}
	for _, m := range b.Batch {
		if m.Run != "true" || m.Attempt.Attempt != 1 || len(m.Batch) != 0 {
			t.Errorf("member %+v", m)
		}
	}
	if tk := p.task("j", "infer-1"); tk.State != "running" || tk.Worker != "w1" || tk.Reason == nil ||
		tk.Reason.Code != reasonMerged || !strings.Contains(tk.Reason.Message, `"infer-0"`) {
		t.Errorf("a running member: %+v", tk)
	}
	var batchStarts int
	for _, e := range p.events(EventTaskStarted) {
		if bytes.Contains(e.Data, []byte(`"batch":"infer-0"`)) {
			batchStarts++
			if !json.Valid(e.Data) {
				t.Errorf("task_started data %s is not JSON", e.Data)
			}
		}
	}
	if batchStarts != 3 {
		t.Errorf("%d task_started events name the batch, want 3", batchStarts)
	}

	// The agent reports each member as it ends, the head last.
	if err := p.report("w1", succeeded(member(b, "infer-1")), succeeded(member(b, "infer-2")), succeeded(b.Attempt)); err != nil {
		t.Fatal(err)
	}
	if j := p.job("j"); j.State != "succeeded" || j.Counts["succeeded"] != 3 {
		t.Errorf("job %s %v, want succeeded with 3 tasks", j.State, j.Counts)
	}
	if n := len(p.events(EventTaskSucceeded)); n != 3 {
		t.Errorf("%d task_succeeded events, want 3 (one per member, each its own)", n)
	}
}

func TestMergedBatchFailureFailsTheMembersNotRunNamingTheHead(t *testing.T) {
	tests := []struct {
		name    string
		reports func(b api.Assignment) []api.Report // as the agent sends them
		want    map[string]string                   // task -> state:reason
		message string                              // in infer-2's reason
	}{
		{
			name: "the head fails",
			reports: func(b api.Assignment) []api.Report {
				return []api.Report{
					{Attempt: b.Attempt, ExitCode: 1},
					{Attempt: member(b, "infer-1"), ExitCode: -1, Error: "not run"},
					{Attempt: member(b, "infer-2"), ExitCode: -1, Error: "not run"},
				}
			},
			want:    map[string]string{"infer-0": "failed:failed", "infer-1": "failed:batch_failure", "infer-2": "failed:batch_failure"},
			message: `merged batch "infer-0" failed: exit code 1`,
		},
		{
			name: "a member fails",
			reports: func(b api.Assignment) []api.Report {
				return []api.Report{
					{Attempt: member(b, "infer-1"), ExitCode: 2},
					{Attempt: b.Attempt, Error: `task "infer-1" of the batch failed: exit code 2`},
					{Attempt: member(b, "infer-2"), ExitCode: -1, Error: "not run"},
				}
			},
			want:    map[string]string{"infer-0": "failed:failed", "infer-1": "failed:failed", "infer-2": "failed:batch_failure"},
			message: `merged batch "infer-0" failed: task "infer-1" of the batch failed: exit code 2`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlane(t)
			p.register("w1", 1)
			p.submit(batchSpec("j", 3))
			b := p.leaseBatch("w1")
			if err := p.report("w1", tc.reports(b)...); err != nil {
				t.Fatal(err)
			}
			j := p.job("j")
			if j.State != "failed" {
				t.Errorf("job %s, want failed", j.State)
			}
			for _, tk := range j.Tasks {
				got := tk.State + ":"
				if tk.Reason != nil {
					got += tk.Reason.Code
				}
				if got != tc.want[tk.Name] {
					t.Errorf("%s is %s, want %s", tk.Name, got, tc.want[tk.Name])
				}
				if tk.Fails != 1 {
					t.Errorf("%s counts %d failures, want 1", tk.Name, tk.Fails)
				}
			}
			if r := p.task("j", "infer-2").Reason; r == nil || !strings.Contains(r.Message, tc.message) {
				t.Errorf("infer-2's reason %+v lacks %q", r, tc.message)
			}
			var named bool
			for _, e := range p.events(EventTaskFailed) {
				if e.Task == "infer-2" {
					named = e.Reason == model.ReasonBatchFailure && string(e.Data) == `{"parent":"infer-0"}` &&
						strings.Contains(e.Message, `"infer-0"`)
				}
			}
			if !named {
				t.Errorf("no task_failed event of infer-2 with reason batch_failure and parent infer-0: %+v", p.events(EventTaskFailed))
			}
		})
	}
}

func TestCancellingAMergedBatchStopsEveryMember(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(batchSpec("j", 3))
	b := p.leaseBatch("w1")
	if _, err := p.c.Cancel(p.ctx(), "j"); err != nil {
		t.Fatal(err)
	}
	l := p.leaseUntil("w1", "three stop orders", func(l api.Lease) bool { return len(l.Stops) == 3 })
	for _, m := range b.Batch {
		if !hasStop(l.Stops, m.Attempt) {
			t.Errorf("no stop order for %+v", m.Attempt)
		}
	}
	// What the agent reports afterwards changes nothing.
	if err := p.report("w1", api.Report{Attempt: b.Attempt, ExitCode: 143, Stopped: true}); err != nil {
		t.Fatal(err)
	}
	if j := p.job("j"); j.State != "cancelled" || j.Counts["cancelled"] != 3 {
		t.Errorf("job %s %v, want cancelled with 3 tasks", j.State, j.Counts)
	}
	if w := p.worker("w1"); w.Running != 0 {
		t.Errorf("w1 runs %d after the cancel", w.Running)
	}
}

// A batch whose lease answer was lost, or that a worker no longer runs when
// it registers again, is requeued whole and comes back as one batch.
func TestAMergedBatchTheWorkerLacksIsRequeuedWhole(t *testing.T) {
	for _, how := range []string{"lease answer lost", "registered again without it"} {
		t.Run(how, func(t *testing.T) {
			p := newPlane(t)
			p.register("w1", 1)
			p.submit(batchSpec("j", 3))
			b := p.waitBatchHolding("w1") // the worker confirms what it holds
			var again api.Assignment
			switch how {
			case "lease answer lost":
				// That answer never arrived: the next request holds nothing.
				again = p.waitBatchHolding("w1")
			default:
				p.register("w1", 1)
				again = p.leaseBatch("w1")
			}
			if got := batchTasks(again); !slices.Equal(got, batchTasks(b)) || again.Batch[0].Attempt.Attempt != 2 {
				t.Fatalf("came back as %v (head attempt %d), want the same batch at attempt 2", got, again.Batch[0].Attempt.Attempt)
			}
			for _, e := range p.events(EventTaskRequeued) {
				if e.Task != "infer-0" && !strings.Contains(e.Message, `merged batch "infer-0"`) {
					t.Errorf("member requeue %+v does not name the batch", e)
				}
				if e.Reason != model.ReasonLeaseLost {
					t.Errorf("requeue %+v: reason %q, want lease_lost (the worker is not lost)", e, e.Reason)
				}
			}
			if n := len(p.events(EventTaskRequeued)); n != 3 {
				t.Errorf("%d task_requeued events, want 3", n)
			}
		})
	}
}

// waitBatchHolding polls as the agent does, holding nothing, until a
// merged batch comes.
func (p *plane) waitBatchHolding(worker string) api.Assignment {
	p.t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		for _, a := range p.leaseHolding(worker).Assignments {
			if len(a.Batch) > 0 {
				return a
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: no merged batch came", worker)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLostWorkerRequeuesTheBatchToAnother(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(batchSpec("j", 3))
	b := p.leaseBatch("w1")
	p.register("w2", 1)
	p.clock.Add(20 * time.Second)
	if err := p.c.Heartbeat("w2"); err != nil {
		t.Fatal(err)
	}
	p.clock.Add(11 * time.Second)
	p.waitWorkerState("w1", workerLost)
	again := p.leaseBatch("w2")
	if !slices.Equal(batchTasks(again), batchTasks(b)) {
		t.Errorf("w2 got %v, want the batch %v", batchTasks(again), batchTasks(b))
	}
}

// A restarted server puts a running batch back together: the head and its
// members keep running on their worker in one slot, nothing is stopped or
// run again, and the head's report ends the members with it. A member whose
// head is not running there any more waits again and is stopped.
func TestRestartKeepsAMergedBatchWhole(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(batchSpec("j", 3))
	b := p.leaseBatch("w1")
	p.restart()
	p.register("w1", 1, attemptsOf(b)...)
	l := p.leaseHolding("w1")
	if len(l.Stops) != 0 || len(l.Assignments) != 0 {
		t.Fatalf("after the restart: %+v, want nothing stopped or handed again", l)
	}
	for _, name := range []string{"infer-0", "infer-1", "infer-2"} {
		if tk := p.task("j", name); tk.State != "running" || tk.Attempt != 1 || tk.Worker != "w1" {
			t.Errorf("%s is %s at attempt %d on %q, want running at 1 on w1", name, tk.State, tk.Attempt, tk.Worker)
		}
	}
	if w := p.worker("w1"); w.Running != 3 {
		t.Errorf("w1 runs %d, want the batch's 3 tasks", w.Running)
	}
	// The members report as they end, the head last: the job is done.
	if err := p.report("w1", succeeded(member(b, "infer-1")), succeeded(member(b, "infer-2")), succeeded(b.Attempt)); err != nil {
		t.Fatal(err)
	}
	if j := p.job("j"); j.State != "succeeded" {
		t.Errorf("job %s, want succeeded", j.State)
	}
	if n := len(p.events(EventTaskRequeued)); n != 0 {
		t.Errorf("%d task_requeued events, want none", n)
	}
}

func TestMergeMaxBoundsTheBatchAndOneTurnsItOff(t *testing.T) {
	for _, tc := range []struct {
		mergeMax *int
		want     []int // batch sizes of the first lease, 0 for a plain entry
	}{
		{nil, []int{4}},
		{ptr(2), []int{2}},
		{ptr(1), []int{0}},
	} {
		sched := spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}
		sched.Placement.MergeMax = tc.mergeMax
		p := newPlacementPlane(t, sched)
		p.register("w1", 1)
		p.submit(batchSpec("j", 5))
		l := p.leaseUntil("w1", "the first start", func(l api.Lease) bool { return len(l.Assignments) > 0 })
		var got []int
		for _, a := range l.Assignments {
			got = append(got, len(a.Batch))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("mergeMax %v: lease entries of sizes %v, want %v", tc.mergeMax, got, tc.want)
		}
	}
}

// An agent that predates batches runs the entry's top-level run: it fails,
// saying why, and never runs the head alone.
func TestTheBatchRefusalFailsWithItsReason(t *testing.T) {
	var stderr bytes.Buffer
	cmd := exec.Command("/bin/sh", "-c", batchRefusal)
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("the refusal ran with %v, want a non-zero exit", err)
	}
	if !strings.Contains(stderr.String(), "cannot run batches") {
		t.Errorf("the refusal says %q", stderr.String())
	}
}

// Explain's what-if copy holds a running merged batch as the batch it is:
// its members ride in the head's slot, not wait for slots of their own.
func TestExplainsCopyKeepsAMergedBatchWhole(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(batchSpec("j", 3))
	p.leaseBatch("w1")
	v, err := p.c.do(p.ctx(), func(t *txn) (any, error) { return p.c.replayState(t.now), nil })
	if err != nil {
		t.Fatal(err)
	}
	e, err := v.(*whatif.Copy).Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"infer-0", "infer-1", "infer-2"} {
		if st, on, _ := e.TaskState("j", name); st != model.TaskRunning || on != "w1" {
			t.Errorf("in the copy %s is %s on %q, want running on w1", name, st, on)
		}
	}
}
