package control

import (
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

// leaseHolding asks for orders the way the agent does: telling the server
// what the worker holds.
func (p *plane) leaseHolding(worker string, holds ...api.Attempt) api.Lease {
	p.t.Helper()
	if holds == nil {
		holds = []api.Attempt{}
	}
	l, err := p.c.Lease(p.ctx(), worker, 0, &holds)
	if err != nil {
		p.t.Fatalf("lease %s: %v", worker, err)
	}
	p.remember(l)
	return l
}

// waitAssignment polls with leaseHolding until an assignment of task comes.
func (p *plane) waitAssignment(worker, task string, holds ...api.Attempt) api.Attempt {
	p.t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		if a, ok := attemptOf(p.leaseHolding(worker, holds...).Assignments, task); ok {
			return a
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: no assignment of %s", worker, task)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLeaseAnswerLostOnTheWayIsRequeued(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 2)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "lost", Run: "true"}, {Name: "held", Run: "true"}, {Name: "done", Run: "true"}}})
	// Submit answers once the starts are in the mailbox: one lease takes
	// both. That answer is cut on its way: the worker gets only one.
	first := p.leaseHolding("w1").Assignments
	if len(first) != 2 {
		t.Fatalf("first lease: %+v, want two assignments", first)
	}
	lost, held := first[0].Attempt, first[1].Attempt
	again := p.waitAssignment("w1", lost.Task, held)
	if again.Attempt != lost.Attempt+1 {
		t.Errorf("%s came back as attempt %d, want %d", lost.Task, again.Attempt, lost.Attempt+1)
	}
	if tk := p.task("j", lost.Task); tk.Fails != 0 {
		t.Errorf("%s counts %d failures; a lost answer is not its failure", lost.Task, tk.Fails)
	}
	if tk := p.task("j", held.Task); tk.State != "running" || tk.Attempt != held.Attempt {
		t.Errorf("%s, which the worker holds, is %s at attempt %d; want still running at %d", held.Task, tk.State, tk.Attempt, held.Attempt)
	}

	// An attempt that arrived, ran and was reported before the next lease
	// request is not in the worker's list, and is not requeued either.
	if err := p.report("w1", succeeded(again), succeeded(held)); err != nil {
		t.Fatal(err)
	}
	done := p.waitAssignment("w1", "done")
	if err := p.report("w1", succeeded(done)); err != nil {
		t.Fatal(err)
	}
	p.leaseHolding("w1")
	if j := p.job("j"); j.State != "succeeded" {
		t.Errorf("job %s, want succeeded", j.State)
	}
	if rq := p.events(EventTaskRequeued); len(rq) != 1 || rq[0].Reason != model.ReasonLeaseLost {
		t.Errorf("task_requeued events %+v, want 1 (the lost answer) with reason lease_lost", rq)
	}
}

func TestLeaseWithoutTheWorkersListChecksNothing(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	a := p.leaseUntil("w1", "the assignment", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0].Attempt
	p.lease("w1")
	time.Sleep(20 * time.Millisecond)
	if tk := p.task("j", "t"); tk.State != "running" || tk.Attempt != a.Attempt {
		t.Errorf("t is %s at attempt %d; an agent that sends no list must not have its tasks requeued", tk.State, tk.Attempt)
	}
}

// A report confirms delivery on its own: the next lease request, which no
// longer lists the attempt, has nothing to check in the loop.
func TestReportedAttemptsAwaitNoConfirmation(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	a := p.waitAssignment("w1", "t")
	if err := p.report("w1", succeeded(a)); err != nil {
		t.Fatal(err)
	}
	if lost := p.c.unconfirmed("w1", nil); len(lost) != 0 {
		t.Errorf("after its report, %+v still awaits confirmation", lost)
	}
}
