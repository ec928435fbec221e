package engine

import (
	"runtime"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
)

// BenchmarkCycleFillPlacement is BenchmarkCycleFill (one cycle placing a
// task on each of 10,000 idle workers in four classes) under each selection
// strategy and dispatcher mode, so that the cost of scoring and of the mode
// bookkeeping shows next to first-fit's. docs/performance.md records them.
func BenchmarkCycleFillPlacement(b *testing.B) {
	cases := []struct {
		name string
		cfg  PlacementConfig
	}{
		{"adaptive/first-fit", PlacementConfig{Strategy: "first-fit"}},
		{"adaptive/best", PlacementConfig{Strategy: "best"}},
		{"adaptive/min-satisfying", PlacementConfig{Strategy: "min-satisfying"}},
		{"static-worker/first-fit", PlacementConfig{Mode: "static-worker"}},
		{"fixed-pipeline/first-fit", PlacementConfig{Mode: "fixed-pipeline"}},
		{"round-robin", PlacementConfig{Mode: "round-robin"}},
	}
	workers := benchWorkerSpecs(benchWorkers)
	jobs := benchJobSpecs(benchJobs, benchTasksPerJob)
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.StopTimer()
			b.ReportAllocs()
			started := 0
			for i := 0; i < b.N; i++ {
				e, err := New(Config{Queues: []QueueConfig{{Name: "default", Policy: policy.Config{Kind: "fifo"}}}, Placement: tc.cfg})
				if err != nil {
					b.Fatal(err)
				}
				for _, w := range workers {
					if err := e.Apply(AddWorker{Worker: w, At: t0}); err != nil {
						b.Fatal(err)
					}
				}
				for _, j := range jobs {
					if err := e.Apply(SubmitJob{Job: j}); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				b.StartTimer()
				d := e.Cycle(t0.Add(time.Second))
				b.StopTimer()
				if len(d.Starts) == 0 {
					b.Fatal("nothing started")
				}
				started += len(d.Starts)
			}
			b.ReportMetric(float64(started)/b.Elapsed().Seconds(), "placements/s")
			b.ReportMetric(float64(started)/float64(b.N), "starts/op")
		})
	}
}
