package engine

import (
	"errors"
	"testing"

	"github.com/allot-sched/allot/internal/model"
)

func taskState(t *testing.T, e *Engine, job, task string) model.TaskState {
	t.Helper()
	s, _, ok := e.TaskState(job, task)
	if !ok {
		t.Fatalf("task %s/%s unknown", job, task)
	}
	return s
}

func TestRequeueRunsAFailedTaskAndWhatItsFailureEndedAgain(t *testing.T) {
	e := newFIFO(t, 2)
	mustApply(t, e, newJob("j").task("a").task("b").task("c", "b").submit())
	e.Cycle(t0)
	mustApply(t, e, finishFail("j", "b")) // c fails with it; a still runs
	if got := taskState(t, e, "j", "c"); got != model.TaskFailed {
		t.Fatalf("c is %s, want failed by the cascade", got)
	}
	mustApply(t, e, RequeueTasks{Job: "j", Tasks: []string{"b"}, At: t0})
	for task, want := range map[string]model.TaskState{"a": model.TaskRunning, "b": model.TaskReady, "c": model.TaskBlocked} {
		if got := taskState(t, e, "j", task); got != want {
			t.Fatalf("after requeue %s is %s, want %s", task, got, want)
		}
	}
	d := e.Cycle(t0)
	if len(d.Starts) != 1 || d.Starts[0].Task != "b" || d.Starts[0].Attempt != 2 {
		t.Fatalf("starts %+v, want b as attempt 2", d.Starts)
	}
	mustApply(t, e, finishOK("j", "a"))
	mustApply(t, e, finishOK("j", "b"))
	e.Cycle(t0)
	mustApply(t, e, finishOK("j", "c"))
	if d := e.Cycle(t0); !jobDone(d, "j", model.TaskSucceeded) {
		t.Fatalf("jobs done %v, want j succeeded", d.JobsDone)
	}
}

func TestRequeueStopsARunningTask(t *testing.T) {
	e := newFIFO(t, 1)
	mustApply(t, e, newJob("j").task("a").submit())
	e.Cycle(t0)
	mustApply(t, e, RequeueTasks{Job: "j", At: t0})
	d := e.Cycle(t0)
	if len(d.Stops) != 1 || d.Stops[0].Reason.Code != model.ReasonRequeued {
		t.Fatalf("stops %+v, want a stopped as requeued", d.Stops)
	}
	if len(d.Starts) != 1 || d.Starts[0].Attempt != 2 {
		t.Fatalf("starts %+v, want a again as attempt 2", d.Starts)
	}
	// The stopped attempt's late report changes nothing.
	if err := e.Apply(FinishTask{Job: "j", Task: "a", Outcome: model.Failed, At: t0}); err != nil && !errors.Is(err, ErrNotRunning) {
		t.Fatal(err)
	}
}

func TestRequeueRefusesWhatCannotRunAgain(t *testing.T) {
	e := newFIFO(t, 1)
	mustApply(t, e, newJob("j").task("a").task("b").submit())
	e.Cycle(t0)
	mustApply(t, e, finishOK("j", "a"))
	for _, tasks := range [][]string{{"a"}, {"b", "nope"}} {
		if err := e.Apply(RequeueTasks{Job: "j", Tasks: tasks, At: t0}); err == nil {
			t.Fatalf("requeue %v: no error", tasks)
		}
	}
	if got := taskState(t, e, "j", "a"); got != model.TaskSucceeded {
		t.Fatalf("a refused requeue left a %s", got)
	}
}

func TestCancelTaskEndsItAndWhatNeedsIt(t *testing.T) {
	e := newFIFO(t, 2)
	mustApply(t, e, newJob("j").task("a").task("b").task("c", "b").submit())
	e.Cycle(t0)
	mustApply(t, e, CancelTask{Job: "j", Task: "b", At: t0})
	d := e.Cycle(t0)
	if len(d.Stops) != 1 || d.Stops[0].Task != "b" || d.Stops[0].Reason.Code != model.ReasonCancelled {
		t.Fatalf("stops %+v, want b stopped as cancelled", d.Stops)
	}
	for task, want := range map[string]model.TaskState{"a": model.TaskRunning, "b": model.TaskCancelled, "c": model.TaskCancelled} {
		if got := taskState(t, e, "j", task); got != want {
			t.Fatalf("%s is %s, want %s", task, got, want)
		}
	}
	mustApply(t, e, finishOK("j", "a"))
	if d := e.Cycle(t0); !jobDone(d, "j", model.TaskCancelled) {
		t.Fatalf("jobs done %v, want j cancelled", d.JobsDone)
	}
	if err := e.Apply(CancelTask{Job: "j", Task: "a", At: t0}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("cancelling an ended task: %v", err)
	}
}
