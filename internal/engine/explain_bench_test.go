package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// BenchmarkExplain measures one Explain on the benchmark load (10,000
// workers, 100,000 pending tasks in 1,000 jobs) after a fill cycle: the
// answer a user waits for in `allot explain`.
func BenchmarkExplain(b *testing.B) {
	e := benchEngine(b, benchWorkerSpecs(benchWorkers), benchJobSpecs(benchJobs, benchTasksPerJob))
	e.Cycle(t0)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, ok := e.Explain("job00999"); !ok {
			b.Fatal("job00999 not found")
		}
	}
}

// BenchmarkExplainCPUJob is BenchmarkExplain for a job that asks for no
// GPU (job00997, 8 CPUs a task, which no busy worker takes now): what the
// GPU device section must not slow down.
func BenchmarkExplainCPUJob(b *testing.B) {
	e := benchEngine(b, benchWorkerSpecs(benchWorkers), benchJobSpecs(benchJobs, benchTasksPerJob))
	e.Cycle(t0)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, ok := e.Explain("job00997"); !ok {
			b.Fatal("job00997 not found")
		}
	}
}

// BenchmarkExplainGPUsHeld explains a job of 2-GPU tasks on 1,000 workers
// of 4 GPUs and 4 slots whose every device is held by a 1-GPU task:
// placement fails for want of free devices on every worker, the case in
// which explain names the devices' holders.
func BenchmarkExplainGPUsHeld(b *testing.B) {
	const workers = 1000
	ws := make([]model.Worker, workers)
	for i := range ws {
		ws[i] = model.Worker{Name: fmt.Sprintf("g%04d", i), Slots: 4,
			Capacity: model.Resources{MilliCPU: 32000, MemoryMB: 262144, GPUs: 4, GPUMemoryMB: 81920}}
	}
	one := model.Job{ID: "held", Queue: "default", Submitted: t0, Tasks: make([]model.Task, 4*workers)}
	for k := range one.Tasks {
		one.Tasks[k] = model.Task{Name: fmt.Sprintf("t%04d", k), Duration: time.Hour,
			Resources: model.Resources{MilliCPU: 1000, MemoryMB: 4096, GPUs: 1, GPUMemoryMB: 16384}}
	}
	two := model.Job{ID: "wide", Queue: "default", Submitted: t0.Add(time.Second), Tasks: make([]model.Task, 10)}
	for k := range two.Tasks {
		two.Tasks[k] = model.Task{Name: fmt.Sprintf("w%02d", k),
			Resources: model.Resources{MilliCPU: 4000, MemoryMB: 16384, GPUs: 2, GPUMemoryMB: 16384}}
	}
	e := benchEngine(b, ws, []model.Job{one, two})
	if d := e.Cycle(t0.Add(time.Second)); len(d.Starts) != 4*workers {
		b.Fatalf("%d starts, want %d", len(d.Starts), 4*workers)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, ok := e.Explain("wide"); !ok {
			b.Fatal("wide not found")
		}
	}
}

// BenchmarkEstimateStart measures one what-if estimate on the same load,
// every attempt running 10 minutes: the running tasks all end together, so
// a few cycles reach the job.
func BenchmarkEstimateStart(b *testing.B) {
	benchEstimate(b, func(string, *model.Task) (time.Duration, bool) { return 10 * time.Minute, true })
}

// BenchmarkEstimateStartWorstCase makes every attempt end at its own time,
// so each simulated cycle frees only a few workers and the job, last in
// line behind 99,900 tasks, is not reached: the simulation runs until its
// cycle bound.
func BenchmarkEstimateStartWorstCase(b *testing.B) {
	benchEstimate(b, func(job string, t *model.Task) (time.Duration, bool) {
		h := 0
		for _, c := range job + t.Name {
			h = h*31 + int(c)
		}
		return time.Duration(60+h%100_000) * time.Millisecond, true
	})
}

// benchEstimate times EstimateStart of the last job on a fresh copy of the
// benchmark load (built outside the timer), with the default bounds.
func benchEstimate(b *testing.B, runtime func(string, *model.Task) (time.Duration, bool)) {
	workers, jobs := benchWorkerSpecs(benchWorkers), benchJobSpecs(benchJobs, benchTasksPerJob)
	b.ReportAllocs()
	var x Estimate
	for b.Loop() {
		b.StopTimer()
		e := benchEngine(b, workers, jobs)
		b.StartTimer()
		x = EstimateStart(e, "job00999", t0, WhatIf{Runtime: func(job string, t *model.Task) (RuntimeEstimate, bool) {
			d, ok := runtime(job, t)
			return RuntimeEstimate{Typical: d, Basis: BasisObserved}, ok
		}})
	}
	b.ReportMetric(float64(x.Cycles), "cycles")
	b.Logf("estimate: known %v after %d cycles, %d ends: %s", x.Known, x.Cycles, x.Ends, x.Note)
}
