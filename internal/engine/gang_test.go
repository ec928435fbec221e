package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/model"
)

// gangJob builds a job of n one-CPU tasks named w0..w(n-1) that form one
// gang of at least min tasks (min 0: all of them), each running for d.
func gangJob(id string, n, min int, d time.Duration) model.Job {
	if min == 0 {
		min = n
	}
	j := model.Job{ID: id, Queue: "default", Submitted: t0}
	for i := range n {
		j.Tasks = append(j.Tasks, model.Task{Name: fmt.Sprintf("w%d", i), Resources: cpus(1), Duration: d, Gang: "job", GangMin: min})
	}
	return j
}

// smallJob builds a job of n one-CPU tasks running for d.
func smallJob(id string, n int, d time.Duration) model.Job {
	j := jobOf(id, n)
	for i := range j.Tasks {
		j.Tasks[i].Duration = d
	}
	return j
}

// startedJobs counts the starts of each job in d.
func startsByJob(d *Decisions) map[string]int {
	out := map[string]int{}
	for _, s := range d.Starts {
		out[s.Job]++
	}
	return out
}

func TestGangOfFourOnThreeFreeSlotsWaitsThenStartsWhole(t *testing.T) {
	e := newFIFO(t, 4)
	mustApply(t, e, SubmitJob{Job: smallJob("busy", 1, time.Hour)})
	if d := e.Cycle(t0); len(d.Starts) != 1 {
		t.Fatalf("starts = %v", startsOf(d))
	}
	mustApply(t, e, SubmitJob{Job: gangJob("g", 4, 0, time.Minute)})
	d := e.Cycle(t0.Add(time.Second))
	if len(d.Starts) != 0 {
		t.Fatalf("the gang started partly: %v", startsOf(d))
	}
	p := onlyPending(t, d, "g")
	if p.Reason.Code != model.ReasonGangWaiting || !strings.Contains(p.Reason.Message, "gang of 4 needs 4 slots at once; 3 free") {
		t.Fatalf("reason = %+v", p.Reason)
	}
	x, _ := e.Explain("g")
	if x.Gang == nil || x.Gang.Need != 4 || x.Gang.Free != 3 || x.Gang.EarliestStart == nil || !x.Gang.EarliestStart.Equal(t0.Add(time.Hour)) ||
		!strings.Contains(x.Gang.Message, "gang of 4 needs 4 slots at once; 3 free; earliest start 2026-01-01T01:00:00Z, when 1 running task(s) end") {
		t.Fatalf("explain's gang = %+v", x.Gang)
	}
	if len(x.Help) == 0 || x.Help[len(x.Help)-1].Kind != "gang" {
		t.Fatalf("explain's help = %+v", x.Help)
	}
	// Nothing is held by the failed try: the three free workers are free.
	if _, free := e.fleet.PoolSlots(nil); free != 3 {
		t.Fatalf("free slots = %d, want 3", free)
	}
	mustApply(t, e, FinishTask{Job: "busy", Task: "t0", Outcome: model.Succeeded, At: t0.Add(time.Minute)})
	d = e.Cycle(t0.Add(time.Minute))
	if got := startsByJob(d); got["g"] != 4 || len(d.Starts) != 4 {
		t.Fatalf("starts = %v, want the 4 gang tasks in one cycle", startsOf(d))
	}
	workers := map[string]bool{}
	for _, s := range d.Starts {
		workers[s.Worker] = true
	}
	if len(workers) != 4 {
		t.Fatalf("the gang shares workers: %v", startsOf(d))
	}
}

func TestMinAvailableStartsTheMinimumTogetherAndTheRestFollow(t *testing.T) {
	e := newFIFO(t, 3)
	mustApply(t, e, SubmitJob{Job: smallJob("busy", 1, time.Hour)})
	e.Cycle(t0)
	mustApply(t, e, SubmitJob{Job: gangJob("g", 4, 2, time.Hour)})
	d := e.Cycle(t0)
	if got := startsByJob(d); got["g"] != 2 {
		t.Fatalf("starts = %v, want 2 gang tasks (its minimum) on the 2 free workers", startsOf(d))
	}
	mustApply(t, e, FinishTask{Job: "busy", Task: "t0", Outcome: model.Succeeded, At: t0.Add(time.Minute)})
	d = e.Cycle(t0.Add(time.Minute))
	if got := startsByJob(d); got["g"] != 1 {
		t.Fatalf("starts = %v, want one more gang task as a slot frees", startsOf(d))
	}
}

