package engine

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/model"
)

// taskNames returns the task names of the starts, sorted.
func taskNames(d *Decisions) []string {
	out := []string{}
	for _, s := range d.Starts {
		out = append(out, s.Task)
	}
	sort.Strings(out)
	return out
}

func TestDAGTaskBecomesReadyOnlyWhenAllNeedsSucceeded(t *testing.T) {
	cases := []struct {
		name  string
		job   *jobB
		fails map[string]int // failed attempts before the task succeeds
		waves [][]string     // tasks started by each cycle
	}{
		{name: "chain", job: newJob("j").task("a").task("b", "a").task("c", "b"),
			waves: [][]string{{"a"}, {"b"}, {"c"}}},
		{name: "diamond", job: newJob("j").task("a").task("b", "a").task("c", "a").task("d", "b", "c"),
			waves: [][]string{{"a"}, {"b", "c"}, {"d"}}},
		{name: "independent roots start together", job: newJob("j").task("a").task("b").task("c"),
			waves: [][]string{{"a", "b", "c"}}},
		{name: "fan-in waits for the parent that is retried", job: newJob("j").task("a").task("b").attempts(2).task("c", "a", "b"),
			fails: map[string]int{"b": 1}, waves: [][]string{{"a", "b"}, {"b"}, {"c"}}},
		{name: "a need declared after its dependent", job: newJob("j").task("c", "a").task("a"),
			waves: [][]string{{"a"}, {"c"}}},
		{name: "only the ready branch moves", job: newJob("j").task("a").task("b").attempts(3).task("x", "a").task("y", "b"),
			fails: map[string]int{"b": 2}, waves: [][]string{{"a", "b"}, {"b", "x"}, {"b"}, {"y"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := engineWith(t, Config{})
			for _, n := range []string{"w1", "w2", "w3", "w4"} {
				mustApply(t, e, newWorker(n).add())
			}
			mustApply(t, e, tc.job.submit())
			fails := map[string]int{}
			for k, v := range tc.fails {
				fails[k] = v
			}
			started := map[string]bool{}
			for i, want := range tc.waves {
				d := e.Cycle(t0)
				if got := taskNames(d); !same(got, want) {
					t.Fatalf("cycle %d started %v, want %v", i+1, got, want)
				}
				for _, s := range d.Starts {
					started[s.Task] = true
				}
				// Tasks that never started wait on their dependencies.
				for _, ts := range tc.job.j.Tasks {
					if started[ts.Name] {
						continue
					}
					r, ok := e.TaskReason("j", ts.Name)
					if !ok || r.Code != model.ReasonWaitingDependency {
						t.Fatalf("cycle %d: reason of unstarted %s = %+v %v, want %s", i+1, ts.Name, r, ok, model.ReasonWaitingDependency)
					}
				}
				for _, s := range d.Starts {
					if fails[s.Task] > 0 {
						fails[s.Task]--
						mustApply(t, e, finishFail("j", s.Task))
					} else {
						mustApply(t, e, finishOK("j", s.Task))
					}
				}
			}
			d := e.Cycle(t0)
			if len(d.Starts) != 0 || !same(jobsDoneOf(d), []string{"j:succeeded"}) {
				t.Fatalf("after the last wave: starts %v, jobs done %v", startsOf(d), jobsDoneOf(d))
			}
		})
	}
}

func TestRetriesUpToMaxAttempts(t *testing.T) {
	cases := []struct {
		name        string
		maxAttempts int
		fails       int // failures before the task would succeed
		wantEnded   []string
		wantJob     string
	}{
		{name: "no budget means one attempt", maxAttempts: 0, fails: 1,
			wantEnded: []string{"j/a:failed:failed"}, wantJob: "j:failed"},
		{name: "failures below max are retried", maxAttempts: 3, fails: 2,
			wantEnded: []string{"j/a:ready:retry", "j/a:ready:retry"}, wantJob: "j:succeeded"},
		{name: "the failure at max fails the task", maxAttempts: 3, fails: 3,
			wantEnded: []string{"j/a:ready:retry", "j/a:ready:retry", "j/a:failed:failed"}, wantJob: "j:failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := engineWith(t, Config{}, newWorker("w1").add(), newJob("j").task("a").attempts(tc.maxAttempts).submit())
			var ended, done []string
			fails := tc.fails
			for attempt := 1; ; attempt++ {
				d := e.Cycle(t0)
				ended = append(ended, endedOf(d)...)
				done = append(done, jobsDoneOf(d)...)
				if len(d.Starts) == 0 {
					break
				}
				if attempt > tc.fails+1 {
					t.Fatalf("attempt %d started; the task should have ended", attempt)
				}
				if d.Starts[0].Attempt != attempt {
					t.Fatalf("start %+v, want attempt %d", d.Starts[0], attempt)
				}
				if fails > 0 {
					fails--
					mustApply(t, e, finishFail("j", "a"))
				} else {
					mustApply(t, e, finishOK("j", "a"))
				}
			}
			if !same(ended, tc.wantEnded) || !same(done, []string{tc.wantJob}) {
				t.Fatalf("ended %v jobs %v, want %v %v", ended, done, tc.wantEnded, tc.wantJob)
			}
		})
	}
}

