package classload_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/classload"
	"github.com/allot-sched/allot/internal/model"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// class is one class of a test scenario: its percent, and how many of its
// tasks run and wait at time zero.
type class struct {
	name             string
	pct              int
	running, waiting int
}

// configFor maps requestor "<class>-..." to each class.
func configFor(cs []class) classload.Config {
	var cfg classload.Config
	for _, c := range cs {
		cfg.Classes = append(cfg.Classes, classload.LoadClass{Name: c.name, Percent: c.pct})
		cfg.RequestorMap = append(cfg.RequestorMap, classload.RequestorRule{Class: c.name, Pattern: "^" + c.name + "-"})
	}
	return cfg
}

func mustApply(t testing.TB, e *engine.Engine, ev engine.Event) {
	t.Helper()
	if err := e.Apply(ev); err != nil {
		t.Fatalf("apply %T: %v", ev, err)
	}
}

// newEngine builds an engine with one classload queue over n one-slot
// workers.
func newEngine(t testing.TB, n int, cfg classload.Config) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Config{Queues: []engine.QueueConfig{{Name: "q",
		Policy: policy.Config{Kind: "classload", Settings: &cfg}}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		mustApply(t, e, engine.AddWorker{Worker: model.Worker{Name: fmt.Sprintf("w%04d", i), Slots: 1,
			Capacity: model.Resources{MilliCPU: 1000, MemoryMB: 1024}}})
	}
	return e
}

