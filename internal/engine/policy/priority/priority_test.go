package priority_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/model"
)

// TestPriorityWeightsDivideSlots checks seed 001's worked figures for the
// Usage algorithm: ideal = all × weight / total weight, rounded up, and the
// allocation when all jobs arrive together.
func TestPriorityWeightsDivideSlots(t *testing.T) {
	type jobSpec struct {
		id   string
		prio int
	}
	cases := []struct {
		name        string
		slots       int
		aggregation bool
		jobs        []jobSpec
		wantTarget  map[string]int
		wantStarts  map[string]int
	}{
		{
			name:  "weights 2, 2 and 4 on eight engines get 2, 2 and 4",
			slots: 8, jobs: []jobSpec{{"a", 2}, {"b", 2}, {"c", 4}},
			wantTarget: map[string]int{"a": 2, "b": 2, "c": 4},
			wantStarts: map[string]int{"a": 2, "b": 2, "c": 4},
		},
		{
			name:  "100 engines, one level-6 and one level-4 job get 60 and 40",
			slots: 100, jobs: []jobSpec{{"p6", 6}, {"p4", 4}},
			wantTarget: map[string]int{"p6": 60, "p4": 40},
			wantStarts: map[string]int{"p6": 60, "p4": 40},
		},
		{
			// 100×6/14 = 42.9 → 43; 100×4/14 = 28.6 → 29. The ideals sum to
			// 101, so the job last in usage order (equal usage: the newest)
			// gets one less.
			name:  "a second level-4 job: 43, 29 and 29 without aggregation",
			slots: 100, jobs: []jobSpec{{"p6", 6}, {"p4a", 4}, {"p4b", 4}},
			wantTarget: map[string]int{"p6": 43, "p4a": 29, "p4b": 29},
			wantStarts: map[string]int{"p6": 43, "p4a": 29, "p4b": 28},
		},
		{
			name:  "a second level-4 job: 60, 20 and 20 with aggregation",
			slots: 100, aggregation: true, jobs: []jobSpec{{"p6", 6}, {"p4a", 4}, {"p4b", 4}},
			wantTarget: map[string]int{"p6": 60, "p4a": 20, "p4b": 20},
			wantStarts: map[string]int{"p6": 60, "p4a": 20, "p4b": 20},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGrid(t, tc.slots, priorityCfg(priority.Config{Aggregation: tc.aggregation}))
			for _, j := range tc.jobs {
				g.submit(newJob(j.id, 200).prio(j.prio))
			}
			d := g.cycle()
			if got := targets(d); fmt.Sprint(got) != fmt.Sprint(tc.wantTarget) {
				t.Errorf("targets = %v, want %v", got, tc.wantTarget)
			}
			if got := startsByJob(d); fmt.Sprint(got) != fmt.Sprint(tc.wantStarts) {
				t.Errorf("starts = %v, want %v", got, tc.wantStarts)
			}
		})
	}
}

// TestPriorityNewJobLowersOthersIdeal adds the second level-4 job to a grid
// already running 60/40: the new job's usage starts as if it had run at its
// ideal share, below the others' per unit of weight, so it takes the slots
// the others release until everyone is at the new ideals.
func TestPriorityNewJobLowersOthersIdeal(t *testing.T) {
	g := newGrid(t, 100, priorityCfg(priority.Config{}))
	g.submit(newJob("p6", 300).prio(6), newJob("p4a", 300).prio(4))
	d := g.cycle()
	if got := startsByJob(d); got["p6"] != 60 || got["p4a"] != 40 {
		t.Fatalf("before: starts = %v, want p6:60 p4a:40", got)
	}
	g.now = g.now.Add(time.Minute)
	g.submit(newJob("p4b", 300).prio(4))
	g.finish("p6", 20)
	g.finish("p4a", 20)
	d = g.cycle()
	if got := targets(d); got["p6"] != 43 || got["p4a"] != 29 || got["p4b"] != 29 {
		t.Errorf("targets = %v, want p6:43 p4a:29 p4b:29", got)
	}
	// 40 slots were freed; p4b is furthest below its share and takes its
	// 29; p6 (40 of 43) and p4a (20 of 29) take the rest by usage.
	if got := startsByJob(d); got["p4b"] != 29 || got["p6"]+got["p4a"] != 11 {
		t.Errorf("starts = %v, want p4b:29 and 11 for the others", got)
	}
	r, ok := pendingReason(d, "p4b")
	if !ok || r.Code != model.ReasonPolicyLimit || !strings.Contains(r.Message, "runs 29 of its ideal 29 slots (weight 4 of 14)") {
		t.Errorf("p4b reason = %+v, want policy_limit naming 29 of 29 and weight 4 of 14", r)
	}
}