func TestRetryMessageCountsAttempts(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").add(), newJob("j").task("a").attempts(2).submit())
	e.Cycle(t0)
	mustApply(t, e, finishFail("j", "a"))
	d := e.Cycle(t0)
	if len(d.Ended) != 1 || !strings.Contains(d.Ended[0].Reason.Message, "attempt 1 of 2") ||
		!strings.Contains(d.Ended[0].Reason.Message, "exit status 1") || d.Ended[0].Worker != "w1" {
		t.Fatalf("ended = %+v, want a retry naming attempt 1 of 2, the message and the worker", d.Ended)
	}
}

func TestFailureCascadesToEveryTransitiveDependent(t *testing.T) {
	// a → b → c, a → d; e → f is independent of a.
	spec := newJob("j").task("a").task("b", "a").task("c", "b").task("d", "a").task("e").task("f", "e")
	e := engineWith(t, Config{}, newWorker("w1").add(), newWorker("w2").add(), spec.submit())
	if got := taskNames(e.Cycle(t0)); !same(got, []string{"a", "e"}) {
		t.Fatalf("first cycle started %v", got)
	}
	mustApply(t, e, finishFail("j", "a"))
	d := e.Cycle(t0)
	wantEnded := []string{"j/a:failed:failed", "j/b:failed:dependency_failure", "j/c:failed:dependency_failure", "j/d:failed:dependency_failure"}
	if got := endedOf(d); !same(got, wantEnded) {
		t.Fatalf("ended = %v, want %v", got, wantEnded)
	}
	parents := map[string]string{"b": `"a"`, "c": `"b"`, "d": `"a"`}
	for _, x := range d.Ended[1:] {
		if !strings.Contains(x.Reason.Message, parents[x.Task]) {
			t.Errorf("%s: reason %q does not name its parent %s", x.Task, x.Reason.Message, parents[x.Task])
		}
	}
	if len(d.JobsDone) != 0 {
		t.Fatalf("job ended while e still runs: %v", jobsDoneOf(d))
	}
	// The independent branch keeps going.
	mustApply(t, e, finishOK("j", "e"))
	if got := taskNames(e.Cycle(t0)); !same(got, []string{"f"}) {
		t.Fatalf("after e succeeded, started %v, want [f]", got)
	}
	mustApply(t, e, finishOK("j", "f"))
	d = e.Cycle(t0)
	if got := jobsDoneOf(d); !same(got, []string{"j:failed"}) {
		t.Fatalf("jobs done = %v, want j:failed", got)
	}
	for task, want := range map[string]model.TaskState{"a": model.TaskFailed, "c": model.TaskFailed, "e": model.TaskSucceeded, "f": model.TaskSucceeded} {
		if got := stateOf(t, e, "j", task); got != want {
			t.Errorf("state of %s = %s, want %s", task, got, want)
		}
	}
}

