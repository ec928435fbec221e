package priority_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/engine/policy/sla"
	"github.com/allot-sched/allot/internal/model"
)

func TestPriorityConfigValidate(t *testing.T) {
	ten := func(k int, w float64) []float64 {
		ws := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
		ws[k] = w
		return ws
	}
	cases := []struct {
		name    string
		cfg     *priority.Config
		wantErr string // "" for valid; else the error's exact text
	}{
		{"nil is the defaults", nil, ""},
		{"empty is the defaults", &priority.Config{}, ""},
		{"custom weights", &priority.Config{Levels: 3, Weights: []float64{0, 1, 5}}, ""},
		{"too few weights", &priority.Config{Weights: []float64{0, 1, 2, 3, 4}},
			"priority.weights: has 5 entries, want 10 (one per level)"},
		{"negative weight", &priority.Config{Weights: ten(3, -1)}, "priority.weights[3]: must not be negative"},
		{"NaN weight", &priority.Config{Weights: ten(4, math.NaN())}, "priority.weights[4]: must be a finite number"},
		{"level 0 weight", &priority.Config{Weights: ten(0, 1)},
			"priority.weights[0]: level 0 is suspended, so its weight must be 0 (got 1)"},
		{"all zero", &priority.Config{Levels: 2, Weights: []float64{0, 0}},
			"priority.weights: every weight is 0, so every job would be suspended"},
		{"one level", &priority.Config{Levels: 1},
			"priority.levels: 1 is too few; want at least 2 (level 0 is suspended)"},
		{"too many levels", &priority.Config{Levels: 5000}, "priority.levels: 5000 is too many; want at most 1000"},
		{"unknown algorithm", &priority.Config{Algorithm: "fair"},
			`priority.algorithm: unknown algorithm "fair" (want "usage" or "time")`},
		{"aggregation with time", &priority.Config{Algorithm: "time", Aggregation: true},
			`priority.aggregation: applies to the "usage" algorithm only, not "time"`},
		{"negative window", &priority.Config{UsageWindow: -time.Second}, "priority.usageWindow: must not be negative (got -1s)"},
		{"huge window", &priority.Config{UsageWindow: 48 * time.Hour},
			"priority.usageWindow: 48h0m0s is longer than the maximum 24h0m0s"},
		{"negative delay", &priority.Config{PreemptDelay: -time.Second}, "priority.preemptDelay: must not be negative (got -1s)"},
		{"percent above 100", &priority.Config{PreemptablePercent: 101}, "priority.preemptablePercent: must be 0-100 (got 101)"},
		{"negative threshold", &priority.Config{PreemptThreshold: -time.Minute},
			"priority.preemptThreshold: must not be negative (got -1m0s)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if got := fmt.Sprint(err); (tc.wantErr == "") != (err == nil) || (err != nil && got != tc.wantErr) {
				t.Errorf("Validate() = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestPriorityConfigDefaults(t *testing.T) {
	got := (*priority.Config)(nil).WithDefaults()
	if got.Levels != 10 || fmt.Sprint(got.Weights) != "[0 1 2 3 4 5 6 7 8 9]" || got.Algorithm != "usage" ||
		got.UsageWindow != 10*time.Minute || got.PreemptThreshold != 30*time.Minute || got.PreemptablePercent != 0 {
		t.Errorf("defaults = %+v", got)
	}
	if got := (&priority.Config{Levels: 4}).WithDefaults(); fmt.Sprint(got.Weights) != "[0 1 2 3]" {
		t.Errorf("linear weights for 4 levels = %v", got.Weights)
	}
}

func TestPriorityCheckJob(t *testing.T) {
	cases := []struct {
		cfg     *priority.Config
		prio    int
		wantErr string
	}{
		{nil, 9, ""},
		{nil, 0, ""},
		{nil, 12, "priority: 12 is outside levels 0-9"},
		{nil, -1, "priority: -1 is outside levels 0-9"},
		{&priority.Config{Levels: 20}, 12, ""},
	}
	for _, tc := range cases {
		err := tc.cfg.CheckJob(&model.Job{ID: "j", Priority: tc.prio})
		if got := fmt.Sprint(err); (tc.wantErr == "") != (err == nil) || (err != nil && got != tc.wantErr) {
			t.Errorf("CheckJob(priority %d) = %v, want %q", tc.prio, err, tc.wantErr)
		}
	}
}

func TestSLAConfigValidate(t *testing.T) {
	cases := []struct {
		name    string
		cfg     *sla.Config
		wantErr string
	}{
		{"counts", &sla.Config{Groups: groups("a", 10.0, "b", 12.0, "c", 20.0)}, ""},
		{"fractions", &sla.Config{Groups: groups("a", .25, "b", .5, "c", .1)}, ""},
		{"nil", nil, "sla.groups: at least one group is required"},
		{"no groups", &sla.Config{}, "sla.groups: at least one group is required"},
		{"mixed", &sla.Config{Groups: groups("a", 10.0, "b", 12.0, "c", .5)},
			`sla.groups: mixes slot counts and fractions (groups[0] "a" is 10 slots, groups[2] "c" the fraction 0.5)`},
		{"fraction above 1", &sla.Config{Groups: groups("a", .2, "b", .3, "c", 1.5)},
			"sla.groups[2].value: a fraction must be between 0 and 1 (exclusive), and a slot count a whole number (got 1.5)"},
		{"zero", &sla.Config{Groups: groups("a", 0.0)}, "sla.groups[0].value: must be positive (got 0)"},
		{"negative", &sla.Config{Groups: groups("a", 3.0, "b", -2.0)}, "sla.groups[1].value: must be positive (got -2)"},
		{"no name", &sla.Config{Groups: groups("", 3.0)}, "sla.groups[0].name: required"},
		{"duplicate", &sla.Config{Groups: groups("a", 3.0, "a", 2.0)},
			`sla.groups[1].name: group "a" is already defined by groups[0]`},
		{"negative window", &sla.Config{Groups: groups("a", 3.0), UsageWindow: -time.Minute},
			"sla.usageWindow: must not be negative (got -1m0s)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if got := fmt.Sprint(err); (tc.wantErr == "") != (err == nil) || (err != nil && got != tc.wantErr) {
				t.Errorf("Validate() = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestFactoryRejectsBadConfig: the registered factories validate, and the
// engine reports the error under the queue's policy path.
func TestFactoryRejectsBadConfig(t *testing.T) {
	cases := []struct {
		cfg  policy.Config
		want string
	}{
		{policy.Config{Kind: "sla"}, "queues[0].policy.sla.groups: at least one group is required"},
		{priorityCfg(priority.Config{PreemptablePercent: -5}), "queues[0].policy.priority.preemptablePercent: must be 0-100 (got -5)"},
	}
	for _, tc := range cases {
		_, err := engine.New(engine.Config{Queues: []engine.QueueConfig{{Name: "q", Policy: tc.cfg}}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("engine.New(%s) = %v, want %q", tc.cfg.Kind, err, tc.want)
		}
	}
	if _, err := engine.New(engine.Config{Queues: []engine.QueueConfig{{Name: "q", Policy: policy.Config{Kind: "priority"}}}}); err != nil {
		t.Errorf("priority with no block (defaults): %v", err)
	}
}
