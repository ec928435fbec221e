package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/model"
)

func TestHeldJobStartsNothingAndKeepsItsPlace(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").add(),
		newJob("first").task("a").submit(),
		newJob("second").task("a").submit(),
		newJob("third").task("a").submit())
	mustApply(t, e, HoldJob{Job: "first", By: "alice"})
	d := e.Cycle(t0)
	if got := startsOf(d); !same(got, []string{"second/a@w1"}) {
		t.Fatalf("with first held, started %v, want second/a@w1", got)
	}
	p := onlyPending(t, d, "first")
	if p.Reason.Code != model.ReasonHeld || !strings.Contains(p.Reason.Message, "held by alice") {
		t.Fatalf("pending reason of the held job = %+v, want held by alice", p.Reason)
	}
	if r, ok := e.TaskReason("first", "a"); !ok || r != p.Reason {
		t.Fatalf("TaskReason = %+v %v", r, ok)
	}
	if got := e.HeldBy("first"); got != "alice" {
		t.Fatalf("HeldBy = %q", got)
	}
	mustApply(t, e, HoldJob{Job: "first", By: "ops"}) // another holder takes it over
	if got := e.HeldBy("first"); got != "ops" {
		t.Fatalf("HeldBy after a second hold = %q", got)
	}
	mustApply(t, e, ReleaseJob{Job: "first"})
	mustApply(t, e, ReleaseJob{Job: "first"}) // releasing a released job changes nothing
	mustApply(t, e, finishOK("second", "a"))
	if got := startsOf(e.Cycle(t0.Add(time.Minute))); !same(got, []string{"first/a@w1"}) {
		t.Fatalf("after release, started %v: first should start before third, in its old place", got)
	}
}

