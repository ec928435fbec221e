package place

import (
	"fmt"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// BenchmarkPlace measures placement alone over 10,000 heterogeneous one-slot
// workers in four hardware classes (the engine benchmarks' fleet): one
// operation places a task on every worker, occupying each. It runs each
// strategy with the per-class feasibility cache (cache=on) and without it
// (cache=off: every free worker's hardware is checked for every task), and
// reports placements/s. docs/performance.md records the figures.
func BenchmarkPlace(b *testing.B) {
	classes := []struct {
		capacity model.Resources
		labels   model.Labels
		cost     float64
		weight   int
	}{
		{model.Resources{MilliCPU: 4000, MemoryMB: 16384}, model.Labels{"pool": "cpu", "size": "s"}, 0.2, 4},
		{model.Resources{MilliCPU: 16000, MemoryMB: 65536}, model.Labels{"pool": "cpu", "size": "l"}, 0.8, 3},
		{model.Resources{MilliCPU: 8000, MemoryMB: 32768, GPUs: 1, GPUMemoryMB: 24576}, model.Labels{"gpu": "a10"}, 1.2, 2},
		{model.Resources{MilliCPU: 32000, MemoryMB: 262144, GPUs: 8, GPUMemoryMB: 81920}, model.Labels{"gpu": "h100"}, 32, 1},
	}
	var pattern []int
	for c, bc := range classes {
		for k := 0; k < bc.weight; k++ {
			pattern = append(pattern, c)
		}
	}
	const n = 10_000
	workers := make([]model.Worker, n)
	for i := range workers {
		c := classes[pattern[i%len(pattern)]]
		workers[i] = model.Worker{Name: fmt.Sprintf("w%05d", i), Capacity: c.capacity, Labels: c.labels, Slots: 1, CostPerHour: c.cost}
	}
	// Six in ten tasks ask for one CPU, two for eight, one for a 16 GiB GPU
	// (inference) and one for two 40 GiB GPUs (training); a task whose
	// shape has run out of workers falls back to one CPU.
	asks := []struct {
		req model.Resources
		cat model.Category
	}{
		{model.Resources{MilliCPU: 1000, MemoryMB: 2048}, model.CategoryOther},
		{model.Resources{MilliCPU: 8000, MemoryMB: 32768}, model.CategoryOther},
		{model.Resources{MilliCPU: 2000, MemoryMB: 8192, GPUs: 1, GPUMemoryMB: 16384}, model.CategoryInference},
		{model.Resources{MilliCPU: 8000, MemoryMB: 65536, GPUs: 2, GPUMemoryMB: 40960}, model.CategoryTraining},
	}
	mix := []int{0, 0, 0, 0, 0, 0, 1, 1, 2, 3}
	hashes := make([]uint64, n)
	for k := range hashes {
		hashes[k] = TaskHash("job", fmt.Sprint(k))
	}
	for _, strategy := range []string{"best", "first-fit", "min-satisfying"} {
		for _, cache := range []bool{true, false} {
			name := fmt.Sprintf("strategy=%s/cache=%s", strategy, map[bool]string{true: "on", false: "off"}[cache])
			b.Run(name, func(b *testing.B) {
				placed := 0
				var elapsed time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					f, err := NewFleetConfig(Config{Strategy: strategy})
					if err != nil {
						b.Fatal(err)
					}
					f.noFeasCache = !cache
					for _, w := range workers {
						if _, err := f.Add(w); err != nil {
							b.Fatal(err)
						}
					}
					shapes := make([]*Shape, len(asks))
					for k, a := range asks {
						shapes[k] = f.Shape(a.req, nil)
					}
					start := time.Now()
					b.StartTimer()
					for k := 0; k < n; k++ {
						a := mix[k%len(mix)]
						r := Request{Shape: shapes[a], Job: "job", Task: "t", Hash: hashes[k], Category: asks[a].cat, Now: t0}
						ch, _ := f.Choose(&r)
						if ch.Worker == nil {
							r.Shape, r.Category = shapes[0], model.CategoryOther
							if ch, _ = f.Choose(&r); ch.Worker == nil {
								b.Fatalf("placement %d found no worker", k)
							}
						}
						f.Occupy(ch.Worker, r.Shape.Req)
						placed++
					}
					b.StopTimer()
					elapsed += time.Since(start)
				}
				b.ReportMetric(float64(placed)/elapsed.Seconds(), "placements/s")
			})
		}
	}
}