// TestPriorityZeroIsSuspended: a priority-0 job gets no slot, even when
// slots are idle, and says so.
func TestPriorityZeroIsSuspended(t *testing.T) {
	g := newGrid(t, 4, priorityCfg(priority.Config{}))
	g.submit(newJob("z", 3).prio(0), newJob("a", 1).prio(3))
	d := g.cycle()
	if got := startsByJob(d); got["z"] != 0 || got["a"] != 1 {
		t.Fatalf("starts = %v, want only a:1", got)
	}
	r, _ := pendingReason(d, "z")
	if r.Code != model.ReasonSuspended {
		t.Errorf("z reason = %+v, want %s", r, model.ReasonSuspended)
	}
	if got := targets(d)["z"]; got != 0 {
		t.Errorf("z target = %d, want 0", got)
	}
}

// TestPriorityLeftoverGoesRoundRobin: a job that cannot use its ideal (few
// tasks, maxSlots) leaves its slots to the others in a second round.
func TestPriorityLeftoverGoesRoundRobin(t *testing.T) {
	g := newGrid(t, 10, priorityCfg(priority.Config{}))
	g.submit(newJob("big", 2).prio(9), newJob("capped", 50).prio(9).maxSlots(3), newJob("small", 50).prio(1))
	d := g.cycle()
	// Ideals: 10×9/19 = 4.7 → 5 but big has 2 tasks and capped maxSlots 3;
	// small's ideal is 1. The 4 slots left go round-robin: only small can
	// take them.
	if got := startsByJob(d); got["big"] != 2 || got["capped"] != 3 || got["small"] != 5 {
		t.Errorf("starts = %v, want big:2 capped:3 small:5", got)
	}
	if got := targets(d); got["big"] != 2 || got["capped"] != 3 || got["small"] != 1 {
		t.Errorf("targets = %v, want big:2 capped:3 small:1", got)
	}
}

// TestTimeAlgorithmServesCreationOrder: each job takes all it can use, in
// creation order, and keeps its place whatever its priority (without serial
// priority).
func TestTimeAlgorithmServesCreationOrder(t *testing.T) {
	g := newGrid(t, 10, priorityCfg(priority.Config{Algorithm: priority.AlgorithmTime}))
	g.submit(newJob("first", 4).prio(1))
	g.now = g.now.Add(time.Second)
	g.submit(newJob("second", 20).prio(9))
	g.now = g.now.Add(time.Second)
	g.submit(newJob("third", 20).prio(9))
	d := g.cycle()
	if got := startsByJob(d); got["first"] != 4 || got["second"] != 6 || got["third"] != 0 {
		t.Fatalf("starts = %v, want first:4 second:6 third:0", got)
	}
	// first ends; its slots go to second (still ahead of third), not by usage.
	g.now = g.now.Add(time.Minute)
	g.finish("first", 4)
	d = g.cycle()
	if got := startsByJob(d); got["second"] != 4 || got["third"] != 0 {
		t.Errorf("after first ends: starts = %v, want second:4", got)
	}
	r, _ := pendingReason(d, "third")
	if r.Code != model.ReasonPolicyLimit || !strings.Contains(r.Message, "creation order") {
		t.Errorf("third reason = %+v, want policy_limit naming creation order", r)
	}
}