func TestCancelStopsRunningAndEndsWaiting(t *testing.T) {
	// Two workers: j runs a and b, c waits for a slot, d waits for a;
	// k waits behind j and takes the slots the cancel frees.
	e := engineWith(t, Config{}, newWorker("w1").add(), newWorker("w2").add(),
		newJob("j").task("a").task("b").task("c").task("d", "a").submit(),
		newJob("k").task("x").submit())
	if got := startsOf(e.Cycle(t0)); !same(got, []string{"j/a@w1", "j/b@w2"}) {
		t.Fatalf("first cycle started %v", got)
	}
	mustApply(t, e, CancelJob{Job: "j", At: t0})
	d := e.Cycle(t0)
	var stops []string
	for _, s := range d.Stops {
		stops = append(stops, s.Task+"@"+s.Worker+":"+s.Reason.Code)
	}
	if !same(stops, []string{"a@w1:cancelled", "b@w2:cancelled"}) {
		t.Fatalf("stops = %v", stops)
	}
	wantEnded := []string{"j/a:cancelled:cancelled", "j/b:cancelled:cancelled", "j/c:cancelled:cancelled", "j/d:cancelled:cancelled"}
	if got := endedOf(d); !same(got, wantEnded) {
		t.Fatalf("ended = %v, want %v", got, wantEnded)
	}
	if got := jobsDoneOf(d); !same(got, []string{"j:cancelled"}) {
		t.Fatalf("jobs done = %v", got)
	}
	if got := startsOf(d); !same(got, []string{"k/x@w1"}) {
		t.Fatalf("freed slot went to %v, want k/x@w1", got)
	}
	if len(pendingOf(d, "j")) != 0 {
		t.Fatalf("a cancelled job still has pending entries: %+v", pendingOf(d, "j"))
	}
	if err := e.Apply(finishOK("j", "a")); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("late report of a cancelled task: err = %v, want ErrNotRunning", err)
	}
	if err := e.Apply(CancelJob{Job: "j"}); err != nil {
		t.Fatalf("cancelling an ended job again: %v", err)
	}
	if err := e.Apply(CancelJob{Job: "nope"}); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("cancelling an unknown job: err = %v", err)
	}
}

func TestRemoveWorkerRequeuesWithoutSpendingAnAttempt(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").add(), newWorker("w2").add(),
		newJob("j").task("a").attempts(2).task("b").submit())
	if got := startsOf(e.Cycle(t0)); !same(got, []string{"j/a@w1", "j/b@w2"}) {
		t.Fatalf("first cycle started %v", got)
	}
	mustApply(t, e, RemoveWorker{Name: "w1", At: t0})
	if s := stateOf(t, e, "j", "a"); s != model.TaskReady {
		t.Fatalf("task of the removed worker is %s, want ready", s)
	}
	mustApply(t, e, newWorker("w3").add())
	d := e.Cycle(t0)
	if got := endedOf(d); !same(got, []string{"j/a:ready:worker_lost"}) || d.Ended[0].Worker != "w1" {
		t.Fatalf("ended = %+v, want a worker_lost requeue from w1", d.Ended)
	}
	if len(d.Starts) != 1 || d.Starts[0].Worker != "w3" || d.Starts[0].Attempt != 2 {
		t.Fatalf("starts = %+v, want j/a on w3 as attempt 2", d.Starts)
	}
	// The lost run did not use the budget: one failure of two allowed is a retry.
	mustApply(t, e, finishFail("j", "a"))
	if got := endedOf(e.Cycle(t0)); !same(got, []string{"j/a:ready:retry"}) {
		t.Fatalf("after one real failure: ended %v, want a retry", got)
	}
	if err := e.Apply(RemoveWorker{Name: "w1"}); !errors.Is(err, ErrUnknownWorker) {
		t.Fatalf("removing w1 twice: err = %v, want ErrUnknownWorker", err)
	}
	// A new worker may reuse the name of a removed one.
	mustApply(t, e, newWorker("w1").add())
}

