package control

import (
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
)

// startedOn lists the workers of the task_started events of job, in order.
func (p *plane) startedOn(job string) []string {
	var out []string
	for _, e := range p.events(EventTaskStarted) {
		if e.Job == job {
			out = append(out, e.Worker)
		}
	}
	return out
}

// An agent that shuts down stops its attempt, reports it stopped, and then
// says it leaves. The stopped report already says the worker is going: the
// requeued task must not be handed back to it (a phantom start that counts
// an attempt), but to the other, free, worker.
func TestAStoppedReportKeepsTheLeavingWorkerFromTakingTheTaskBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		// notice is what the agent sends before stopping its tasks.
		notice func(p *plane)
	}{
		{"stopped report only", func(*plane) {}},
		{"stopping notice first", func(p *plane) {
			if err := p.c.Stopping(p.ctx(), "pb"); err != nil {
				p.t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlane(t)
			p.register("pb", 1)
			p.submit(spec.Job{ID: "ph1", Queue: "batch", Tasks: []spec.Task{{Name: "t", Run: "sleep 100"}}})
			a1 := p.leaseUntil("pb", "attempt 1", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0].Attempt
			p.register("pa", 1)
			p.clock.Add(time.Second)

			// The agent's shutdown, call by call: the notice (when it sends
			// one), the report of the attempt it stopped, the leaving.
			tc.notice(p)
			if err := p.report("pb", api.Report{Attempt: a1, ExitCode: -1, Stopped: true, Error: "the worker shut down"}); err != nil {
				t.Fatal(err)
			}
			p.clock.Add(time.Second) // a round places the requeued task
			if l := p.lease("pb"); len(l.Assignments) != 0 {
				t.Errorf("the leaving worker got %+v", l.Assignments)
			}
			if err := p.report("pb"); err != nil {
				t.Fatal(err)
			}
			if err := p.c.Leave(p.ctx(), "pb"); err != nil {
				t.Fatal(err)
			}
			a2 := p.leaseUntil("pa", "the requeued task", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0].Attempt
			if a2.Attempt != a1.Attempt+1 {
				t.Errorf("pa runs attempt %d, want %d: no attempt in between", a2.Attempt, a1.Attempt+1)
			}
			if got := p.startedOn("ph1"); len(got) != 2 || got[0] != "pb" || got[1] != "pa" {
				t.Errorf("task_started on %v, want [pb pa]", got)
			}
		})
	}
}

// A worker that said it stops and then registers again (its agent was
// restarted before it could leave) takes tasks again.
func TestAStoppingWorkerThatRegistersAgainTakesTasks(t *testing.T) {
	p := newPlane(t)
	p.register("pb", 1)
	if err := p.c.Stopping(p.ctx(), "pb"); err != nil {
		t.Fatal(err)
	}
	p.register("pb", 1)
	p.submit(spec.Job{ID: "j", Queue: "batch", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	p.leaseUntil("pb", "the task", func(l api.Lease) bool { return len(l.Assignments) == 1 })
}
