package control

import (
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

func (p *plane) registerPrefetch(name string, slots, prefetch int, running ...api.Attempt) {
	p.t.Helper()
	reg := api.Register{Name: name, Resources: spec.Resources{CPU: 4000, Memory: 8192}, Slots: slots,
		Prefetch: prefetch, Running: running}
	if _, err := p.c.Register(p.ctx(), reg); err != nil {
		p.t.Fatalf("register %s: %v", name, err)
	}
}

// startedOnce checks that each task started once, and only the tasks named.
func (p *plane) startedOnce(tasks ...string) {
	p.t.Helper()
	var got []string
	for _, e := range p.events(EventTaskStarted) {
		got = append(got, e.Task)
	}
	sort.Strings(got)
	sort.Strings(tasks)
	if len(got) != len(tasks) {
		p.t.Fatalf("task_started for %v, want once each for %v", got, tasks)
	}
	for i := range got {
		if got[i] != tasks[i] {
			p.t.Fatalf("task_started for %v, want once each for %v", got, tasks)
		}
	}
}

// A worker that prefetches gets its slots' tasks and as many more, each
// started once and durably before it is handed out; the next comes when a
// report frees room.
func TestPrefetchHandsOutTasksBeyondTheSlotsOnce(t *testing.T) {
	p := newPlane(t)
	p.registerPrefetch("w1", 2, 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "a", Run: "true"}, {Name: "b", Run: "true"}, {Name: "c", Run: "true"}, {Name: "d", Run: "true"}}})
	first := p.leaseHolding("w1").Assignments
	if len(first) != 3 {
		t.Fatalf("first lease: %d assignments, want 3 (2 slots and 1 prefetched)", len(first))
	}
	held := []api.Attempt{first[0].Attempt, first[1].Attempt, first[2].Attempt}
	for _, a := range held {
		if tk := p.task("j", a.Task); tk.State != "running" || tk.Attempt != a.Attempt {
			t.Errorf("%s is %s at attempt %d, want running at %d", a.Task, tk.State, tk.Attempt, a.Attempt)
		}
	}
	if w := p.worker("w1"); w.Slots != 2 || w.Prefetch != 1 || w.Running != 3 {
		t.Errorf("worker shows %d slots, prefetch %d, %d running; want 2, 1, 3", w.Slots, w.Prefetch, w.Running)
	}
	if l := p.leaseHolding("w1", held...); len(l.Assignments) != 0 {
		t.Fatalf("a second lease with nothing freed handed out %+v", l.Assignments)
	}
	if err := p.report("w1", succeeded(held[0])); err != nil {
		t.Fatal(err)
	}
	last := p.waitAssignment("w1", "d", held[1:]...)
	if err := p.report("w1", succeeded(held[1]), succeeded(held[2]), succeeded(last)); err != nil {
		t.Fatal(err)
	}
	if j := p.job("j"); j.State != "succeeded" {
		t.Errorf("job %s, want succeeded", j.State)
	}
	p.startedOnce("a", "b", "c", "d")
	if rq := p.events(EventTaskRequeued); len(rq) != 0 {
		t.Errorf("requeued %+v, want none", rq)
	}
}

// A server restart while a worker holds a prefetched task that has not
// started on it yet: the worker lists it at registration, the server keeps
// it, and hands it to nobody else; it ends once, from its report.
func TestPrefetchedTaskSurvivesAServerRestart(t *testing.T) {
	p := newPlane(t)
	p.registerPrefetch("w1", 1, 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "a", Run: "true"}, {Name: "b", Run: "true"}, {Name: "c", Run: "true"}}})
	first := p.leaseHolding("w1").Assignments
	if len(first) != 2 {
		t.Fatalf("first lease: %d assignments, want 2 (1 slot and 1 prefetched)", len(first))
	}
	held := []api.Attempt{first[0].Attempt, first[1].Attempt}

	p.restart()
	if _, err := p.c.Lease(p.ctx(), "w1", 0, &held); !isNotFound(err) {
		t.Fatalf("lease after the restart: %v, want not found", err)
	}
	p.registerPrefetch("w1", 1, 1, held...)
	if l := p.leaseHolding("w1", held...); len(l.Assignments)+len(l.Stops) != 0 {
		t.Fatalf("after registering again with both, the lease carried %+v", l)
	}
	for _, a := range held {
		if tk := p.task("j", a.Task); tk.State != "running" || tk.Attempt != a.Attempt {
			t.Errorf("%s is %s at attempt %d, want still running at %d", a.Task, tk.State, tk.Attempt, a.Attempt)
		}
	}
	if err := p.report("w1", succeeded(held[0]), succeeded(held[1])); err != nil {
		t.Fatal(err)
	}
	last := p.waitAssignment("w1", "c")
	if err := p.report("w1", succeeded(last)); err != nil {
		t.Fatal(err)
	}
	if j := p.job("j"); j.State != "succeeded" {
		t.Errorf("job %s, want succeeded", j.State)
	}
	p.startedOnce("a", "b", "c")
	if n := len(p.events(EventTaskSucceeded)); n != 3 {
		t.Errorf("%d task_succeeded events, want 3", n)
	}
}

func TestPrefetchBeyondTheSlotsIsRefused(t *testing.T) {
	p := newPlane(t)
	for _, n := range []int{-1, 3} {
		_, err := p.c.Register(p.ctx(), api.Register{Name: "w1", Resources: spec.Resources{CPU: 4000, Memory: 8192}, Slots: 2, Prefetch: n})
		var fe model.FieldErrors
		if !errors.As(err, &fe) || fe[0].Path != "prefetch" {
			t.Errorf("prefetch %d: %v, want a field error on prefetch", n, err)
		}
	}
}

// The worker's own report frees a slot: an open long poll is answered with
// the next task, without a new lease request.
func TestOpenLeaseWakesWhenTheWorkersReportFreesASlot(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "a", Run: "true"}, {Name: "b", Run: "true"}}})
	first := p.leaseUntil("w1", "the first task", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0].Attempt
	type answer struct {
		l   api.Lease
		err error
	}
	got := make(chan answer, 1)
	holds := []api.Attempt{first}
	go func() {
		l, err := p.c.Lease(p.ctx(), "w1", time.Minute, &holds)
		got <- answer{l, err}
	}()
	time.Sleep(20 * time.Millisecond) // the poll is open (it would answer anyway)
	if err := p.report("w1", succeeded(first)); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-got:
		if a.err != nil || len(a.l.Assignments) != 1 || a.l.Assignments[0].Task == first.Task {
			t.Fatalf("the open poll answered %+v, %v; want the other task", a.l, a.err)
		}
	case <-time.After(testTimeout):
		t.Fatal("the open poll was not answered after the report freed the slot")
	}
}
