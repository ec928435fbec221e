package perjob

import (
	"math"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// TestDominantUsageBooksSlotEquivalents: under usage: dominant a job's usage
// over the window is its dominant share times the pool's slots, integrated
// (window 100 s; eight workers of 32 CPUs and 4 GPUs, 16 slots each).
func TestDominantUsageBooksSlotEquivalents(t *testing.T) {
	pool := policy.Capacity{Slots: 128, Amounts: model.AmountsOf(model.Resources{MilliCPU: 32000, MemoryMB: 131072, GPUs: 4}).Times(8)}
	gpuTask := model.AmountsOf(model.Resources{MilliCPU: 4000, GPUs: 4}) // 1/8 of the GPUs: 16 slot-equivalents
	cpuTask := model.AmountsOf(model.Resources{MilliCPU: 4000})          // 1/64 of the CPUs: 2
	type acc struct {
		delta int
		held  model.Amounts
		sec   int
	}
	start := func(r model.Amounts, sec int) acc { return acc{1, r, sec} }
	stop := func(r model.Amounts, sec int) acc { return acc{-1, model.Amounts{}.Sub(r), sec} }
	cases := []struct {
		name  string
		calls []acc
		now   int
		want  float64 // slot-seconds
	}{
		{"a GPU task for 30 s", []acc{start(gpuTask, 0)}, 30, 16 * 30},
		{"a CPU task for 30 s", []acc{start(cpuTask, 0)}, 30, 2 * 30},
		{"a GPU and a CPU task: the CPU task adds to the CPU share only", []acc{start(gpuTask, 0), start(cpuTask, 10)}, 20,
			16*20 + 0}, // CPUs 8/256 stay below the GPUs' 1/8
		{"a task that asks for nothing holds its slot", []acc{start(model.Amounts{}, 0)}, 10, 10},
		{"slides out of the window", []acc{start(gpuTask, 0), stop(gpuTask, 50)}, 120, 16 * 30},
		{"a restore dated before the last change counts from it", []acc{start(cpuTask, 20), start(gpuTask, 10)}, 30, 16 * 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBook(100 * time.Second)
			b.Dominant()
			b.SetPool(pool)
			for _, c := range tc.calls {
				b.Account("j", c.delta, at(c.sec))
				b.AccountAmounts("j", c.held, at(c.sec))
			}
			if got := b.Usage(b.jobs["j"], at(tc.now)); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("usage = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("under slots the same calls count tasks", func(t *testing.T) {
		b := NewBook(100 * time.Second)
		b.Account("j", 1, at(0))
		b.AccountAmounts("j", gpuTask, at(0))
		if got := b.Usage(b.jobs["j"], at(30)); got != 30 {
			t.Errorf("usage = %v, want 30", got)
		}
	})
}
