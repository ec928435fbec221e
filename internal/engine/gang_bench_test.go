package engine

import (
	"runtime"
	"testing"
	"time"
)

// BenchmarkCycleFillGangs is BenchmarkCycleFill with gangs in the backlog:
// one job in ten (the one-CPU jobs numbered 5 mod 10) is a gang of its 100
// tasks, which must start together. The gangs near the end of the fill no
// longer fit: the first of them holds the free workers it could use
// (running tasks without a declared duration give no earliest start), so
// the cycle fills every slot but those.
func BenchmarkCycleFillGangs(b *testing.B) {
	b.StopTimer()
	workers := benchWorkerSpecs(benchWorkers)
	jobs := benchJobSpecs(benchJobs, benchTasksPerJob)
	gangs := 0
	for i := range jobs {
		if i%10 == 5 {
			gangs++
			for k := range jobs[i].Tasks {
				jobs[i].Tasks[k].Gang, jobs[i].Tasks[k].GangMin = "job", benchTasksPerJob
			}
		}
	}
	b.ReportAllocs()
	var cpu time.Duration
	started := 0
	for i := 0; i < b.N; i++ {
		e := benchEngine(b, workers, jobs)
		runtime.GC()
		c0 := cpuTime()
		b.StartTimer()
		d := e.Cycle(t0.Add(time.Second))
		b.StopTimer()
		cpu += cpuTime() - c0
		if len(d.Starts) < benchWorkers-benchTasksPerJob || len(d.Starts) > benchWorkers {
			b.Fatalf("cycle started %d tasks, want all %d slots but those held for a gang (fewer than %d)", len(d.Starts), benchWorkers, benchTasksPerJob)
		}
		started += len(d.Starts)
		if i == 0 {
			gangStarts := 0
			for _, s := range d.Starts {
				if t, _ := e.lookup(s.Job, s.Task); t.gang != nil {
					gangStarts++
				}
			}
			if gangStarts == 0 || gangStarts%benchTasksPerJob != 0 {
				b.Fatalf("%d tasks of gangs started, want whole gangs of %d", gangStarts, benchTasksPerJob)
			}
		}
	}
	b.ReportMetric(float64(started)/b.Elapsed().Seconds(), "placements/s")
	b.ReportMetric(float64(started)/float64(b.N), "starts/op")
	reportCPU(b, cpu)
}