// submit gives each class jobs jobs (requestor "<class>-user<k>") whose
// tasks together make the class's running and waiting counts, and restores
// the running ones, one minute apart, job by job.
func submit(t testing.TB, e *engine.Engine, cs []class, jobs int) {
	t.Helper()
	for _, c := range cs {
		for k := 0; k < jobs; k++ {
			run := c.running/jobs + btoi(k < c.running%jobs)
			wait := c.waiting/jobs + btoi(k < c.waiting%jobs)
			if run+wait == 0 {
				continue
			}
			j := model.Job{ID: fmt.Sprintf("%s-job%d", c.name, k), Queue: "q", Requestor: fmt.Sprintf("%s-user%d", c.name, k), Submitted: t0}
			for i := 0; i < run+wait; i++ {
				j.Tasks = append(j.Tasks, model.Task{Name: fmt.Sprintf("t%03d", i), Resources: model.Resources{MilliCPU: 1000},
					Duration: time.Duration(i+1) * time.Minute})
			}
			mustApply(t, e, engine.SubmitJob{Job: j})
			for i := 0; i < run; i++ {
				// The longest tasks are the last ones; restore those, so
				// the waiting tasks are the shorter ones.
				mustApply(t, e, engine.RestoreRunning{Job: j.ID, Task: j.Tasks[run+wait-1-i].Name, Started: t0.Add(time.Duration(i) * time.Minute)})
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// startsByClass counts the starts per class from the decisions' starts (by
// job ID) and cross-checks them with the per-group summary.
func startsByClass(t testing.TB, d *engine.Decisions, cs []class) []int {
	t.Helper()
	got := make([]int, len(cs))
	for _, s := range d.Starts {
		for i, c := range cs {
			if strings.HasPrefix(s.Job, c.name+"-") {
				got[i]++
			}
		}
	}
	for _, g := range d.Groups {
		for i, c := range cs {
			if g.Group == c.name && g.Starts != got[i] {
				t.Errorf("group %s summary says %d starts, the start list %d", c.name, g.Starts, got[i])
			}
		}
	}
	return got
}

func groupSummary(d *engine.Decisions, name string) (engine.GroupSummary, bool) {
	for _, g := range d.Groups {
		if g.Group == name {
			return g, true
		}
	}
	return engine.GroupSummary{}, false
}

// pendingReason returns the reason of the first pending entry of a class's
// jobs.
func pendingReason(d *engine.Decisions, class string) model.Reason {
	for _, p := range d.Pending {
		if strings.HasPrefix(p.Job, class+"-") {
			return p.Reason
		}
	}
	return model.Reason{}
}

func TestEngineSeedExamples(t *testing.T) {
	tests := []struct {
		name    string
		classes []class
		want    []int
		// reasons the first pending job of a class gives
		reasons map[string]model.Reason
	}{
		{
			name: "example 1",
			classes: []class{{"c0", 30, 200, 290}, {"c1", 25, 300, 230}, {"c2", 20, 0, 150},
				{"c3", 15, 100, 150}, {"c4", 10, 110, 90}, {"c5", 0, 0, 328}},
			want: []int{94, 0, 150, 46, 0, 0},
			reasons: map[string]model.Reason{
				"c0": {Code: model.ReasonNoFreeSlot},
				"c1": {Code: model.ReasonPolicyLimit, Message: "class c1 runs 300 tasks, above its entitlement 250 (25% of 1000 slots); no idle worker to loan"},
				"c4": {Code: model.ReasonPolicyLimit, Message: "class c4 runs 110 tasks, above its entitlement 100 (10% of 1000 slots); no idle worker to loan"},
				"c5": {Code: model.ReasonPolicyLimit, Message: "class c5 has a 0% load share: its tasks never start until its percentage is raised"},
			},
		},
		{
			name: "example 2",
			classes: []class{{"c0", 30, 200, 10}, {"c1", 25, 300, 230}, {"c2", 20, 0, 0},
				{"c3", 15, 100, 50}, {"c4", 10, 110, 90}},
			want: []int{10, 157, 0, 50, 73},
			reasons: map[string]model.Reason{
				"c1": {Code: model.ReasonPolicyLimit, Message: "class c1 runs 300 tasks, above its entitlement 250 (25% of 1000 slots); it starts 157 more (0 entitled, 157 on loan); no idle worker to loan"},
				"c4": {Code: model.ReasonPolicyLimit, Message: "class c4 runs 110 tasks, above its entitlement 100 (10% of 1000 slots); it starts 73 more (0 entitled, 73 on loan); no idle worker to loan"},
			},
		},
	}
	for _, tc := range tests {
		for _, jobs := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/%d jobs per class", tc.name, jobs), func(t *testing.T) {
				e := newEngine(t, 1000, configFor(tc.classes))
				submit(t, e, tc.classes, jobs)
				d := e.Cycle(t0.Add(time.Hour))
				if got := startsByClass(t, d, tc.classes); !slices.Equal(got, tc.want) {
					t.Fatalf("starts = %v, want %v", got, tc.want)
				}
				if len(d.Stops) != 0 {
					t.Errorf("stops = %v, want none", d.Stops)
				}
				for class, want := range tc.reasons {
					got := pendingReason(d, class)
					if got.Code != want.Code || (want.Message != "" && got.Message != want.Message) {
						t.Errorf("%s pending reason = %+v, want %+v", class, got, want)
					}
				}
				wantTargets := map[string]int{"c0": 300, "c1": 250, "c2": 200, "c3": 150, "c4": 100, "c5": 0}
				for _, g := range d.Groups {
					if g.Target != wantTargets[g.Group] {
						t.Errorf("group %s target = %d, want %d", g.Group, g.Target, wantTargets[g.Group])
					}
				}
			})
		}
	}
}

// TestEngineRoundRobinAcrossJobs checks the seed's task selection inside a
// class: jobs with the fewest running tasks go first, the longest task of a
// job first.
func TestEngineRoundRobinAcrossJobs(t *testing.T) {
	cfg := classload.Config{Classes: []classload.LoadClass{{Name: "a", Percent: 100}}}
	e := newEngine(t, 10, cfg)
	for k, run := range []int{4, 0} {
		j := model.Job{ID: fmt.Sprintf("a-job%d", k), Queue: "q", Requestor: "anyone", Submitted: t0}
		for i := 0; i < 10; i++ {
			j.Tasks = append(j.Tasks, model.Task{Name: fmt.Sprintf("t%d", i), Resources: model.Resources{MilliCPU: 1000},
				Duration: time.Duration(i+1) * time.Minute})
		}
		mustApply(t, e, engine.SubmitJob{Job: j})
		for i := 0; i < run; i++ {
			mustApply(t, e, engine.RestoreRunning{Job: j.ID, Task: j.Tasks[i].Name})
		}
	}
	d := e.Cycle(t0)
	perJob := map[string][]string{}
	for _, s := range d.Starts {
		perJob[s.Job] = append(perJob[s.Job], s.Task)
	}
	// 6 idle workers: job1 catches up to job0's 4 running, then they
	// alternate; each job starts its longest remaining tasks first.
	if got, want := perJob["a-job1"], []string{"t9", "t8", "t7", "t6", "t5"}; !slices.Equal(got, want) {
		t.Errorf("a-job1 starts %v, want %v", got, want)
	}
	if got, want := perJob["a-job0"], []string{"t9"}; !slices.Equal(got, want) {
		t.Errorf("a-job0 starts %v, want %v", got, want)
	}
}

func TestEngineSetPolicyFollowsNewTargets(t *testing.T) {
	cs := []class{{"a", 50, 0, 200}, {"b", 50, 0, 200}}
	e := newEngine(t, 100, configFor(cs))
	submit(t, e, cs, 1)
	d := e.Cycle(t0)
	if got := startsByClass(t, d, cs); !slices.Equal(got, []int{50, 50}) {
		t.Fatalf("first cycle starts = %v, want [50 50]", got)
	}

	cs[0].pct, cs[1].pct = 80, 20
	mustApply(t, e, engine.SetPolicy{Queue: "q", Policy: policy.Config{Kind: "classload", Settings: ptr(configFor(cs))}, At: t0.Add(time.Minute)})
	for _, s := range d.Starts {
		mustApply(t, e, engine.FinishTask{Job: s.Job, Task: s.Task, Outcome: model.Succeeded, At: t0.Add(2 * time.Minute)})
	}
	d = e.Cycle(t0.Add(2 * time.Minute))
	if got := startsByClass(t, d, cs); !slices.Equal(got, []int{80, 20}) {
		t.Fatalf("after SetPolicy starts = %v, want [80 20]", got)
	}
	for name, want := range map[string]int{"a": 80, "b": 20} {
		if g, _ := groupSummary(d, name); g.Target != want {
			t.Errorf("group %s target = %d, want %d", name, g.Target, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// rebalanceScenario: a and b were 50/50 and run 50 tasks each with more
// waiting; the percentages become 80/20, so b runs 30 above its new target.
func rebalanceScenario(t *testing.T, threshold int, minimum time.Duration) (*engine.Engine, []class) {
	t.Helper()
	cs := []class{{"a", 80, 50, 100}, {"b", 20, 50, 100}}
	cfg := configFor(cs)
	cfg.RebalanceThreshold, cfg.RebalanceMinimumDuration = threshold, minimum
	e := newEngine(t, 100, cfg)
	submit(t, e, cs, 1)
	return e, cs
}

func TestEngineRebalance(t *testing.T) {
	t.Run("not before the minimum duration, then the newest tasks stop", func(t *testing.T) {
		e, cs := rebalanceScenario(t, 10, 5*time.Minute)
		for _, at := range []time.Duration{0, 2 * time.Minute, 4*time.Minute + 59*time.Second} {
			d := e.Cycle(t0.Add(time.Hour + at))
			if len(d.Stops) != 0 || len(d.Starts) != 0 {
				t.Fatalf("at +%v: stops %d, starts %d; want none before the minimum duration", at, len(d.Stops), len(d.Starts))
			}
		}
		d := e.Cycle(t0.Add(time.Hour + 5*time.Minute))
		if len(d.Stops) != 30 {
			t.Fatalf("stops = %d, want 30", len(d.Stops))
		}
		// b's tasks were restored longest first, one minute apart: the
		// newest 30 are the 30 shortest of its running ones, t100..t129.
		var stopped []string
		for _, s := range d.Stops {
			if s.Job != "b-job0" || s.Reason.Code != model.ReasonRebalanced {
				t.Fatalf("stop %+v, want b-job0 rebalanced", s)
			}
			stopped = append(stopped, s.Task)
		}
		slices.Sort(stopped)
		var want []string
		for i := 100; i < 130; i++ {
			want = append(want, fmt.Sprintf("t%03d", i))
		}
		if !slices.Equal(stopped, want) {
			t.Errorf("stopped %v, want the newest %v", stopped, want)
		}
		if msg := d.Stops[0].Reason.Message; !strings.Contains(msg, `class b runs 50 tasks, above its target 20`) {
			t.Errorf("stop reason %q does not name the class, its running count and target", msg)
		}
		if got := startsByClass(t, d, cs); !slices.Equal(got, []int{30, 0}) {
			t.Errorf("starts = %v, want [30 0]: a starts toward its target", got)
		}
		// The clock restarted: the next cycle stops nothing.
		if d := e.Cycle(t0.Add(time.Hour + 6*time.Minute)); len(d.Stops) != 0 {
			t.Errorf("the cycle after a rebalance stopped %d tasks", len(d.Stops))
		}
	})
	t.Run("history states the time already above the threshold", func(t *testing.T) {
		e, _ := rebalanceScenario(t, 10, 5*time.Minute)
		mustApply(t, e, engine.SetHistory{Queue: "q", History: policy.History{RebalanceExceededFor: 5 * time.Minute}, At: t0.Add(time.Hour)})
		if d := e.Cycle(t0.Add(time.Hour)); len(d.Stops) != 30 {
			t.Fatalf("stops = %d, want 30 at once", len(d.Stops))
		}
	})
	t.Run("threshold 0 disables rebalancing", func(t *testing.T) {
		e, _ := rebalanceScenario(t, 0, 0)
		for _, at := range []time.Duration{0, time.Hour, 24 * time.Hour} {
			if d := e.Cycle(t0.Add(at)); len(d.Stops) != 0 {
				t.Fatalf("at +%v: %d stops with rebalancing off", at, len(d.Stops))
			}
		}
	})
	t.Run("a spread at or below the threshold never rebalances", func(t *testing.T) {
		// spread: a +30, b −30 = 60.
		e, _ := rebalanceScenario(t, 60, 0)
		if d := e.Cycle(t0.Add(time.Hour)); len(d.Stops) != 0 {
			t.Fatalf("%d stops at a spread equal to the threshold", len(d.Stops))
		}
	})
}
