package engine

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/model"
)

func (b *jobB) after(typ model.DependencyType, jobs ...string) *jobB {
	for _, j := range jobs {
		b.j.DependsOn = append(b.j.DependsOn, model.JobDependency{Job: j, Type: typ})
	}
	return b
}

// startedJobs lists the jobs of a cycle's starts, in order, once each.
func startedJobs(d *Decisions) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range d.Starts {
		if !seen[s.Job] {
			seen[s.Job] = true
			out = append(out, s.Job)
		}
	}
	return out
}

func TestJobDependencyIsMetByWhatTheOtherJobDid(t *testing.T) {
	cases := []struct {
		name string
		typ  model.DependencyType
		// parent is how job p ends: succeeded, failed or cancelled.
		parent model.TaskState
		// runs says whether c runs; else it fails, naming p.
		runs bool
	}{
		{"afterok after a success", model.AfterOK, model.TaskSucceeded, true},
		{"afterok after a failure", model.AfterOK, model.TaskFailed, false},
		{"afterok after a cancel", model.AfterOK, model.TaskCancelled, false},
		{"afternotok after a failure", model.AfterNotOK, model.TaskFailed, true},
		{"afternotok after a cancel", model.AfterNotOK, model.TaskCancelled, true},
		{"afternotok after a success", model.AfterNotOK, model.TaskSucceeded, false},
		{"afterany after a failure", model.AfterAny, model.TaskFailed, true},
		{"afterany after a success", model.AfterAny, model.TaskSucceeded, true},
		{"afterany after a cancel", model.AfterAny, model.TaskCancelled, true},
		{"the default type is afterok", "", model.TaskFailed, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newFIFO(t, 2)
			mustApply(t, e, newJob("p").task("a").submit())
			mustApply(t, e, newJob("c").task("x").after(tc.typ, "p").submit())
			if got := startedJobs(e.Cycle(t0)); !same(got, []string{"p"}) {
				t.Fatalf("first cycle started %v, want only p", got)
			}
			r, ok := e.TaskReason("c", "x")
			typ := tc.typ
			if typ == "" {
				typ = model.AfterOK
			}
			if !ok || r.Code != model.ReasonWaitingDependency || !strings.Contains(r.Message, `job "p" to `+typ.Wants()) {
				t.Fatalf("c waits with %+v, want waiting_dependency naming job p", r)
			}
			if got := e.JobWaitsFor("c"); len(got) != 1 || got[0].Job != "p" || got[0].Type != typ {
				t.Fatalf("JobWaitsFor(c) = %v", got)
			}
			switch tc.parent {
			case model.TaskSucceeded:
				mustApply(t, e, finishOK("p", "a"))
			case model.TaskFailed:
				mustApply(t, e, finishFail("p", "a"))
			case model.TaskCancelled:
				mustApply(t, e, CancelJob{Job: "p", At: t0})
			}
			d := e.Cycle(t0)
			if tc.runs {
				if got := startedJobs(d); !same(got, []string{"c"}) {
					t.Fatalf("after p %s, the cycle started %v, want c", tc.parent, got)
				}
				return
			}
			var end *TaskEnd
			for i := range d.Ended {
				if d.Ended[i].Job == "c" {
					end = &d.Ended[i]
				}
			}
			if end == nil || end.State != model.TaskFailed || end.Reason.Code != model.ReasonDependencyFailure ||
				!strings.Contains(end.Reason.Message, `job "p"`) {
				t.Fatalf("c's task ended %+v, want failed with dependency_failure naming job p", end)
			}
			if !jobDone(d, "c", model.TaskFailed) {
				t.Fatalf("jobs done %v, want c failed", d.JobsDone)
			}
		})
	}
}

func jobDone(d *Decisions, id string, s model.TaskState) bool {
	for _, je := range d.JobsDone {
		if je.Job == id && je.State == s {
			return true
		}
	}
	return false
}

