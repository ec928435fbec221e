package priority_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy/sla"
	"github.com/allot-sched/allot/internal/model"
)

func groups(kv ...any) []sla.Group {
	var out []sla.Group
	for i := 0; i < len(kv); i += 2 {
		out = append(out, sla.Group{Name: kv[i].(string), Value: kv[i+1].(float64)})
	}
	return out
}

// TestSLASplitsSlots checks seed 001's SLA figures: targets first, the rest
// by SLA value rounded up; too few slots, everything by value.
func TestSLASplitsSlots(t *testing.T) {
	type jobSpec struct {
		id, group string
		tasks     int
	}
	many := func(ids ...string) []jobSpec {
		var out []jobSpec
		for _, id := range ids {
			out = append(out, jobSpec{id, id, 200})
		}
		return out
	}
	cases := []struct {
		name       string
		groups     []sla.Group
		slots      int
		jobs       []jobSpec
		wantTarget map[string]int
		wantStarts map[string]int
	}{
		{
			// a=20, b=30, c=50 and nine slots to spare: 9×20/100 = 1.8 → 2,
			// 2.7 → 3, 4.5 → 5. The ideals 22, 33, 55 sum to 110 on 109
			// slots: one group gets one less (the last in usage order).
			name:   "nine spare slots split 2, 3 and 5",
			groups: groups("a", 20.0, "b", 30.0, "c", 50.0), slots: 109, jobs: many("a", "b", "c"),
			wantTarget: map[string]int{"a": 22, "b": 33, "c": 55},
			wantStarts: map[string]int{"a": 22, "b": 33, "c": 54},
		},
		{
			// Fractions of 109: 21.8 → 21, 32.7 → 32, 54.5 → 54; the 2
			// left split 0.4 → 1, 0.6 → 1, 1.0 → 1.
			name:   "fractions of the logged-in slots",
			groups: groups("a", 0.2, "b", 0.3, "c", 0.5), slots: 109, jobs: many("a", "b", "c"),
			wantTarget: map[string]int{"a": 22, "b": 33, "c": 55},
			wantStarts: map[string]int{"a": 22, "b": 33, "c": 54},
		},
		{
			name:   "too few slots: split by SLA value",
			groups: groups("a", 20.0, "b", 30.0, "c", 50.0), slots: 50, jobs: many("a", "b", "c"),
			wantTarget: map[string]int{"a": 10, "b": 15, "c": 25},
			wantStarts: map[string]int{"a": 10, "b": 15, "c": 25},
		},
		{
			// a can use only 5 of its 20: b and c share the other 95 − 80
			// = 15 by 30:50 → 5.6 → 6 and 9.4 → 10.
			name:   "a group that needs less than its SLA leaves the rest",
			groups: groups("a", 20.0, "b", 30.0, "c", 50.0), slots: 100,
			jobs:       []jobSpec{{"a", "a", 5}, {"b", "b", 200}, {"c", "c", 200}},
			wantTarget: map[string]int{"a": 5, "b": 36, "c": 60},
			wantStarts: map[string]int{"a": 5, "b": 36, "c": 59},
		},
		{
			// An idle group's SLA is not held back: b and c divide all.
			name:   "an idle group takes nothing",
			groups: groups("a", 20.0, "b", 30.0, "c", 50.0), slots: 100, jobs: many("b", "c"),
			wantTarget: map[string]int{"b": 38, "c": 63},
			wantStarts: map[string]int{"b": 38, "c": 62},
		},
		{
			// Jobs of one group split its ideal evenly: b's 33 → 17 + 16.
			name:   "jobs of one group share its slots",
			groups: groups("a", 20.0, "b", 30.0, "c", 50.0), slots: 109,
			jobs:       []jobSpec{{"a", "a", 200}, {"b1", "b", 200}, {"b2", "b", 200}, {"c", "c", 200}},
			wantTarget: map[string]int{"a": 22, "b1": 17, "b2": 16, "c": 55},
			wantStarts: map[string]int{"a": 22, "b1": 17, "b2": 16, "c": 54},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGrid(t, tc.slots, slaCfg(sla.Config{Groups: tc.groups}))
			for _, j := range tc.jobs {
				g.submit(newJob(j.id, j.tasks).sla(j.group))
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

// TestSLAUsageCorrectsRounding: over many rounds of one-minute tasks, the
// group that got one slot less is served earlier next time, so each group's
// average approaches its exact share (21.8, 32.7, 54.5 of 109).
func TestSLAUsageCorrectsRounding(t *testing.T) {
	const rounds, measured = 90, 60
	g := newGrid(t, 109, slaCfg(sla.Config{Groups: groups("a", 20.0, "b", 30.0, "c", 50.0)}))
	for _, id := range []string{"a", "b", "c"} {
		g.submit(newJob(id, rounds*109).sla(id).dur(time.Minute))
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
	for id, want := range map[string]float64{"a": 21.8, "b": 32.7, "c": 54.5} {
		avg := float64(got[id]) / measured
		t.Logf("group %s: %.2f slots on average, exact share %.2f", id, avg, want)
		if d := avg - want; d > 0.25 || d < -0.25 {
			t.Errorf("group %s averaged %.2f slots, want %.2f", id, avg, want)
		}
	}
}

// TestSLAPreemption: an idle group's slots go to others; when it gets work,
// SLA preemption stops tasks of the groups above their SLA to restore it,
// and without preemption it waits for tasks to end.
func TestSLAPreemption(t *testing.T) {
	for _, preempt := range []bool{true, false} {
		t.Run(fmt.Sprintf("preemption=%v", preempt), func(t *testing.T) {
			g := newGrid(t, 10, slaCfg(sla.Config{Groups: groups("a", 4.0, "b", 6.0), Preemption: preempt}))
			g.submit(newJob("busy", 30).sla("b").dur(30 * time.Minute))
			if d := g.cycle(); len(d.Starts) != 10 {
				t.Fatalf("b starts = %d, want all 10 while a is idle", len(d.Starts))
			}
			g.advance(t0.Add(5 * time.Minute))
			g.submit(newJob("late", 10).sla("a").dur(30 * time.Minute))
			d := g.cycle()
			if !preempt {
				if len(d.Stops) != 0 {
					t.Fatalf("stops = %v without SLA preemption", d.Stops)
				}
				// a waits for b's tasks to end, then is served first.
				g.advance(t0.Add(30 * time.Minute))
				d = g.cycle()
				if got := startsByJob(d); got["late"] != 4 || got["busy"] != 6 {
					t.Errorf("starts after b's tasks end = %v, want late:4 busy:6 (the SLAs)", got)
				}
				return
			}
			// a's SLA is 4: b runs 10, 4 above its SLA of 6.
			if got := stopsByJob(d); got["busy"] != 4 {
				t.Fatalf("stops = %v, want busy:4", got)
			}
			for _, s := range d.Stops {
				if s.Reason.Code != model.ReasonPreempted || !strings.Contains(s.Reason.Message, `SLA group "a"`) {
					t.Errorf("stop reason = %+v", s.Reason)
				}
			}
			if got := startsByJob(d); got["late"] != 4 {
				t.Fatalf("starts = %v, want late:4", got)
			}
			// Both at their SLA: no further preemption.
			g.advance(t0.Add(6 * time.Minute))
			if d := g.cycle(); len(d.Stops) != 0 {
				t.Errorf("preempted again: %v", d.Stops)
			}
		})
	}
}

// TestSLAJobChecks: a job without a valid SLA group is rejected at
// submission by CheckJob.
func TestSLAJobChecks(t *testing.T) {
	cfg := &sla.Config{Groups: groups("a", 1.0, "b", 2.0)}
	cases := []struct {
		group   string
		wantErr string
	}{
		{"a", ""},
		{"", "slaGroup: required by the sla policy (groups: a, b)"},
		{"z", `slaGroup: "z" is not an SLA group (groups: a, b)`},
	}
	for _, tc := range cases {
		err := cfg.CheckJob(&model.Job{ID: "j", SLAGroup: tc.group})
		if got := fmt.Sprint(err); (tc.wantErr == "" && err != nil) || (tc.wantErr != "" && got != tc.wantErr) {
			t.Errorf("CheckJob(%q) = %v, want %q", tc.group, err, tc.wantErr)
		}
	}
}