// TestSerialPriority: higher levels are served first, with the Usage or
// Time algorithm inside a level; lower levels get only what the levels
// above cannot use.
func TestSerialPriority(t *testing.T) {
	cases := []struct {
		name    string
		algo    string
		serial  bool
		hiTasks int
		want    map[string]int
	}{
		// Two level-7 jobs saturate the pool: usage splits it evenly.
		{"usage inside the top level", priority.AlgorithmUsage, true, 8, map[string]int{"hi1": 5, "hi2": 5}},
		// Time inside a level: the older level-7 job takes all it can.
		{"time inside the top level", priority.AlgorithmTime, true, 8, map[string]int{"hi1": 8, "hi2": 2}},
		// Level 7 uses 6; level 5 takes its 2 and level 3 the last 2.
		{"lower levels get what higher ones leave", priority.AlgorithmUsage, true, 3, map[string]int{"hi1": 3, "hi2": 3, "mid": 2, "low": 2}},
		// Without serial priority, weights 7, 7, 5 and 3 of 22 share the
		// pool: ideals 4, 4, 2 (mid has 2 tasks) and 2, served oldest first
		// at equal usage, so hi2 gets the last 2.
		{"without serial priority every level gets a share", priority.AlgorithmUsage, false, 8, map[string]int{"low": 2, "mid": 2, "hi1": 4, "hi2": 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGrid(t, 10, priorityCfg(priority.Config{Algorithm: tc.algo, SerialPriority: tc.serial}))
			g.submit(newJob("low", 20).prio(3))
			g.now = g.now.Add(time.Second)
			g.submit(newJob("mid", 2).prio(5))
			g.now = g.now.Add(time.Second)
			g.submit(newJob("hi1", tc.hiTasks).prio(7))
			g.now = g.now.Add(time.Second)
			g.submit(newJob("hi2", tc.hiTasks).prio(7))
			d := g.cycle()
			if got := startsByJob(d); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("starts = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestUsageConvergesToWeights runs many rounds of one-minute tasks: the
// ideals (rounded up) overshoot the pool, and the usage ordering rotates who
// gets one slot less so each job's slot-time over the window matches its
// weight.
func TestUsageConvergesToWeights(t *testing.T) {
	cases := []struct {
		name  string
		slots int
		prios map[string]int
	}{
		{"weights 2 and 3 on 7 slots", 7, map[string]int{"a": 2, "b": 3}},
		{"weights 6, 4 and 4 on 100 slots", 100, map[string]int{"p6": 6, "p4a": 4, "p4b": 4}},
		{"weights 1, 1 and 1 on 10 slots", 10, map[string]int{"x": 1, "y": 1, "z": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const rounds, measured = 90, 60 // minutes; the window is 10
			g := newGrid(t, tc.slots, priorityCfg(priority.Config{}))
			total := 0.0
			ids := make([]string, 0, len(tc.prios))
			for id, p := range tc.prios {
				ids = append(ids, id)
				total += float64(p)
			}
			for _, id := range sortedKeys(tc.prios) {
				g.submit(newJob(id, rounds*tc.slots).prio(tc.prios[id]).dur(time.Minute))
			}
			got := map[string]int{}
			for r := 0; r < rounds; r++ {
				d := g.cycle()
				if r >= rounds-measured {
					for id, n := range startsByJob(d) {
						got[id] += n
					}
				}
				g.advance(g.now.Add(time.Minute))
			}
			for _, id := range ids {
				avg := float64(got[id]) / measured
				want := float64(tc.slots) * float64(tc.prios[id]) / total
				t.Logf("job %s: %.2f slots on average, weight share %.2f", id, avg, want)
				if d := avg - want; d > 0.25 || d < -0.25 {
					t.Errorf("job %s averaged %.2f slots over the last %d rounds, want %.2f (weight share)", id, avg, measured, want)
				}
			}
		})
	}
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestHistorySetsUsage: usage handed over as history (a scenario's state, or
// the server's store after a restart) orders jobs like usage the policy
// measured itself: the job that used the most goes last and takes the
// rounding shortfall.
func TestHistorySetsUsage(t *testing.T) {
	for _, withHistory := range []bool{false, true} {
		g := newGrid(t, 10, priorityCfg(priority.Config{}))
		if withHistory {
			g.apply(engine.SetHistory{Queue: "q", History: policy.History{Usage: map[string]float64{"x": 6000}}, At: t0})
		}
		g.submit(newJob("x", 10).prio(5), newJob("y", 10).prio(5), newJob("z", 10).prio(5))
		got := startsByJob(g.cycle())
		want := map[string]int{"x": 4, "y": 4, "z": 2}
		if withHistory {
			want = map[string]int{"x": 2, "y": 4, "z": 4}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("history=%v: starts = %v, want %v", withHistory, got, want)
		}
	}
}