func TestSmallJobsBehindAGangDoNotStarveIt(t *testing.T) {
	// Four workers, all busy with long tasks ending one by one; a stream
	// of one-slot jobs keeps arriving behind a gang of 4. Without the
	// reservation each freed worker goes to a small job and the gang
	// never finds 4 at once.
	e := newFIFO(t, 4)
	for i := range 4 {
		mustApply(t, e, SubmitJob{Job: smallJob(fmt.Sprintf("old%d", i), 1, time.Duration(i+1)*time.Minute)})
	}
	e.Cycle(t0)
	g := gangJob("g", 4, 0, time.Minute)
	g.Submitted = t0.Add(time.Second)
	mustApply(t, e, SubmitJob{Job: g})
	started := time.Time{}
	next := 0
	for clock := t0.Add(time.Second); clock.Before(t0.Add(time.Hour)); clock = clock.Add(30 * time.Second) {
		// Two new small jobs, ten minutes long, every 30 seconds.
		for range 2 {
			s := smallJob(fmt.Sprintf("s%d", next), 1, 10*time.Minute)
			s.Submitted = clock
			mustApply(t, e, SubmitJob{Job: s})
			next++
		}
		for _, j := range e.active {
			for _, task := range j.tasks {
				if task.state == model.TaskRunning && !task.started.Add(task.spec.Duration).After(clock) {
					mustApply(t, e, FinishTask{Job: j.id, Task: task.spec.Name, Outcome: model.Succeeded, At: clock})
				}
			}
		}
		d := e.Cycle(clock)
		if n := startsByJob(d)["g"]; n > 0 {
			if n != 4 {
				t.Fatalf("the gang started %d tasks", n)
			}
			started = clock
			break
		}
	}
	if started.IsZero() {
		t.Fatal("the gang never started: small jobs starved it")
	}
	// The last old task ends at 4m: the gang starts then, not later.
	if started.After(t0.Add(4*time.Minute + 30*time.Second)) {
		t.Fatalf("the gang started at %s, want by 4m30s", started.Sub(t0))
	}
}

func TestShortTasksBackfillInFrontOfAGangWithoutDelayingIt(t *testing.T) {
	// Two workers: one free, one busy for 10 minutes. A gang of 2 waits
	// for 10 minutes; a 5-minute task may use the free worker meanwhile,
	// a 20-minute one may not.
	e := newFIFO(t, 2)
	mustApply(t, e, SubmitJob{Job: smallJob("busy", 1, 10*time.Minute)})
	e.Cycle(t0)
	g := gangJob("g", 2, 0, time.Minute)
	mustApply(t, e, SubmitJob{Job: g})
	long := smallJob("long", 1, 20*time.Minute)
	long.Submitted = t0.Add(time.Second)
	mustApply(t, e, SubmitJob{Job: long})
	short := smallJob("short", 1, 5*time.Minute)
	short.Submitted = t0.Add(2 * time.Second)
	mustApply(t, e, SubmitJob{Job: short})
	d := e.Cycle(t0.Add(3 * time.Second))
	if got := startsOf(d); !same(got, []string{"short/t0@w001"}) {
		t.Fatalf("starts = %v, want only the short task", got)
	}
	p := onlyPending(t, d, "long")
	if p.Reason.Code != model.ReasonGangReserved || !strings.Contains(p.Reason.Message, "held for the gang of 2 of job \"g\"") {
		t.Fatalf("long's reason = %+v", p.Reason)
	}
	if p := onlyPending(t, d, "g"); !strings.Contains(p.Reason.Message, "earliest start 2026-01-01T00:10:00Z") {
		t.Fatalf("gang's reason = %+v", p.Reason)
	}
}

