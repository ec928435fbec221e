package fairshare_test

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/model"
)

// TestPropertyFairShareNeverOverbooksOrStarves runs random policies and
// workloads through the engine and checks, cycle by cycle, that the policy
// hands out no more slots than are free, never leaves slots idle without a
// reason while tasks wait, always keeps a slot for a named share without
// jobs, and lets every share finish.
func TestPropertyFairShareNeverOverbooksOrStarves(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		nShares := rapid.IntRange(1, 4).Draw(rt, "shares")
		names := []string{"s0", "s1", "s2", "s3"}[:nShares]
		cfg := &fairshare.Config{
			ShareDecaySeconds:  rapid.SampledFrom([]int{0, 0, 60, 600}).Draw(rt, "decay"),
			ComputeReservation: rapid.SampledFrom([]int{0, 0, 25, 50, 75, 99}).Draw(rt, "reservation"),
			ReservationModel:   rapid.SampledFrom([]string{fairshare.ReservationEven, fairshare.ReservationExponential}).Draw(rt, "model"),
		}
		for _, n := range names {
			if rapid.Bool().Draw(rt, "named "+n) {
				w := rapid.SampledFrom([]float64{0.25, 0.5, 1, 2, 3}).Draw(rt, "weight "+n)
				cfg.Shares = append(cfg.Shares, fairshare.ShareWeight{Share: n, WeightFactor: wf(w)})
			}
		}
		// A named share that never submits keeps the reservation held.
		if rapid.Bool().Draw(rt, "idle named share") {
			cfg.Shares = append(cfg.Shares, fairshare.ShareWeight{Share: "idle"})
		}
		slots := rapid.IntRange(1, 12).Draw(rt, "slots")
		d := newDriver(rt, cfg, slots)
		if cfg.ShareDecaySeconds > 0 && rapid.Bool().Draw(rt, "history") {
			d.history(map[string]float64{names[0]: float64(rapid.IntRange(0, 20000).Draw(rt, "past usage"))})
		}
		var lastArrival, work time.Duration
		for j, n := 0, rapid.IntRange(1, 8).Draw(rt, "jobs"); j < n; j++ {
			at := time.Duration(rapid.IntRange(0, 30).Draw(rt, "submit")) * 10 * sec
			tasks := rapid.IntRange(1, 10).Draw(rt, "tasks")
			dur := time.Duration(rapid.IntRange(1, 12).Draw(rt, "duration")) * 10 * sec
			d.submit(at, rapid.SampledFrom(names).Draw(rt, "share"), rapid.IntRange(0, 3).Draw(rt, "priority"), tasks, dur)
			lastArrival = max(lastArrival, at)
			work += time.Duration(tasks) * dur
		}
		named := map[string]bool{}
		for _, s := range cfg.Shares {
			named[s.Share] = true
		}

		d.onRound = func(r round) {
			starts, busy, waiting := 0, 0, 0
			for _, n := range r.starts {
				starts += n
			}
			for _, n := range r.running {
				busy += n
			}
			for _, n := range r.waiting {
				waiting += n
			}
			waiting -= starts
			if starts > r.free {
				rt.Fatalf("at %v: %d starts with %d free slots", r.at, starts, r.free)
			}
			if waiting > 0 && busy < slots && !limited(r) {
				rt.Fatalf("at %v: %d tasks wait, %d of %d slots idle, and no policy_limit reason", r.at, waiting, slots-busy, slots)
			}
			// The first slot of a cycle goes to a share with no usage, so a
			// share with nothing running waits at most as many cycles as
			// there are such shares (current usage only: history may
			// legitimately hold a share back longer).
			if cfg.ShareDecaySeconds == 0 && starts > 0 {
				idle, served := 0, false
				for s, n := range r.waiting {
					if n > 0 && r.before[s] == 0 {
						idle++
						served = served || r.starts[s] > 0
					}
				}
				if idle > 0 && !served {
					rt.Fatalf("at %v: %d starts, none for the %d waiting shares with nothing running (starts %v, before %v)", r.at, starts, idle, r.starts, r.before)
				}
			}
			// Even model: a named share without jobs keeps at least one slot
			// (pools of two slots or more) against new starts.
			if cfg.Model() == fairshare.ReservationEven && cfg.ComputeReservation > 0 && slots >= 2 && starts > 0 {
				for s := range named {
					if r.before[s] == 0 && r.waiting[s] == 0 && busy > slots-1 {
						rt.Fatalf("at %v: named share %s has no jobs, yet the active shares took all %d slots", r.at, s, slots)
					}
				}
			}
		}
		// The pool never idles while work waits and keeps at least one slot
		// for the active shares, so everything ends by the time one slot
		// would have run it all.
		d.run(lastArrival + work)
		if !d.done() {
			rt.Fatalf("work left at %v: %d arrivals, %d running (waiting %v)", d.now, d.arrivals.Len(), d.busy(), d.waiting)
		}
		for s, n := range d.waiting {
			if n != 0 {
				rt.Fatalf("share %s still has %d waiting tasks", s, n)
			}
		}
	})
}

// limited reports whether the cycle held a job back for the policy.
func limited(r round) bool {
	for _, p := range r.d.Pending {
		if p.Reason.Code == model.ReasonPolicyLimit {
			return true
		}
	}
	return false
}
