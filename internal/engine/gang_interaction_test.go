package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// runningOf counts the members of job's gang that run.
func runningOf(t *testing.T, e *Engine, job string) int {
	t.Helper()
	j, ok := e.jobs[job]
	if !ok {
		t.Fatalf("no job %q", job)
	}
	n := 0
	for _, task := range j.tasks {
		if task.state == model.TaskRunning {
			n++
		}
	}
	return n
}

// A requeue of one running member leaves the gang below its minimum: the
// other members stop too, and the gang starts again together.
func TestRequeueOfOneGangMemberStopsTheGang(t *testing.T) {
	e := newFIFO(t, 3)
	mustApply(t, e, SubmitJob{Job: gangJob("g", 3, 0, time.Hour)})
	if d := e.Cycle(t0); len(d.Starts) != 3 {
		t.Fatalf("starts = %v", startsOf(d))
	}
	mustApply(t, e, RequeueTasks{Job: "g", Tasks: []string{"w0"}, At: t0.Add(time.Minute)})
	if n := runningOf(t, e, "g"); n != 0 {
		t.Fatalf("%d members of a gang of 3 run after a requeue of one, want 0", n)
	}
	d := e.Cycle(t0.Add(time.Minute))
	if len(d.Stops) != 3 {
		t.Fatalf("stops = %+v, want the requeued member and its 2 peers", d.Stops)
	}
	if got := startsByJob(d); got["g"] != 3 {
		t.Fatalf("starts = %v, want the gang of 3 together", startsOf(d))
	}
}

// A requeue of a whole gang job leaves no member running: the gang starts
// again together, never member by member.
func TestRequeueOfAGangJobStartsItAgainTogether(t *testing.T) {
	e := newFIFO(t, 3)
	mustApply(t, e, SubmitJob{Job: gangJob("g", 3, 0, time.Hour)})
	if d := e.Cycle(t0); len(d.Starts) != 3 {
		t.Fatalf("starts = %v", startsOf(d))
	}
	mustApply(t, e, RequeueTasks{Job: "g", At: t0.Add(time.Minute)})
	mustApply(t, e, RemoveWorker{Name: "w002", At: t0.Add(time.Minute)})
	d := e.Cycle(t0.Add(time.Minute))
	if got := startsByJob(d); got["g"] != 0 {
		t.Fatalf("starts = %v: a gang of 3 started partly on 2 workers", startsOf(d))
	}
}

// Cancelling one running member of a gang that then can no longer reach its
// minimum ends the gang's other members: none is left running partly.
func TestCancelOfAGangMemberEndsAGangThatCanNoLongerRunWhole(t *testing.T) {
	e := newFIFO(t, 3)
	mustApply(t, e, SubmitJob{Job: gangJob("g", 3, 0, time.Hour)})
	if d := e.Cycle(t0); len(d.Starts) != 3 {
		t.Fatalf("starts = %v", startsOf(d))
	}
	mustApply(t, e, CancelTask{Job: "g", Task: "w1", At: t0.Add(time.Minute)})
	if n := runningOf(t, e, "g"); n != 0 {
		t.Fatalf("%d members of a gang of 3 run after one was cancelled, want 0", n)
	}
	d := e.Cycle(t0.Add(time.Minute))
	if len(d.Stops) != 3 || len(d.Starts) != 0 {
		t.Fatalf("stops = %+v, starts = %v", d.Stops, startsOf(d))
	}
	if len(d.JobsDone) != 1 || d.JobsDone[0].State != model.TaskCancelled {
		t.Fatalf("jobs done = %+v, want g cancelled", d.JobsDone)
	}
}

// Cancelling one member of a gang that can still reach its minimum stops
// the others only when fewer than the minimum would run; they start again
// together.
func TestCancelOfAGangMemberBelowItsMinimumRestartsTheRest(t *testing.T) {
	e := newFIFO(t, 3)
	mustApply(t, e, SubmitJob{Job: gangJob("g", 4, 3, time.Hour)})
	if d := e.Cycle(t0); len(d.Starts) != 3 {
		t.Fatalf("starts = %v", startsOf(d))
	}
	mustApply(t, e, CancelTask{Job: "g", Task: "w0", At: t0.Add(time.Minute)})
	if n := runningOf(t, e, "g"); n != 0 {
		t.Fatalf("%d members of a gang of minimum 3 run after one of 3 was cancelled, want 0", n)
	}
	d := e.Cycle(t0.Add(time.Minute))
	if got := startsByJob(d); got["g"] != 3 {
		t.Fatalf("starts = %v, want the 3 members left together", startsOf(d))
	}
}