func TestAGangThatCanNeverFitHoldsNothing(t *testing.T) {
	e := newFIFO(t, 3)
	mustApply(t, e, SubmitJob{Job: gangJob("g", 4, 0, time.Minute)})
	mustApply(t, e, SubmitJob{Job: smallJob("s", 3, time.Minute)})
	d := e.Cycle(t0)
	if got := startsByJob(d); got["s"] != 3 || got["g"] != 0 {
		t.Fatalf("starts = %v", startsOf(d))
	}
	if p := onlyPending(t, d, "g"); !strings.Contains(p.Reason.Message, "have only 3 in all") {
		t.Fatalf("reason = %+v", p.Reason)
	}
}

func TestLosingAGangMemberStopsTheWholeGang(t *testing.T) {
	e := engineWith(t, Config{Queues: []QueueConfig{{Name: "default", Policy: policy.Config{Kind: "priority"}}}})
	for i := range 4 {
		mustApply(t, e, newWorker(fmt.Sprintf("w%d", i)).add())
	}
	g := gangJob("g", 4, 0, time.Hour)
	g.Priority = 1
	mustApply(t, e, SubmitJob{Job: g})
	if d := e.Cycle(t0); startsByJob(d)["g"] != 4 {
		t.Fatalf("starts = %v", startsOf(d))
	}
	mustApply(t, e, FinishTask{Job: "g", Task: "w2", Outcome: model.Requeued, At: t0.Add(time.Minute), Message: "worker restarted"})
	d := e.Cycle(t0.Add(time.Minute))
	running := 0
	for _, task := range e.jobs["g"].tasks {
		if task.state == model.TaskRunning {
			running++
		}
	}
	if running != 4 {
		// Either all of it stopped and restarted together, or none: never 3.
		t.Fatalf("%d of the gang's tasks run after a member was requeued (stops %v, starts %v)", running, d.Stops, startsOf(d))
	}
	if len(d.Stops) != 3 {
		t.Fatalf("stops = %+v, want the 3 other members", d.Stops)
	}
	for _, s := range d.Stops {
		if s.Reason.Code != model.ReasonGangStopped {
			t.Fatalf("stop = %+v", s)
		}
	}
}

func TestAGangMemberThatFailsForGoodFailsTheGang(t *testing.T) {
	e := newFIFO(t, 4)
	mustApply(t, e, SubmitJob{Job: gangJob("g", 4, 0, time.Hour)})
	if d := e.Cycle(t0); startsByJob(d)["g"] != 4 {
		t.Fatalf("starts = %v", startsOf(d))
	}
	mustApply(t, e, finishFail("g", "w1"))
	d := e.Cycle(t0.Add(time.Minute))
	if len(d.Stops) != 3 || len(d.Starts) != 0 {
		t.Fatalf("stops %+v, starts %v: want the 3 other members stopped, none started again", d.Stops, startsOf(d))
	}
	if got := jobsDoneOf(d); !same(got, []string{"g:failed"}) {
		t.Fatalf("jobs done = %v", got)
	}
	for _, name := range []string{"w0", "w2", "w3"} {
		if s := stateOf(t, e, "g", name); s != model.TaskFailed {
			t.Fatalf("%s is %s, want failed", name, s)
		}
	}
}

