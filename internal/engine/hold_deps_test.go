package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// Releasing a held endpoint job that still waits for another job does not
// admit it: it waits for its dependency as before the hold.
func TestReleasedEndpointJobStillWaitsForItsDependency(t *testing.T) {
	e := engineWith(t, admissionCfg(instanceEP("det", 1, 5)), workers(4)...)
	mustApply(t, e, newJob("p").task("x").submit())
	mustApply(t, e, HoldJob{Job: "p", By: "alice"})
	mustApply(t, e, newJob("c").endpoint("det", "", 5).task("x").after(model.AfterOK, "p").submit())
	mustApply(t, e, HoldJob{Job: "c", By: "alice"})
	mustApply(t, e, ReleaseJob{Job: "c"})
	d := e.Cycle(t0)
	if len(d.Admitted) != 0 || len(d.Starts) != 0 {
		t.Fatalf("c waits for p, which has not run: admitted %v, starts %v", d.Admitted, startsOf(d))
	}
	if p := onlyPending(t, d, "c"); p.Reason.Code != model.ReasonWaitingDependency {
		t.Fatalf("c waits with %+v", p.Reason)
	}
}

// A held endpoint job whose dependency is met stays out of admission until
// it is released: it takes no endpoint capacity while held.
func TestHeldEndpointJobIsNotAdmittedWhenItsDependencyIsMet(t *testing.T) {
	e := engineWith(t, admissionCfg(instanceEP("det", 1, 5)), workers(4)...)
	mustApply(t, e, newJob("p").task("x").submit())
	mustApply(t, e, newJob("c").endpoint("det", "", 5).task("x").after(model.AfterOK, "p").submit())
	mustApply(t, e, newJob("other").endpoint("det", "", 5).task("x").after(model.AfterOK, "p").submit())
	mustApply(t, e, HoldJob{Job: "c", By: "alice"})
	e.Cycle(t0)
	mustApply(t, e, finishOK("p", "x"))
	d := e.Cycle(t0.Add(time.Minute))
	if !same(startedJobs(d), []string{"other"}) {
		t.Fatalf("with c held, other should take the endpoint: admitted %v, starts %v", d.Admitted, startsOf(d))
	}
	if p := onlyPending(t, d, "c"); p.Reason.Code != model.ReasonHeld {
		t.Fatalf("c waits with %+v", p.Reason)
	}
	mustApply(t, e, ReleaseJob{Job: "c"})
	mustApply(t, e, finishOK("other", "x"))
	e.Cycle(t0.Add(3 * time.Minute))
	d = e.Cycle(t0.Add(4 * time.Minute))
	if e.jobs["c"].running != 1 {
		t.Fatalf("after release c should run: admitted %v, starts %v, pending %+v", d.Admitted, startsOf(d), d.Pending)
	}
}

// A held job that waits for another job counts as held in the pending
// summary, as in the list, and not as waiting for that job too.
func TestPendingSummaryCountsAHeldJobWaitingForAnotherAsHeld(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").add(),
		newJob("p").task("x").submit(),
		newJob("c").task("x").task("y").after(model.After, "p").submit())
	mustApply(t, e, HoldJob{Job: "p", By: "alice"})
	mustApply(t, e, HoldJob{Job: "c", By: "alice"})
	d := e.Cycle(t0)
	if got, want := e.PendingSummary(), summaryOf(d.Pending); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("PendingSummary %+v, the list counts %+v", got, want)
	}
}

// An endpoint job whose dependency is met joins admission with its waiting
// tasks counted: the pending summary gives them the admission stage's
// reason, as the list does.
func TestPendingSummaryOfAnEndpointJobWhoseDependencyIsMet(t *testing.T) {
	e := engineWith(t, admissionCfg(instanceEP("det", 2, 5)), workers(4)...)
	mustApply(t, e, newJob("a").endpoint("det", "", 5).task("x").submit())
	mustApply(t, e, newJob("b").endpoint("det", "", 5).task("x").submit())
	mustApply(t, e, newJob("p").task("x").submit())
	mustApply(t, e, newJob("c").endpoint("det", "", 5).task("x").task("y").after(model.After, "p").submit())
	for i := range 3 {
		d := e.Cycle(t0.Add(time.Duration(i) * time.Minute))
		if got, want := e.PendingSummary(), summaryOf(d.Pending); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("cycle %d: PendingSummary %+v, the list counts %+v", i, got, want)
		}
	}
}