func TestRequeuedReportDoesNotSpendAnAttempt(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").add(), newJob("j").task("a").submit())
	e.Cycle(t0)
	mustApply(t, e, FinishTask{Job: "j", Task: "a", Outcome: model.Requeued, At: t0, Message: "agent restarted"})
	d := e.Cycle(t0)
	if got := endedOf(d); !same(got, []string{"j/a:ready:worker_lost"}) {
		t.Fatalf("ended = %v", got)
	}
	if len(d.Starts) != 1 || d.Starts[0].Attempt != 2 {
		t.Fatalf("starts = %+v, want attempt 2", d.Starts)
	}
	mustApply(t, e, finishOK("j", "a"))
	if got := jobsDoneOf(e.Cycle(t0)); !same(got, []string{"j:succeeded"}) {
		t.Fatalf("jobs done = %v", got)
	}
}

func TestFinishTaskRejectsReportsForTasksNotRunning(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").add(), newJob("j").task("a").task("b").submit())
	e.Cycle(t0)
	mustApply(t, e, finishOK("j", "a"))
	cases := []struct {
		name string
		ev   FinishTask
		want error
	}{
		{"duplicate completion", finishOK("j", "a"), ErrNotRunning},
		{"duplicate as failure", finishFail("j", "a"), ErrNotRunning},
		{"task still waiting", finishOK("j", "b"), ErrNotRunning},
		{"unknown task", finishOK("j", "zz"), ErrUnknownTask},
		{"unknown job", finishOK("zz", "a"), ErrUnknownJob},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.Apply(tc.ev); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if got := startsOf(e.Cycle(t0)); !same(got, []string{"j/b@w1"}) {
		t.Fatalf("after rejected reports the engine started %v, want j/b@w1", got)
	}
}

func TestFinishTaskRejectsUnknownOutcome(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").add(), newJob("j").task("a").submit())
	e.Cycle(t0)
	if err := e.Apply(FinishTask{Job: "j", Task: "a", Outcome: "exploded"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	if s := stateOf(t, e, "j", "a"); s != model.TaskRunning {
		t.Fatalf("a rejected report changed the task to %s", s)
	}
}

func TestSetJobPriorityReorders(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").add(),
		newJob("first").task("a").task("b").submit(),
		newJob("second").task("a").submit())
	if got := startsOf(e.Cycle(t0)); !same(got, []string{"first/a@w1"}) {
		t.Fatalf("started %v", got)
	}
	mustApply(t, e, SetJobPriority{Job: "second", Priority: 5})
	mustApply(t, e, finishOK("first", "a"))
	if got := startsOf(e.Cycle(t0)); !same(got, []string{"second/a@w1"}) {
		t.Fatalf("after raising second's priority, started %v", got)
	}
	if err := e.Apply(SetJobPriority{Job: "nope"}); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("err = %v", err)
	}
}

func TestTaskReasonNamesUnmetNeeds(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").add(), newWorker("w2").add(),
		newJob("j").task("a").task("b").task("c", "a", "b").submit())
	e.Cycle(t0)
	mustApply(t, e, finishOK("j", "a"))
	d := e.Cycle(t0)
	r, ok := e.TaskReason("j", "c")
	if !ok || r.Code != model.ReasonWaitingDependency || !strings.HasSuffix(r.Message, "waits for [b]") {
		t.Fatalf("reason of c = %+v %v, want waiting_dependency naming only b", r, ok)
	}
	if p := onlyPending(t, d, "j"); p.Tasks != 1 || p.Reason != r {
		t.Fatalf("pending = %+v, want c's reason", p)
	}
	for _, task := range []string{"a", "b"} { // ended, running
		if r, ok := e.TaskReason("j", task); ok {
			t.Errorf("TaskReason(%s) = %+v, want none", task, r)
		}
	}
	if _, ok := e.TaskReason("nope", "a"); ok {
		t.Error("TaskReason of an unknown job answered")
	}
}
