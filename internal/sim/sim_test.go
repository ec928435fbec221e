package sim

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/sim/simtest"
)

// The shared fixtures (package simtest), under the short names the tests use.
var (
	t0      = simtest.T0
	fifo    = simtest.FIFO
	workers = simtest.Workers
	job     = simtest.Job
	task    = simtest.Task
)

const sec = time.Second

func mustRun(t *testing.T, in Input, opt Options) *Result {
	t.Helper()
	if in.Start.IsZero() {
		in.Start = t0
	}
	if in.Config.Queues == nil {
		in.Config = fifo()
	}
	res, err := Run(in, opt)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func group(t *testing.T, r *Result, key string) GroupResult {
	t.Helper()
	for _, g := range r.Groups {
		if g.Key == key {
			return g
		}
	}
	t.Fatalf("no group %q in %+v", key, r.Groups)
	return GroupResult{}
}

func TestRunTimesTasksOnTheVirtualClock(t *testing.T) {
	tests := []struct {
		name     string
		workers  int
		jobs     []model.Job
		makespan float64
		waits    map[string]WaitStats // by share
		util     float64
	}{
		{
			name:    "one slot serves jobs one after another; a later arrival waits for nothing",
			workers: 1,
			jobs: []model.Job{job("a", "x", 0, task("t", 10*sec)), job("b", "x", 0, task("t", 10*sec)),
				job("c", "y", 25*sec, task("t", 10*sec))},
			makespan: 35,
			waits: map[string]WaitStats{"x": {Count: 2, P50: 0, P95: 10, P99: 10, Mean: 5, Max: 10},
				"y": {Count: 1}},
			util: 30.0 / 35,
		},
		{
			name:    "a dependent task waits from when its parent succeeded, not from submission",
			workers: 1,
			jobs: []model.Job{job("first", "y", 0, task("t", 20*sec)),
				job("dag", "x", 0, task("a", 10*sec), task("b", 5*sec, "a"))},
			// a waits 20s for the slot; b is ready at 30s and starts at once.
			makespan: 35,
			waits: map[string]WaitStats{"x": {Count: 2, P50: 0, P95: 20, P99: 20, Mean: 10, Max: 20},
				"y": {Count: 1}},
			util: 1,
		},
		{
			name:     "zero-duration tasks of a chain all complete at time zero",
			workers:  1,
			jobs:     []model.Job{job("z", "x", 0, task("a", 0), task("b", 0, "a"), task("c", 0, "b"), task("d", 0, "c"))},
			makespan: 0,
			waits:    map[string]WaitStats{"x": {Count: 4}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := mustRun(t, Input{Workers: workers(tc.workers), Jobs: tc.jobs}, Options{GroupBy: GroupByShare})
			if res.Outcome != "completed" || res.MakespanSeconds != tc.makespan {
				t.Errorf("outcome %s after %gs, want completed after %gs", res.Outcome, res.MakespanSeconds, tc.makespan)
			}
			for share, want := range tc.waits {
				if got := group(t, res, share).Wait; !closeWait(got, want) {
					t.Errorf("group %s wait = %+v, want %+v", share, got, want)
				}
			}
			if math.Abs(res.Utilisation-tc.util) > 1e-9 {
				t.Errorf("utilisation = %g, want %g", res.Utilisation, tc.util)
			}
			if res.Counts.JobsSucceeded != len(tc.jobs) {
				t.Errorf("jobs succeeded = %d, want %d", res.Counts.JobsSucceeded, len(tc.jobs))
			}
		})
	}
}

func closeWait(a, b WaitStats) bool {
	eq := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	return a.Count == b.Count && eq(a.P50, b.P50) && eq(a.P95, b.P95) && eq(a.P99, b.P99) && eq(a.Mean, b.Mean) && eq(a.Max, b.Max)
}

func TestFailingTaskIsRetriedOrCascades(t *testing.T) {
	// prep(10s) → train(20s, fails Fails times, MaxAttempts 2) → eval(5s),
	// and side(100s) in parallel on the second worker.
	build := func(fails int) model.Job {
		train := task("train", 20*sec, "prep")
		train.Fails, train.MaxAttempts = fails, 2
		return job("ml", "x", 0, task("prep", 10*sec), train, task("eval", 5*sec, "train"), task("side", 100*sec))
	}
	tests := []struct {
		name                      string
		fails                     int
		state                     string
		makespan                  float64
		starts, retries, failed   int
		depFailures               int
		jobsSucceeded, jobsFailed int
		slotSeconds               float64
	}{
		{name: "one failure within two attempts succeeds on the retry", fails: 1,
			makespan: 100, starts: 5, retries: 1, jobsSucceeded: 1, slotSeconds: 10 + 20 + 20 + 5 + 100},
		{name: "two failures with two attempts fail the task and its dependents", fails: 2,
			makespan: 100, starts: 4, retries: 1, failed: 2, depFailures: 1, jobsFailed: 1, slotSeconds: 10 + 20 + 20 + 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := mustRun(t, Input{Workers: workers(2), Jobs: []model.Job{build(tc.fails)}}, Options{})
			c := res.Counts
			if res.MakespanSeconds != tc.makespan || c.Starts != tc.starts || c.Retries != tc.retries ||
				c.FailedTasks != tc.failed || c.DependencyFailures != tc.depFailures ||
				c.JobsSucceeded != tc.jobsSucceeded || c.JobsFailed != tc.jobsFailed || res.SlotSeconds != tc.slotSeconds {
				t.Errorf("makespan %g, slot-s %g, counts %+v; want makespan %g, slot-s %g, starts %d, retries %d, failed %d (%d cascaded), jobs %d ok %d failed",
					res.MakespanSeconds, res.SlotSeconds, c, tc.makespan, tc.slotSeconds, tc.starts, tc.retries, tc.failed, tc.depFailures,
					tc.jobsSucceeded, tc.jobsFailed)
			}
			if len(res.Unfinished) != 0 {
				t.Errorf("unfinished = %+v", res.Unfinished)
			}
		})
	}
}