func TestJobDependencyFailureCascadesThroughAChainOfJobs(t *testing.T) {
	e := newFIFO(t, 2)
	mustApply(t, e, newJob("p").task("a").submit())
	mustApply(t, e, newJob("c").task("x").task("y", "x").after(model.AfterOK, "p").submit())
	mustApply(t, e, newJob("g").task("z").after(model.AfterOK, "c").submit())
	// h runs only if c fails: the cascade meets it.
	mustApply(t, e, newJob("h").task("z").after(model.AfterNotOK, "c").submit())
	e.Cycle(t0)
	mustApply(t, e, finishFail("p", "a"))
	d := e.Cycle(t0)
	for _, want := range []struct{ job, names string }{{"c", `job "p" failed`}, {"g", `job "c" failed`}} {
		if !jobDone(d, want.job, model.TaskFailed) {
			t.Fatalf("jobs done %v, want %s failed", d.JobsDone, want.job)
		}
		for _, end := range d.Ended {
			if end.Job == want.job && !strings.Contains(end.Reason.Message, want.names) {
				t.Fatalf("%s/%s ended with %q, want it to say %s", end.Job, end.Task, end.Reason.Message, want.names)
			}
		}
	}
	if got := startedJobs(d); !same(got, []string{"h"}) {
		t.Fatalf("the cycle after the cascade started %v, want h", got)
	}
}

func TestAfterIsMetWhenTheOtherJobStarts(t *testing.T) {
	e := newFIFO(t, 1)
	mustApply(t, e, newJob("p").task("a").task("b", "a").submit())
	mustApply(t, e, newJob("c").task("x").after(model.After, "p").submit())
	if got := startedJobs(e.Cycle(t0)); !same(got, []string{"p"}) {
		t.Fatalf("first cycle started %v, want p", got)
	}
	// p started: c is ready, and waits for a slot, not for p.
	if r, _ := e.TaskReason("c", "x"); r.Code == model.ReasonWaitingDependency {
		t.Fatalf("c still waits for p after p started: %+v", r)
	}
	mustApply(t, e, finishOK("p", "a"))
	// The one worker is free: fifo takes c, submitted before p's b was ready.
	if got := taskNames(e.Cycle(t0)); len(got) != 1 {
		t.Fatalf("second cycle started %v, want one task", got)
	}
}

func TestAfterIsMetByAJobThatEndedWithoutStarting(t *testing.T) {
	e := newFIFO(t, 1)
	mustApply(t, e, newJob("p").task("a").submit())
	mustApply(t, e, newJob("c").task("x").after(model.After, "p").submit())
	mustApply(t, e, CancelJob{Job: "p", At: t0})
	if got := startedJobs(e.Cycle(t0)); !same(got, []string{"c"}) {
		t.Fatalf("started %v, want c", got)
	}
}

func TestJobDependencyOnAnUnknownJobIsRefused(t *testing.T) {
	e := newFIFO(t, 1)
	err := e.Apply(newJob("c").task("x").after(model.AfterOK, "nope").submit())
	if !errors.Is(err, ErrUnknownJob) || !strings.Contains(err.Error(), "dependsOn[0].job") {
		t.Fatalf("err = %v, want ErrUnknownJob at dependsOn[0].job", err)
	}
	if _, _, ok := e.TaskState("c", "x"); ok {
		t.Fatal("the refused job is held")
	}
	if err := e.Apply(newJob("c").task("x").after(model.AfterOK, "c").submit()); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a job depending on itself: err = %v, want ErrInvalid", err)
	}
}

func TestJobDependencyOnAForgottenJobTakesWhatTheCallerSays(t *testing.T) {
	for _, tc := range []struct {
		other OtherJob
		runs  bool
	}{
		{OtherJob{Job: "p", Started: true, Ended: model.TaskSucceeded}, true},
		{OtherJob{Job: "p", Started: true, Ended: model.TaskFailed}, false},
	} {
		e := newFIFO(t, 1)
		ev := newJob("c").task("x").after(model.AfterOK, "p").submit()
		ev.Others = []OtherJob{tc.other}
		mustApply(t, e, ev)
		d := e.Cycle(t0)
		if got := len(d.Starts) == 1; got != tc.runs {
			t.Fatalf("p %s: c started %v, want %v", tc.other.Ended, got, tc.runs)
		}
		if !tc.runs && !jobDone(d, "c", model.TaskFailed) {
			t.Fatalf("p failed: jobs done %v, want c failed", d.JobsDone)
		}
	}
}