func TestHoldRefusesUnknownOrEndedJobsAndAnonymousHolds(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").add(), newJob("j").task("a").submit())
	mustApply(t, e, CancelJob{Job: "j", At: t0})
	cases := []struct {
		name string
		ev   Event
		want error
	}{
		{"unknown job", HoldJob{Job: "nope", By: "alice"}, ErrUnknownJob},
		{"ended job", HoldJob{Job: "j", By: "alice"}, ErrUnknownJob},
		{"release of an unknown job", ReleaseJob{Job: "nope"}, ErrUnknownJob},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.Apply(tc.ev); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	e2 := engineWith(t, Config{}, newJob("k").task("a").submit())
	if err := e2.Apply(HoldJob{Job: "k"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a hold without a holder: err = %v, want ErrInvalid", err)
	}
}

func TestHeldJobRunningTasksGoOn(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").add(), newWorker("w2").add(),
		newJob("j").task("a").task("b").task("c").submit())
	if got := startsOf(e.Cycle(t0)); !same(got, []string{"j/a@w1", "j/b@w2"}) {
		t.Fatalf("started %v", got)
	}
	mustApply(t, e, HoldJob{Job: "j", By: "alice"})
	mustApply(t, e, finishOK("j", "a"))
	if got := startsOf(e.Cycle(t0.Add(time.Minute))); len(got) != 0 {
		t.Fatalf("a held job started %v", got)
	}
	if s := stateOf(t, e, "j", "b"); s != model.TaskRunning {
		t.Fatalf("the held job's running task is %s", s)
	}
}

// A held urgent job asks for no slot: under the priority policy it does not
// make the policy preempt a running task for it.
func TestHeldUrgentJobPreemptsNothing(t *testing.T) {
	cfg := Config{Queues: []QueueConfig{{Name: "default", Policy: policy.Config{Kind: "priority", Settings: &priority.Config{PreemptablePercent: 100}}}}}
	e := engineWith(t, cfg, newWorker("w1").add(), newJob("low").prio(1).task("a").submit())
	if got := startsOf(e.Cycle(t0)); !same(got, []string{"low/a@w1"}) {
		t.Fatalf("started %v", got)
	}
	urgent := newJob("urgent").prio(9).task("a")
	urgent.j.Urgent = true
	mustApply(t, e, urgent.submit())
	mustApply(t, e, HoldJob{Job: "urgent", By: "alice"})
	d := e.Cycle(t0.Add(time.Minute))
	if len(d.Stops) != 0 || len(d.Starts) != 0 {
		t.Fatalf("a held urgent job: stops %+v starts %v", d.Stops, startsOf(d))
	}
	mustApply(t, e, ReleaseJob{Job: "urgent"})
	d = e.Cycle(t0.Add(2 * time.Minute))
	if len(d.Stops) != 1 || d.Stops[0].Job != "low" {
		t.Fatalf("after release the urgent job should preempt low: stops %+v", d.Stops)
	}
}

func TestHeldEndpointJobIsNotAdmitted(t *testing.T) {
	// det: 1 instance × 5 = 5: one job of load 5 at a time.
	e := engineWith(t, admissionCfg(instanceEP("det", 1, 5)), workers(4)...)
	mustApply(t, e, newJob("a").endpoint("det", "", 5).task("x").submit())
	mustApply(t, e, newJob("b").endpoint("det", "", 5).task("x").submit())
	mustApply(t, e, HoldJob{Job: "a", By: "alice"})
	d := e.Cycle(t0)
	if !same(d.Admitted, []string{"b"}) || !same(startsOf(d), []string{"b/x@w00"}) {
		t.Fatalf("with a held: admitted %v, starts %v", d.Admitted, startsOf(d))
	}
	if p := onlyPending(t, d, "a"); p.Reason.Code != model.ReasonHeld {
		t.Fatalf("held endpoint job waits with %+v", p.Reason)
	}
	mustApply(t, e, ReleaseJob{Job: "a"})
	mustApply(t, e, finishOK("b", "x"))
	d = e.Cycle(t0.Add(time.Minute))
	if !same(d.Admitted, []string{"a"}) || !same(startsOf(d), []string{"a/x@w00"}) {
		t.Fatalf("after release: admitted %v, starts %v", d.Admitted, startsOf(d))
	}
}

func TestExplainSaysWhoHoldsTheJob(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").add(), newJob("j").task("a").submit())
	mustApply(t, e, HoldJob{Job: "j", By: "alice"})
	e.Cycle(t0)
	x, ok := e.Explain("j")
	if !ok || len(x.Pending) != 1 || x.Pending[0].Reason.Code != model.ReasonHeld {
		t.Fatalf("explain pending %+v", x.Pending)
	}
	found := false
	for _, h := range x.Help {
		found = found || (h.Kind == "held" && strings.Contains(h.Message, "held by alice") && strings.Contains(h.Message, "allot release j"))
	}
	if !found {
		t.Fatalf("help %+v names no release", x.Help)
	}
	if est := EstimateStart(e, "j", t0, WhatIf{}); est.Known || !strings.Contains(est.Note, "held by alice") {
		t.Fatalf("estimate of a held job: %+v", est)
	}
}

func TestSetJobResourcesPlacesTheWaitingJobByItsNewRequest(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("small").cpu(2000).add(),
		newJob("big").task("a").res(cpus(4)).task("b").res(cpus(4)).submit(),
		newJob("after").task("a").res(cpus(4)).submit())
	d := e.Cycle(t0)
	if len(d.Starts) != 0 || onlyPending(t, d, "big").Reason.Code != model.ReasonUnschedulable {
		t.Fatalf("a 4-CPU job on a 2-CPU fleet: starts %v, pending %+v", startsOf(d), d.Pending)
	}
	mustApply(t, e, SetJobResources{Job: "big", Resources: []model.Resources{cpus(2), cpus(1)}})
	if got := startsOf(e.Cycle(t0.Add(time.Minute))); !same(got, []string{"big/a@small"}) {
		t.Fatalf("after the job asks for 2 CPUs, started %v", got)
	}
	cases := []struct {
		name string
		ev   SetJobResources
		want error
	}{
		{"a job with a running task", SetJobResources{Job: "big", Resources: []model.Resources{cpus(1), cpus(1)}}, ErrInvalid},
		{"a request per task", SetJobResources{Job: "after", Resources: []model.Resources{cpus(1), cpus(1)}}, ErrInvalid},
		{"an unknown job", SetJobResources{Job: "nope", Resources: []model.Resources{cpus(1)}}, ErrUnknownJob},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.Apply(tc.ev); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}