// A requeue of the member whose last attempt failed runs its gang again
// whole: its peers, failed with it, wait again too.
func TestRequeueOfAFailedGangMemberRunsTheWholeGangAgain(t *testing.T) {
	e := newFIFO(t, 4)
	j := model.Job{ID: "g", Queue: "default", Submitted: t0}
	for _, name := range []string{"r0", "r1", "r2"} {
		j.Tasks = append(j.Tasks, model.Task{Name: name, Resources: cpus(1), Duration: time.Hour, Gang: "rank", GangMin: 3})
	}
	j.Tasks = append(j.Tasks, model.Task{Name: "side", Resources: cpus(1), Duration: 2 * time.Hour})
	mustApply(t, e, SubmitJob{Job: j})
	if d := e.Cycle(t0); len(d.Starts) != 4 {
		t.Fatalf("starts = %v", startsOf(d))
	}
	mustApply(t, e, FinishTask{Job: "g", Task: "r0", Outcome: model.Failed, At: t0.Add(time.Minute)})
	e.Cycle(t0.Add(time.Minute))
	mustApply(t, e, RequeueTasks{Job: "g", Tasks: []string{"r0"}, At: t0.Add(2 * time.Minute)})
	d := e.Cycle(t0.Add(2 * time.Minute))
	if got := startsByJob(d); got["g"] != 3 {
		t.Fatalf("starts = %v, want the whole gang of 3 again", startsOf(d))
	}
}

// A reserved gang whose members were all cancelled, in a job that goes on,
// holds its queue's reservation no longer: the next gang reserves.
func TestACancelledGangGivesUpItsQueuesReservation(t *testing.T) {
	e := newFIFO(t, 4)
	mustApply(t, e, SubmitJob{Job: smallJob("busy", 2, time.Hour)})
	e.Cycle(t0)
	j := model.Job{ID: "g", Queue: "default", Submitted: t0}
	for _, name := range []string{"r0", "r1", "r2"} {
		j.Tasks = append(j.Tasks, model.Task{Name: name, Resources: cpus(1), Duration: time.Hour, Gang: "rank", GangMin: 3})
	}
	j.Tasks = append(j.Tasks, model.Task{Name: "side", Resources: cpus(1), Duration: 2 * time.Hour})
	mustApply(t, e, SubmitJob{Job: j})
	d := e.Cycle(t0.Add(time.Second))
	if got := startsByJob(d); got["g"] != 0 || e.queueBy["default"].reserved == nil {
		t.Fatalf("starts = %v, want g's gang waiting with a reservation", startsOf(d))
	}
	mustApply(t, e, CancelTask{Job: "g", Task: "r0", At: t0.Add(time.Minute)})
	mustApply(t, e, SubmitJob{Job: gangJob("g2", 2, 0, time.Minute)})
	d = e.Cycle(t0.Add(time.Minute))
	p := onlyPending(t, d, "g2")
	if p.Reason.Code != model.ReasonGangWaiting || strings.Contains(p.Reason.Message, `held for the gang "rank" of 3 of job "g"`) {
		t.Fatalf("g2 waits with %+v", p.Reason)
	}
}

// A reserved gang that starts gives up its queue's reservation at once: the
// next gang of the queue reserves in the same cycle, before a smaller job
// behind it takes what it needs.
func TestAGangThatStartsHandsTheReservationOn(t *testing.T) {
	e := newFIFO(t, 6)
	mustApply(t, e, SubmitJob{Job: smallJob("short", 2, time.Minute)})
	mustApply(t, e, SubmitJob{Job: smallJob("long", 3, time.Hour)})
	mustApply(t, e, SubmitJob{Job: gangJob("a", 2, 0, time.Hour)})
	mustApply(t, e, SubmitJob{Job: gangJob("b", 2, 0, time.Hour)})
	mustApply(t, e, SubmitJob{Job: jobOf("c", 1)}) // no duration: it may not backfill
	d := e.Cycle(t0)
	if got := startsByJob(d); got["short"] != 2 || got["long"] != 3 || len(d.Starts) != 5 {
		t.Fatalf("starts = %v", startsOf(d))
	}
	for _, task := range []string{"t0", "t1"} {
		mustApply(t, e, FinishTask{Job: "short", Task: task, Outcome: model.Succeeded, At: t0.Add(time.Minute)})
	}
	d = e.Cycle(t0.Add(time.Minute))
	if got := startsByJob(d); got["a"] != 2 || got["c"] != 0 {
		t.Fatalf("starts = %v, want gang a and not c, which would take what gang b needs", startsOf(d))
	}
	if p := onlyPending(t, d, "b"); strings.Contains(p.Reason.Message, `job "a"`) {
		t.Fatalf("b waits with %+v", p.Reason)
	}
}
