package fairshare_test

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
)

// Share a fills 10 slots with hour-long tasks; share b arrives at 60 s with
// 10 tasks. Without preemption b waits an hour. With it, the cycle at 60 s
// stops a's 5 newest tasks and starts 5 of b's: both at their fair share of
// 5. Weighted (a 0.5, b 1), the fair shares are 6.67 and 3.33: b gets
// floor(3.33) = 3, a keeps ceil(6.67) = 7. afterSeconds delays the stops; a
// budget of 20% stops at most 2 a cycle.
func TestPreemptionBringsSharesToTheirFairShare(t *testing.T) {
	cases := []struct {
		name       string
		cfg        fairshare.Config
		at         time.Duration // when the stops come
		stops      []int         // a's stops at that cycle and the following ones
		bRunning   int           // b's running tasks once the stops are done
		stopReason string
	}{
		{"none", fairshare.Config{}, 60 * time.Second, nil, 0, ""},
		{"at once", fairshare.Config{Preemption: &fairshare.Preemption{}}, 60 * time.Second, []int{5}, 5,
			"fair-share preemption: share a runs 10 tasks, above its fair share of 5 slots; share b runs 0, below its 5"},
		{"weighted", fairshare.Config{Preemption: &fairshare.Preemption{},
			Shares: []fairshare.ShareWeight{{Share: "a", WeightFactor: fairshare.Weight(0.5)}}}, 60 * time.Second, []int{3}, 3,
			"above its fair share of 6.667 slots"},
		{"after 30 s", fairshare.Config{Preemption: &fairshare.Preemption{AfterSeconds: 30}}, 90 * time.Second, []int{5}, 5, ""},
		{"budget 20%", fairshare.Config{Preemption: &fairshare.Preemption{MaxPercent: 20}}, 60 * time.Second, []int{2, 2, 1}, 5, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			d := newDriver(t, &cfg, 10)
			d.submit(0, "a", 0, 10, time.Hour)
			d.submit(60*time.Second, "b", 0, 10, time.Hour)
			// A cycle every 10 s, so that afterSeconds and the budget
			// have cycles to act in.
			d.wakeEvery(10*time.Second, 2*time.Minute)
			d.run(2 * time.Minute)
			var stops []int
			for _, r := range d.rounds {
				if r.stops["b"] > 0 {
					t.Fatalf("at %v stopped %v: only share a runs above its fair share", r.at, r.stops)
				}
				if r.stops["a"] > 0 {
					if len(stops) == 0 && r.at != tc.at {
						t.Fatalf("first stops at %v, want %v", r.at, tc.at)
					}
					stops = append(stops, r.stops["a"])
					if tc.stopReason != "" && !strings.Contains(r.d.Stops[0].Reason.Message, tc.stopReason) {
						t.Errorf("reason %q, want it to contain %q", r.d.Stops[0].Reason.Message, tc.stopReason)
					}
				}
			}
			if len(stops) != len(tc.stops) || (len(stops) > 0 && !equal(stops, tc.stops)) {
				t.Fatalf("a's stops per cycle %v, want %v", stops, tc.stops)
			}
			if got := d.running["b"]; got != tc.bRunning {
				t.Errorf("b runs %d at 2m, want %d", got, tc.bRunning)
			}
			if d.running["a"]+d.running["b"] != 10 {
				t.Errorf("running %v: the pool must stay full", d.running)
			}
		})
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Three shares on 10 slots have fair shares of 3.33 each: whole tasks
// cannot match that. The tenth slot stays with a share that runs it, so
// once the shares are at 4, 3 and 3 nothing stops again, cycle after
// cycle.
func TestPreemptionDoesNotChurnOverFractions(t *testing.T) {
	d := newDriver(t, &fairshare.Config{Preemption: &fairshare.Preemption{}}, 10)
	d.submit(0, "a", 0, 10, time.Hour)
	d.submit(time.Second, "b", 0, 10, time.Hour)
	d.submit(2*time.Second, "c", 0, 10, time.Hour)
	d.wakeEvery(10*time.Second, 5*time.Minute)
	d.run(5 * time.Minute)
	total := 0
	for _, r := range d.rounds {
		for _, n := range r.stops {
			total += n
		}
	}
	// 10 → 5/5 at 1 s (5 stops), then 4/3/3 or 3/4/3 at 2 s (3 stops).
	if total != 8 {
		t.Errorf("%d stops in 5 minutes, want 8 (5 for b, 3 for c) and none after", total)
	}
	for _, s := range []string{"a", "b", "c"} {
		if n := d.running[s]; n < 3 || n > 4 {
			t.Errorf("share %s runs %d, want 3 or 4 of 10", s, n)
		}
	}
}
