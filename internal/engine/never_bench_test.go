package engine

import "testing"

// BenchmarkNeverRunnableSpec measures the check every submission makes
// (is there a registered worker that can ever run each task?) for one job
// of the benchmark load on its fleet of 10,000 workers: against
// BenchmarkSubmit's cost per job, it should be small.
func BenchmarkNeverRunnableSpec(b *testing.B) {
	jobs := benchJobSpecs(benchJobs, benchTasksPerJob)
	e := benchEngine(b, benchWorkerSpecs(benchWorkers), jobs[:1])
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if never := e.NeverRunnableSpec(jobs[i%len(jobs)]); len(never) != 0 {
			b.Fatalf("the benchmark load is runnable: %+v", never)
		}
		i++
	}
}
