package engine

import (
	"math"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
)

// What a policy remembers comes out of History in the form SetHistory takes
// back: an engine given another's history stands where that one stood.
func TestPolicyHistoryRoundTrips(t *testing.T) {
	cases := []struct {
		name string
		pol  policy.Config
	}{
		{"fairshare", policy.Config{Kind: "fairshare", Settings: &fairshare.Config{ShareDecaySeconds: 3600}}},
		{"priority", policy.Config{Kind: "priority", Settings: &priority.Config{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Queues: []QueueConfig{{Name: "default", Policy: tc.pol}}}
			e := engineWith(t, cfg, newWorker("w1").add(), newWorker("w2").add())
			mustApply(t, e, newJob("a").prio(5).task("x").task("y").submit())
			mustApply(t, e, newJob("b").prio(1).task("x").submit())
			e.Cycle(t0)
			later := t0.Add(10 * time.Minute)
			e.Cycle(later)
			h, ok := e.History("default")
			if !ok || len(h.Usage) == 0 {
				t.Fatalf("history %+v %v, want usage after 10 minutes of running", h, ok)
			}
			twin := engineWith(t, cfg)
			mustApply(t, twin, SetHistory{Queue: "default", History: h, At: later})
			got, _ := twin.History("default")
			for k, u := range h.Usage {
				if math.Abs(got.Usage[k]-u) > 1e-6*math.Max(1, u) {
					t.Errorf("usage of %s: %v after the round trip, want %v", k, got.Usage[k], u)
				}
			}
		})
	}
	if _, ok := engineWith(t, Config{}).History("default"); ok {
		t.Error("fifo remembers nothing, yet has a history")
	}
}