// TestJobDependenciesSurviveARestart rebuilds an engine as the server does
// after a restart, from what a store holds: the jobs that have not ended,
// in submission order, with their tasks' states, and what it knows of the
// jobs that ended. The rebuilt engine waits for, and then starts, the same
// jobs as the one that ran on.
func TestJobDependenciesSurviveARestart(t *testing.T) {
	build := func() *Engine {
		e := newFIFO(t, 2)
		mustApply(t, e, newJob("done").task("a").submit())
		mustApply(t, e, newJob("p").task("a").task("b", "a").submit())
		mustApply(t, e, newJob("c").task("x").after(model.AfterOK, "p").after(model.AfterOK, "done").submit())
		mustApply(t, e, newJob("s").task("x").after(model.After, "p").submit())
		return e
	}
	live := build()
	live.Cycle(t0)
	mustApply(t, live, finishOK("done", "a"))
	mustApply(t, live, finishOK("p", "a"))
	live.Cycle(t0)
	mustApply(t, live, ForgetJob{Job: "done"})

	// The restart: "done" ended and is described by the store; p runs b.
	re := newFIFO(t, 2)
	mustApply(t, re, newJob("p").task("a").task("b", "a").submit())
	mustApply(t, re, RestoreTask{Job: "p", Task: "a", State: model.TaskSucceeded, Attempt: 1})
	mustApply(t, re, RestoreRunning{Job: "p", Task: "b", Worker: "w000", Attempt: 1})
	doneEnded := []OtherJob{{Job: "done", Started: true, Ended: model.TaskSucceeded}}
	c := newJob("c").task("x").after(model.AfterOK, "p").after(model.AfterOK, "done").submit()
	c.Others = doneEnded
	mustApply(t, re, c)
	s := newJob("s").task("x").after(model.After, "p").submit()
	mustApply(t, re, s)
	if err := re.Apply(SubmitJob{Job: newJob("s").task("x").after(model.After, "p").j}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("resubmitting s: %v", err)
	}

	for name, e := range map[string]*Engine{"live": live, "restarted": re} {
		if got := e.JobWaitsFor("c"); len(got) != 1 || got[0].Job != "p" {
			t.Fatalf("%s: c waits for %v, want p only", name, got)
		}
		if got := e.JobWaitsFor("s"); got != nil {
			t.Fatalf("%s: s waits for %v, want nothing (p started)", name, got)
		}
	}
	for name, e := range map[string]*Engine{"live": live, "restarted": re} {
		e.Cycle(t0)
		mustApply(t, e, finishOK("p", "b"))
		if got := startedJobs(e.Cycle(t0)); !same(got, []string{"c"}) {
			t.Fatalf("%s: after p succeeded the cycle started %v, want c", name, got)
		}
	}
}

func TestPendingSummaryCountsJobsWaitingForJobsAsWaitingDependency(t *testing.T) {
	e := newFIFO(t, 1)
	mustApply(t, e, newJob("p").task("a").submit())
	mustApply(t, e, newJob("c").task("x").task("y").after(model.AfterOK, "p").submit())
	e.Cycle(t0)
	want := PendingSummary{Jobs: 1, Tasks: 2, ByReason: []ReasonCount{{Code: model.ReasonWaitingDependency, Tasks: 2}}}
	if got := e.PendingSummary(); !reflect.DeepEqual(got, want) || !reflect.DeepEqual(got, summaryOf(e.Pending())) {
		t.Errorf("PendingSummary = %+v, want %+v (the list: %+v)", got, want, e.Pending())
	}
	mustApply(t, e, finishOK("p", "a"))
	e.Cycle(t0)
	if got := e.PendingSummary(); got.Tasks != 1 || !reflect.DeepEqual(got, summaryOf(e.Pending())) {
		t.Errorf("after p succeeded: %+v (the list: %+v)", got, e.Pending())
	}
}

func TestExplainSaysWhatTheJobsAJobWaitsForAreDoing(t *testing.T) {
	e := newFIFO(t, 1)
	mustApply(t, e, newJob("p").task("a").submit())
	mustApply(t, e, newJob("c").task("x").after(model.AfterAny, "p").submit())
	e.Cycle(t0)
	x, ok := e.Explain("c")
	if !ok {
		t.Fatal("no explanation")
	}
	var found bool
	for _, h := range x.Help {
		if h.Kind == "job_dependency" && strings.Contains(h.Message, "job p runs 1 task(s); job c waits for it to end (afterany)") {
			found = true
		}
	}
	if !found || len(x.Pending) != 1 || x.Pending[0].Reason.Code != model.ReasonWaitingDependency {
		t.Errorf("explanation %+v", x)
	}
}