func TestAStageGangStartsTogetherOnceItsDependenciesSucceed(t *testing.T) {
	e := newFIFO(t, 3)
	j := newJob("dag").task("prep").task("train-0", "prep").task("train-1", "prep").task("train-2", "prep").task("eval", "train-0", "train-1", "train-2").j
	for i := 1; i <= 3; i++ {
		j.Tasks[i].Gang, j.Tasks[i].GangMin = "train", 3
	}
	mustApply(t, e, SubmitJob{Job: j})
	mustApply(t, e, SubmitJob{Job: smallJob("other", 1, time.Hour)})
	if d := e.Cycle(t0); !same(startsOf(d), []string{"dag/prep@w000", "other/t0@w001"}) {
		t.Fatalf("starts = %v", startsOf(d))
	}
	mustApply(t, e, finishOK("dag", "prep"))
	d := e.Cycle(t0.Add(time.Minute))
	if p := pendingOf(d, "dag"); len(d.Starts) != 0 || len(p) == 0 || p[0].Tasks != 3 || p[0].Reason.Code != model.ReasonGangWaiting {
		t.Fatalf("starts %v, pending %+v: the stage needs 3 slots and has 2", startsOf(d), d.Pending)
	}
	mustApply(t, e, finishOK("other", "t0"))
	d = e.Cycle(t0.Add(2 * time.Minute))
	if !same(startsOf(d), []string{"dag/train-0@w000", "dag/train-1@w001", "dag/train-2@w002"}) {
		t.Fatalf("starts = %v", startsOf(d))
	}
}

func TestGangsThatCannotHoldAreRefusedAtSubmission(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(j *model.Job)
	}{
		{"a minimum above the members", func(j *model.Job) { j.Tasks[0].GangMin, j.Tasks[1].GangMin = 3, 3 }},
		{"a minimum of 0", func(j *model.Job) { j.Tasks[0].GangMin, j.Tasks[1].GangMin = 0, 0 }},
		{"members that disagree", func(j *model.Job) { j.Tasks[1].GangMin = 1 }},
		{"maxSlots below the minimum", func(j *model.Job) { j.MaxSlots = 1 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newFIFO(t, 2)
			j := gangJob("g", 2, 0, time.Minute)
			tt.edit(&j)
			if err := e.Apply(SubmitJob{Job: j}); err == nil {
				t.Fatal("accepted")
			}
			if _, ok := e.jobs["g"]; ok {
				t.Fatal("a refused job is in the engine")
			}
		})
	}
}

func TestPreemptionTakesAWholeGang(t *testing.T) {
	e := engineWith(t, Config{Queues: []QueueConfig{{Name: "default", Policy: policy.Config{Kind: "priority", Settings: &priority.Config{PreemptablePercent: 100}}}}})
	for i := range 4 {
		mustApply(t, e, newWorker(fmt.Sprintf("w%d", i)).add())
	}
	g := gangJob("g", 4, 0, time.Hour)
	g.Priority = 1
	mustApply(t, e, SubmitJob{Job: g})
	if d := e.Cycle(t0); startsByJob(d)["g"] != 4 {
		t.Fatalf("starts = %v", startsOf(d))
	}
	urgent := smallJob("urgent", 1, time.Minute)
	urgent.Priority, urgent.Urgent, urgent.Submitted = 5, true, t0.Add(time.Minute)
	mustApply(t, e, SubmitJob{Job: urgent})
	d := e.Cycle(t0.Add(time.Minute))
	if startsByJob(d)["urgent"] != 1 {
		t.Fatalf("the urgent job did not start: stops %+v, starts %v", d.Stops, startsOf(d))
	}
	running := 0
	for _, task := range e.jobs["g"].tasks {
		if task.state == model.TaskRunning {
			running++
		}
	}
	if running != 0 || len(d.Stops) != 4 {
		t.Fatalf("%d gang tasks still run after a preemption; stops %+v", running, d.Stops)
	}
}

func TestAHeldGangHoldsNoCapacity(t *testing.T) {
	e := newFIFO(t, 2)
	mustApply(t, e, SubmitJob{Job: smallJob("busy", 1, 10*time.Minute)})
	e.Cycle(t0)
	mustApply(t, e, SubmitJob{Job: gangJob("g", 2, 0, time.Minute)})
	e.Cycle(t0) // the gang waits and reserves the free worker
	mustApply(t, e, HoldJob{Job: "g", By: "ops"})
	long := smallJob("long", 1, time.Hour)
	long.Submitted = t0.Add(time.Second)
	mustApply(t, e, SubmitJob{Job: long})
	if d := e.Cycle(t0.Add(time.Second)); !same(startsOf(d), []string{"long/t0@w001"}) {
		t.Fatalf("starts = %v: a held gang must not keep the free worker", startsOf(d))
	}
}
