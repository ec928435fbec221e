package control

import (
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

// A job's dependencies hold its start only: a job that started keeps
// running across a restart even when a job it depended on runs again
// (requeued) and has not ended at the restart.
func TestAStartedJobIsNotHeldAgainByItsDependenciesAfterARestart(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 2)
	p.submit(spec.Job{ID: "parent", Tasks: []spec.Task{{Name: "t", Run: "false"}}})
	p.submit(spec.Job{ID: "child", DependsOn: []model.JobDependency{{Job: "parent", Type: model.AfterAny}},
		Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	pa, _ := attemptOf(p.leaseUntil("w1", "parent", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments, "t")
	if err := p.report("w1", api.Report{Attempt: pa, ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	ca, _ := attemptOf(p.leaseUntil("w1", "child", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments, "t")
	if ca.Job != "child" {
		t.Fatalf("leased %+v, want the child", ca)
	}
	if _, err := p.c.Requeue(p.ctx(), "parent", ""); err != nil {
		t.Fatal(err)
	}
	p.restart()
	if got := p.events(EventRowQuarantined); len(got) != 0 {
		t.Fatalf("quarantined at the restart: %+v", got)
	}
	j := p.job("child")
	if j.State != "running" || p.task("child", "t").State != "running" {
		t.Errorf("child after the restart: %s, task %s; want it running on", j.State, p.task("child", "t").State)
	}
	if len(j.DependsOn) != 1 || j.DependsOn[0].State != "met" {
		t.Errorf("child's dependencies %+v, want parent met", j.DependsOn)
	}
}