func TestRetryTimeline(t *testing.T) {
	train := task("train", 20*sec)
	train.Fails, train.MaxAttempts = 1, 3
	res := mustRun(t, Input{Workers: workers(1), Jobs: []model.Job{job("ml", "x", 0, train)}}, Options{})
	var got []string
	for _, e := range res.Timeline {
		got = append(got, fmt.Sprintf("%g %s %s", e.AtSeconds, e.Kind, e.Job))
	}
	want := []string{"0 submit ml", "0 start ml", "20 retry ml", "20 start ml", "40 done ml"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("timeline = %q, want %q", got, want)
	}
}

func TestStallEndsTheRunAndNamesTheStuckJobs(t *testing.T) {
	gpu := task("train", 10*sec)
	gpu.Resources = model.Resources{GPUs: 1}
	jobs := []model.Job{
		job("ok", "x", 0, task("t", 10*sec)),
		job("gpu", "y", 5*sec, gpu, task("eval", sec, "train")),
	}
	for _, opt := range []Options{{}, {CycleEvery: 10 * sec}, {CycleEvery: 10 * sec, TickOnly: true}} {
		opt.GroupBy = GroupByShare
		t.Run(fmt.Sprintf("cycleEvery=%s,tickOnly=%v", opt.CycleEvery, opt.TickOnly), func(t *testing.T) {
			done := make(chan *Result, 1)
			go func() {
				res, err := Run(Input{Config: fifo(), Workers: workers(2), Jobs: jobs, Start: t0}, opt)
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()
			var res *Result
			select {
			case res = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return: the stall was not detected")
			}
			if res == nil {
				return
			}
			if res.Outcome != "stalled" || res.MakespanSeconds != 10 {
				t.Errorf("outcome %s after %gs, want stalled after 10s (when the last task ended)", res.Outcome, res.MakespanSeconds)
			}
			if len(res.Unfinished) != 1 {
				t.Fatalf("unfinished = %+v, want the gpu job", res.Unfinished)
			}
			u := res.Unfinished[0]
			if u.Job != "gpu" || u.Group != "y" || u.Waiting != 1 || u.Blocked != 1 || u.Reason.Code != model.ReasonUnschedulable {
				t.Errorf("unfinished = %+v, want gpu in y, 1 waiting, 1 blocked, reason %s", u, model.ReasonUnschedulable)
			}
		})
	}
}

func TestHorizonCutsTheRun(t *testing.T) {
	jobs := []model.Job{job("long", "x", 0, task("t", 100*sec)), job("later", "x", 50*sec, task("t", sec))}
	res := mustRun(t, Input{Workers: workers(1), Jobs: jobs}, Options{Horizon: 40 * sec})
	if res.Outcome != "horizon" || res.MakespanSeconds != 40 || res.SlotSeconds != 40 || res.JobsArrived != 1 {
		t.Errorf("outcome %s, makespan %g, slot-s %g, arrived %d; want horizon, 40, 40, 1",
			res.Outcome, res.MakespanSeconds, res.SlotSeconds, res.JobsArrived)
	}
	if len(res.Unfinished) != 1 || res.Unfinished[0].Running != 1 || res.Unfinished[0].Reason.Code != "" {
		t.Errorf("unfinished = %+v, want long with 1 running task and no pending reason", res.Unfinished)
	}
}

func TestRejectedJobIsAnErrorNamingIt(t *testing.T) {
	bad := job("typo", "x", 30*sec, task("t", sec))
	bad.Queue = "nope"
	_, err := Run(Input{Config: fifo(), Workers: workers(1), Jobs: []model.Job{job("ok", "x", 0, task("t", sec)), bad}, Start: t0}, Options{})
	if err == nil || !errors.Is(err, ErrRejected) || !errors.Is(err, engine.ErrUnknownQueue) || !strings.Contains(err.Error(), `"typo"`) {
		t.Fatalf("err = %v, want a rejection of job \"typo\" for its unknown queue", err)
	}
}

func TestInputErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		opt  Options
		want string
	}{
		{"unknown group-by", Input{Config: fifo()}, Options{GroupBy: "colour"}, "options.groupBy"},
		{"duplicate job", Input{Config: fifo(), Jobs: []model.Job{job("a", "", 0, task("t", sec)), job("a", "", 0, task("t", sec))}}, Options{}, "jobs[1].id"},
		{"duplicate worker", Input{Config: fifo(), Workers: append(workers(1), workers(1)...)}, Options{}, "workers[1]"},
		{"history of an unknown queue", Input{Config: fifo(), History: map[string]policy.History{"nope": {}}}, Options{}, `history["nope"]`},
		{"negative horizon", Input{Config: fifo()}, Options{Horizon: -sec}, "options.horizon"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(tc.in, tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
}

func TestCycleEveryAddsTicksOrBatches(t *testing.T) {
	jobs := []model.Job{job("a", "x", 3*sec, task("t", 5*sec))}
	tests := []struct {
		name           string
		opt            Options
		wait, makespan float64
		cycles         int
	}{
		// A cycle at the initial tick (0), at the arrival (3) and at the
		// completion (8); the tick due at 10s is not needed.
		{"ticks come on top of event cycles", Options{CycleEvery: 10 * sec}, 0, 8, 3},
		// Cycles at 0, 10, 20 s only: the job arriving at 3s starts at 10s (a
		// 7s wait), ends at 15s, and the engine reports it done at 20s.
		{"tick-only batches events until the next tick", Options{CycleEvery: 10 * sec, TickOnly: true}, 7, 20, 3},
		{"events only", Options{}, 0, 8, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := mustRun(t, Input{Workers: workers(1), Jobs: jobs}, tc.opt)
			if res.Wait.Max != tc.wait || res.MakespanSeconds != tc.makespan || res.SlotSeconds != 5 || res.Counts.Cycles != tc.cycles {
				t.Errorf("wait %gs, makespan %gs, slot-s %g, cycles %d; want %g, %g, 5, %d",
					res.Wait.Max, res.MakespanSeconds, res.SlotSeconds, res.Counts.Cycles, tc.wait, tc.makespan, tc.cycles)
			}
		})
	}
}

func TestTicksReachTimeBasedDecisions(t *testing.T) {
	// With ticks every 10s, a long idle stretch between events still gets
	// cycles: 0 (initial), 1 (arrival), 10…90 (ticks while the job runs),
	// 95 (completion).
	res := mustRun(t, Input{Workers: workers(1), Jobs: []model.Job{job("a", "x", sec, task("t", 94*sec))}},
		Options{CycleEvery: 10 * sec})
	if res.Counts.Cycles != 12 || res.MakespanSeconds != 95 {
		t.Errorf("cycles %d, makespan %g; want 12 and 95", res.Counts.Cycles, res.MakespanSeconds)
	}
}

func TestRunningAtStartCompletesAfterItsRemainingTime(t *testing.T) {
	jobs := []model.Job{job("a", "x", 0, task("t", 60*sec), task("u", 60*sec))}
	running := []engine.RestoreRunning{{Job: "a", Task: "t", Started: t0.Add(-45 * sec)}}
	res := mustRun(t, Input{Workers: workers(1), Jobs: jobs, Running: running}, Options{})
	// t has 15s left; u starts at 15s and runs 60s.
	if res.MakespanSeconds != 75 || res.SlotSeconds != 75 || res.Counts.Starts != 1 {
		t.Errorf("makespan %g, slot-s %g, starts %d; want 75, 75, 1", res.MakespanSeconds, res.SlotSeconds, res.Counts.Starts)
	}
}

// preemptPolicy is a test policy: groups are shares, share "hi" is served
// first and, when it waits and no slot is free, stops the newest tasks of
// other groups.
type preemptPolicy struct{}

func init() {
	policy.Register(policy.Kind{Name: "test-preempt", New: func(policy.Settings) (policy.Policy, error) { return preemptPolicy{}, nil }})
}

func (preemptPolicy) Name() string                   { return "test-preempt" }
func (preemptPolicy) GroupOf(j *model.Job) string    { return j.Share }
func (preemptPolicy) Account(string, int, time.Time) {}
func (preemptPolicy) Order() (policy.JobOrder, policy.TaskOrder) {
	return policy.ByPriorityThenAge, policy.ByDeclaration
}

func (preemptPolicy) Allocate(v *policy.View) policy.Plan {
	var order []int
	need := 0
	for i, g := range v.Groups {
		if g.Key == "hi" {
			order = append([]int{i}, order...)
			need = g.Waiting - v.Free
		} else {
			order = append(order, i)
		}
	}
	var stops []policy.Stop
	for i, g := range v.Groups {
		if g.Key == "hi" {
			continue
		}
		rt := v.RunningTasks(i)
		for k := len(rt) - 1; k >= 0 && need > 0; k-- {
			stops = append(stops, policy.Stop{Task: rt[k].ID, Reason: model.Because(model.ReasonPreempted, "hi waits")})
			need--
		}
	}
	return policy.Plan{Stops: stops, Alloc: &inOrder{order: order}}
}

type inOrder struct {
	order []int
	pos   int
}

func (a *inOrder) Next() (int, bool) {
	if a.pos < len(a.order) {
		return a.order[a.pos], true
	}
	return 0, false
}
func (a *inOrder) Started(int)                  {}
func (a *inOrder) Exhausted(int)                { a.pos++ }
func (a *inOrder) Why(int) (model.Reason, bool) { return model.Reason{}, false }

func TestStopCancelsThePendingCompletion(t *testing.T) {
	cfg := engine.Config{Queues: []engine.QueueConfig{{Name: "default", Policy: policy.Config{Kind: "test-preempt"}}}}
	jobs := []model.Job{job("lo", "lo", 0, task("t", 100*sec)), job("hi", "hi", 30*sec, task("t", 10*sec))}
	res := mustRun(t, Input{Config: cfg, Workers: workers(1), Jobs: jobs}, Options{})
	// lo runs 0-30, is stopped for hi (30-40), restarts at 40 and runs its
	// full 100s: its first completion, due at 100s, must be ignored.
	if res.MakespanSeconds != 140 || res.Counts.Stops != 1 || res.Counts.StopsByReason[model.ReasonPreempted] != 1 {
		t.Errorf("makespan %g, stops %+v; want 140 and one preemption", res.MakespanSeconds, res.Counts)
	}
	lo, hi := group(t, res, "lo"), group(t, res, "hi")
	if lo.SlotSeconds != 130 || hi.SlotSeconds != 10 || lo.Stops != 1 || lo.Starts != 2 {
		t.Errorf("lo %+v, hi %+v; want lo 130 slot-s over 2 starts, 1 stop; hi 10 slot-s", lo, hi)
	}
	if lo.Wait.Max != 10 || hi.Wait.Max != 0 {
		t.Errorf("lo waits %+v, hi waits %+v; want lo to wait 10s after the stop, hi none", lo.Wait, hi.Wait)
	}
}

func TestSeriesAndFairness(t *testing.T) {
	// Two slots. Share a submits first and takes both for 10s; b waits,
	// then runs alone from 10 to 20s.
	jobs := []model.Job{job("a", "a", 0, task("t0", 10*sec), task("t1", 10*sec)), job("b", "b", 0, task("t", 10*sec))}
	res := mustRun(t, Input{Workers: workers(2), Jobs: jobs}, Options{GroupBy: GroupByShare, SampleEvery: 5 * sec})
	s := res.Series
	wantT := []float64{0, 5, 10, 15, 20}
	wantJain := []float64{0.5, 0.5, 1, 1, 0} // Jain(2, 0) = 4/(2·4); b alone; nothing
	if fmt.Sprint(s.T) != fmt.Sprint(wantT) || fmt.Sprint(s.Jain) != fmt.Sprint(wantJain) {
		t.Errorf("series t=%v jain=%v, want t=%v jain=%v", s.T, s.Jain, wantT, wantJain)
	}
	if a, b := group(t, res, "a"), group(t, res, "b"); fmt.Sprint(a.Running, b.Running, b.Waiting) != "[2 2 0 0 0] [0 0 1 1 0] [1 1 0 0 0]" {
		t.Errorf("running a=%v b=%v, waiting b=%v", a.Running, b.Running, b.Waiting)
	}
	// Slot-seconds a=20, b=10: (30)²/(2·(400+100)) = 0.9.
	if f := res.Fairness; math.Abs(f.JainTimeAveraged-0.9) > 1e-12 || f.JainMeanOverTime != 0.75 || f.Samples != 4 {
		t.Errorf("fairness = %+v, want 0.9 time-averaged, 0.75 mean over 4 samples", f)
	}
	if a := group(t, res, "a"); math.Abs(a.BusyShare-2.0/3) > 1e-12 || a.UtilisationShare != 0.5 || a.MeanSlots != 1 {
		t.Errorf("group a = %+v, want busy share 2/3, utilisation share 0.5, mean slots 1", a)
	}
}

func TestGroupByPolicyGroupPrefixesQueuesWhenSeveral(t *testing.T) {
	cfg := engine.Config{Queues: []engine.QueueConfig{{Name: "a", Policy: policy.Config{Kind: "fifo"}},
		{Name: "b", Policy: policy.Config{Kind: "fifo"}}}}
	j1, j2 := job("1", "", 0, task("t", sec)), job("2", "", 0, task("t", sec))
	j1.Queue, j2.Queue = "a", "b"
	res := mustRun(t, Input{Config: cfg, Workers: workers(1), Jobs: []model.Job{j2, j1}}, Options{})
	var keys []string
	for _, g := range res.Groups {
		keys = append(keys, g.Key)
	}
	if want := []string{"a/" + policy.FIFOGroup, "b/" + policy.FIFOGroup}; fmt.Sprint(keys) != fmt.Sprint(want) {
		t.Errorf("groups = %v, want %v", keys, want)
	}
}

func TestProgressReportsTheEnd(t *testing.T) {
	var last [2]int
	calls := 0
	jobs := []model.Job{job("a", "", 0, task("t", sec)), job("b", "", sec, task("t", sec))}
	mustRun(t, Input{Workers: workers(1), Jobs: jobs}, Options{Progress: func(d, n int) { last = [2]int{d, n}; calls++ }})
	if last != [2]int{2, 2} || calls < 2 {
		t.Errorf("last progress %v after %d calls, want [2 2] after at least 2", last, calls)
	}
}
