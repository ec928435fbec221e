package classload_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/classload"
	"github.com/allot-sched/allot/internal/model"
)

// dominantEngine builds one classload queue of two 50% classes, train and
// etl, measuring usage as usage says, over one worker of capacity c and
// slots slots, with a rebalance threshold of 20 points after a minute.
func dominantEngine(t fatalT, usage policy.Usage, c model.Resources, slots int) *engine.Engine {
	t.Helper()
	cfg := configFor([]class{{name: "train", pct: 50}, {name: "etl", pct: 50}})
	cfg.RebalanceThreshold, cfg.RebalanceMinimumDuration = 20, time.Minute
	e, err := engine.New(engine.Config{Queues: []engine.QueueConfig{{Name: "q",
		Policy: policy.Config{Kind: classload.Name, Usage: string(usage), Settings: &cfg}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Apply(engine.AddWorker{Worker: model.Worker{Name: "w", Capacity: c, Slots: slots}, At: t0}); err != nil {
		t.Fatal(err)
	}
	return e
}

// submitSized submits one job of n tasks of size r for class's requestor.
func submitSized(t fatalT, e *engine.Engine, id, class string, n int, r model.Resources, at time.Time) {
	t.Helper()
	j := model.Job{ID: id, Queue: "q", Requestor: class + "-user", Submitted: at}
	for i := 0; i < n; i++ {
		j.Tasks = append(j.Tasks, model.Task{Name: fmt.Sprintf("t%03d", i), Resources: r})
	}
	if err := e.Apply(engine.SubmitJob{Job: j}); err != nil {
		t.Fatal(err)
	}
}

// fatalT is what the helpers need of a *testing.T or a *rapid.T.
type fatalT interface {
	Helper()
	Fatal(args ...any)
}

func startsOf(d *engine.Decisions) map[string]int {
	got := map[string]int{}
	for _, g := range d.Groups {
		got[g.Group] = g.Starts
	}
	return got
}

// One worker of 8 slots, 8 GPUs and 64 CPUs: a training task takes 2 GPUs
// (a quarter of them), an ETL task 1 CPU (one slot of eight is its
// dominant share). Under usage: slots each class is entitled to 4 slots:
// train takes every GPU (dominant share 1) and etl half the slots (0.5).
// Under usage: dominant each is entitled to a dominant share of one half:
// train starts 2 tasks (4 slot-equivalents), etl 4; the two slots still
// free are loaned one each, and train's loan, a whole task, takes it to
// 0.75 against etl's 0.625.
func TestDominantClassloadEntitlesDominantShares(t *testing.T) {
	pool := model.Resources{MilliCPU: 64000, MemoryMB: 64 << 10, GPUs: 8}
	gpu := model.Resources{MilliCPU: 1000, MemoryMB: 1024, GPUs: 2}
	cpu := model.Resources{MilliCPU: 1000, MemoryMB: 1024}
	cases := []struct {
		usage      policy.Usage
		train, etl int
	}{
		{policy.UsageSlots, 4, 4},
		{policy.UsageDominant, 3, 5},
	}
	for _, tc := range cases {
		t.Run(string(tc.usage), func(t *testing.T) {
			e := dominantEngine(t, tc.usage, pool, 8)
			submitSized(t, e, "train", "train", 20, gpu, t0)
			submitSized(t, e, "etl", "etl", 20, cpu, t0)
			got := startsOf(e.Cycle(t0))
			if got["train"] != tc.train || got["etl"] != tc.etl {
				t.Fatalf("starts %v, want train %d, etl %d", got, tc.train, tc.etl)
			}
		})
	}
}

// The rebalance works on dominant shares: the training class that took
// every GPU while it was alone holds a dominant share of 1, twice its
// entitlement, so once ETL work waits and the spread has stayed above the
// threshold for the minimum duration, its newest tasks stop. Under usage:
// slots it holds 4 of 8 slots, its entitlement, and nothing stops.
func TestDominantClassloadRebalancesByDominantShare(t *testing.T) {
	pool := model.Resources{MilliCPU: 8000, MemoryMB: 64 << 10, GPUs: 8}
	gpu := model.Resources{MilliCPU: 1000, MemoryMB: 1024, GPUs: 2}
	cpu := model.Resources{MilliCPU: 1000, MemoryMB: 1024}
	for _, usage := range []policy.Usage{policy.UsageSlots, policy.UsageDominant} {
		t.Run(string(usage), func(t *testing.T) {
			e := dominantEngine(t, usage, pool, 8)
			submitSized(t, e, "train", "train", 4, gpu, t0)
			if got := startsOf(e.Cycle(t0)); got["train"] != 4 {
				t.Fatalf("train alone started %v, want 4", got)
			}
			submitSized(t, e, "etl", "etl", 20, cpu, t0.Add(time.Second))
			var stops []engine.Stop
			for s := 1; s <= 120; s++ {
				d := e.Cycle(t0.Add(time.Duration(s) * time.Second))
				stops = append(stops, d.Stops...)
			}
			if usage == policy.UsageSlots {
				if len(stops) != 0 {
					t.Fatalf("usage: slots stopped %d tasks; train runs at its entitlement of 4 slots", len(stops))
				}
				return
			}
			// Train holds 8 slot-equivalents against a target of 4, so
			// the rebalance stops 4; the rebalance loan shares those 4 by
			// percentage, 2 back to train, which cancel stops: train's
			// newest task (2 GPUs, 2 slot-equivalents) stops.
			if len(stops) != 1 || !strings.Contains(stops[0].Reason.Message, "its newest tasks stop, 2 slot-equivalents") {
				t.Fatalf("stops %+v, want the newest training task, for 2 slot-equivalents", stops)
			}
			for _, s := range stops {
				if s.Job != "train" || !strings.Contains(s.Reason.Message, "slot-equivalents") {
					t.Errorf("stop %+v: want a training task stopped for its slot-equivalents", s)
				}
			}
		})
	}
}

// With usage: dominant, a class that asks for some of a kind its tasks do
// not use never starts more tasks than when it tells the truth: the lie can
// only raise what each of its tasks costs in slot-equivalents. As in
// fairshare's property, the pool is one worker with enough of the
// lied-about kind for every task, so that what is measured is the policy
// rather than how tasks pack.
func TestPropertyDominantClassloadRewardsNoLie(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		pool := model.Resources{
			MilliCPU: int64(rapid.IntRange(1, 64).Draw(rt, "cpus")) * 1000,
			MemoryMB: int64(rapid.IntRange(1, 64).Draw(rt, "memory GiB")) * 1024,
			GPUs:     int64(rapid.IntRange(0, 16).Draw(rt, "gpus")),
		}
		slots := rapid.IntRange(1, 64).Draw(rt, "slots")
		size := func(name string) model.Resources {
			r := model.Resources{
				MilliCPU: int64(rapid.IntRange(0, 8).Draw(rt, name+" cpus")) * 500,
				MemoryMB: int64(rapid.IntRange(0, 8).Draw(rt, name+" memory GiB")) * 1024,
			}
			if pool.GPUs > 0 {
				r.GPUs = int64(rapid.IntRange(0, 2).Draw(rt, name+" gpus"))
			}
			return r
		}
		other, honest := size("train"), size("etl")
		lie := honest
		switch {
		case honest.MilliCPU == 0:
			lie.MilliCPU = int64(rapid.IntRange(1, 8).Draw(rt, "lie cpus")) * 500
		case honest.MemoryMB == 0:
			lie.MemoryMB = int64(rapid.IntRange(1, 8).Draw(rt, "lie memory GiB")) * 1024
		case honest.GPUs == 0 && pool.GPUs > 0:
			lie.GPUs = int64(rapid.IntRange(1, 2).Draw(rt, "lie gpus"))
		default:
			rt.Skip("etl uses every kind")
		}
		const tasks = 12
		switch {
		case lie.MilliCPU != honest.MilliCPU:
			pool.MilliCPU = tasks * (other.MilliCPU + lie.MilliCPU)
		case lie.MemoryMB != honest.MemoryMB:
			pool.MemoryMB = tasks * (other.MemoryMB + lie.MemoryMB)
		default:
			pool.GPUs = tasks * (other.GPUs + lie.GPUs)
		}
		run := func(etl model.Resources) map[string]int {
			e := dominantEngine(rt, policy.UsageDominant, pool, slots)
			submitSized(rt, e, "train", "train", tasks, other, t0)
			submitSized(rt, e, "etl", "etl", tasks, etl, t0)
			return startsOf(e.Cycle(t0))
		}
		truth, lied := run(honest), run(lie)
		if lied["etl"] > truth["etl"] {
			rt.Fatalf("etl asking %+v instead of %+v got %d tasks instead of %d (train: %d, %d)",
				lie, honest, lied["etl"], truth["etl"], truth["train"], lied["train"])
		}
	})
}
