package policy

import (
	"testing"

	"github.com/allot-sched/allot/internal/model"
)

func TestAmountsOfCountsGPUMemoryPerDevice(t *testing.T) {
	cases := []struct {
		name string
		r    model.Resources
		want model.Amounts
	}{
		{"cpu and memory", model.Resources{MilliCPU: 1500, MemoryMB: 2048}, model.Amounts{MilliCPU: 1500, MemoryMB: 2048}},
		{"two GPUs of 40 GiB hold 80 GiB", model.Resources{GPUs: 2, GPUMemoryMB: 40960}, model.Amounts{GPUs: 2, GPUMemoryMB: 81920}},
		{"GPU memory without GPUs holds none", model.Resources{MilliCPU: 1000, GPUMemoryMB: 40960}, model.Amounts{MilliCPU: 1000}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := model.AmountsOf(tc.r); got != tc.want {
				t.Errorf("AmountsOf(%+v) = %+v, want %+v", tc.r, got, tc.want)
			}
		})
	}
}

func TestDominantShareIsTheLargestFractionOfAnyKind(t *testing.T) {
	// Eight workers of 32 CPUs, 128 GiB, 4 GPUs of 80 GiB, 16 slots each.
	pool := Capacity{Slots: 128, Amounts: model.AmountsOf(model.Resources{MilliCPU: 32000, MemoryMB: 131072, GPUs: 4, GPUMemoryMB: 81920}).Times(8)}
	cases := []struct {
		name  string
		tasks int
		held  model.Amounts
		want  float64
	}{
		{"nothing", 0, model.Amounts{}, 0},
		{"a task that asks for nothing holds its slot", 1, model.Amounts{}, 1.0 / 128},
		{"CPU dominates", 2, model.Amounts{MilliCPU: 64000, MemoryMB: 4096}, 0.25},
		{"memory dominates", 1, model.Amounts{MilliCPU: 1000, MemoryMB: 524288}, 0.5},
		{"GPUs dominate", 1, model.Amounts{MilliCPU: 4000, MemoryMB: 16384, GPUs: 8, GPUMemoryMB: 8 * 40960}, 0.25},
		{"GPU memory dominates", 1, model.Amounts{GPUs: 4, GPUMemoryMB: 4 * 81920}, 0.125},
		{"slots dominate", 64, model.Amounts{MilliCPU: 6400}, 0.5},
		{"a mixed group: its total, not the sum of its tasks' shares", 2,
			model.Amounts{MilliCPU: 64000 + 4000, GPUs: 0 + 8, GPUMemoryMB: 8 * 81920}, 0.265625},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := DominantShare(tc.tasks, tc.held, pool); got != tc.want {
				t.Errorf("DominantShare = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("a kind the pool lacks is skipped, an empty pool is 0", func(t *testing.T) {
		cpuOnly := Capacity{Slots: 10, Amounts: model.Amounts{MilliCPU: 10000}}
		if got := DominantShare(1, model.Amounts{MilliCPU: 2000, GPUs: 1}, cpuOnly); got != 0.2 {
			t.Errorf("on a CPU-only pool: %v, want 0.2", got)
		}
		if got := DominantShare(3, model.Amounts{MilliCPU: 2000}, Capacity{}); got != 0 {
			t.Errorf("on an empty pool: %v, want 0", got)
		}
	})
}

func TestUsageIsCheckedAgainstThePolicy(t *testing.T) {
	Register(FIFOKind)
	if _, err := New(Config{Kind: "fifo", Usage: "dominant"}); err == nil {
		t.Error("fifo with usage: dominant was accepted")
	} else if fe, ok := err.(*model.FieldError); !ok || fe.Path != "usage" {
		t.Errorf("fifo with usage: dominant: %v, want an error at usage", err)
	}
	if _, err := New(Config{Kind: "fifo", Usage: "slots"}); err != nil {
		t.Errorf("fifo with usage: slots: %v", err)
	}
	if _, err := New(Config{Kind: "fifo", Usage: "cores"}); err == nil {
		t.Error("usage: cores was accepted")
	}
}
