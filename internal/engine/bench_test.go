package engine

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// The benchmarks model the target load: 10,000 one-slot workers in
// four hardware classes and 100,000 pending tasks in 1,000 jobs of one fifo
// queue. See docs/performance.md for the figures and how to run them.

const (
	benchWorkers     = 10_000
	benchJobs        = 1_000
	benchTasksPerJob = 100
)

// benchClasses are the four hardware classes, in the proportions 4:3:2:1.
var benchClasses = []struct {
	capacity model.Resources
	labels   model.Labels
	weight   int
}{
	{model.Resources{MilliCPU: 4000, MemoryMB: 16384}, model.Labels{"pool": "cpu", "size": "s"}, 4},
	{model.Resources{MilliCPU: 16000, MemoryMB: 65536}, model.Labels{"pool": "cpu", "size": "l"}, 3},
	{model.Resources{MilliCPU: 8000, MemoryMB: 32768, GPUs: 1, GPUMemoryMB: 24576}, model.Labels{"gpu": "a10"}, 2},
	{model.Resources{MilliCPU: 32000, MemoryMB: 262144, GPUs: 8, GPUMemoryMB: 81920}, model.Labels{"gpu": "h100"}, 1},
}

// benchWorkerSpecs interleaves the classes by registration order (worker i
// belongs to the class that slot i%10 of the 4:3:2:1 pattern names), so
// first-fit walks a mixed fleet.
func benchWorkerSpecs(n int) []model.Worker {
	var pattern []int
	for c, bc := range benchClasses {
		for k := 0; k < bc.weight; k++ {
			pattern = append(pattern, c)
		}
	}
	out := make([]model.Worker, n)
	for i := range out {
		c := benchClasses[pattern[i%len(pattern)]]
		out[i] = model.Worker{Name: fmt.Sprintf("w%05d", i), Capacity: c.capacity, Labels: c.labels, Slots: 1}
	}
	return out
}

// benchJobSpec is job number i: six in ten ask for one CPU, two for eight
// CPUs, one for a 16 GiB GPU and one for two 40 GiB GPUs on h100 workers, so
// some shapes run out of workers part-way and their jobs must be skipped.
func benchJobSpec(i, tasks int) model.Job {
	req, sel := model.Resources{MilliCPU: 1000, MemoryMB: 2048}, model.Selector(nil)
	switch i % 10 {
	case 6, 7:
		req = model.Resources{MilliCPU: 8000, MemoryMB: 32768}
	case 8:
		req = model.Resources{MilliCPU: 2000, MemoryMB: 8192, GPUs: 1, GPUMemoryMB: 16384}
	case 9:
		req = model.Resources{MilliCPU: 8000, MemoryMB: 65536, GPUs: 2, GPUMemoryMB: 40960}
		sel = model.Selector{"gpu": "h100"}
	}
	j := model.Job{ID: fmt.Sprintf("job%05d", i), Queue: "default", Selector: sel, Submitted: t0,
		Tasks: make([]model.Task, tasks)}
	for k := range j.Tasks {
		j.Tasks[k] = model.Task{Name: fmt.Sprintf("t%03d", k), Resources: req}
	}
	return j
}

func benchJobSpecs(jobs, tasks int) []model.Job {
	out := make([]model.Job, jobs)
	for i := range out {
		out[i] = benchJobSpec(i, tasks)
	}
	return out
}

// benchEngine builds an engine with the given workers and jobs and no cycle
// run yet.
func benchEngine(tb testing.TB, workers []model.Worker, jobs []model.Job) *Engine {
	tb.Helper()
	return benchEngineConfig(tb, Config{}, workers, jobs)
}

// benchEngineConfig is benchEngine with cfg's options; its queue is the
// benchmarks' fifo queue.
func benchEngineConfig(tb testing.TB, cfg Config, workers []model.Worker, jobs []model.Job) *Engine {
	tb.Helper()
	cfg.Queues = []QueueConfig{{Name: "default", Policy: policy.Config{Kind: "fifo"}}}
	e, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	for _, w := range workers {
		if err := e.Apply(AddWorker{Worker: w, At: t0}); err != nil {
			tb.Fatal(err)
		}
	}
	for _, j := range jobs {
		if err := e.Apply(SubmitJob{Job: j}); err != nil {
			tb.Fatal(err)
		}
	}
	return e
}

// BenchmarkCycleFill measures one cycle that places a task on each of 10,000
// idle workers out of 100,000 pending tasks. Building the engine is outside
// the timer.
func BenchmarkCycleFill(b *testing.B) {
	b.StopTimer() // the timer runs from the start; setup is not measured
	workers := benchWorkerSpecs(benchWorkers)
	jobs := benchJobSpecs(benchJobs, benchTasksPerJob)
	b.ReportAllocs()
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		e := benchEngine(b, workers, jobs)
		runtime.GC()
		c0 := cpuTime()
		b.StartTimer()
		d := e.Cycle(t0.Add(time.Second))
		b.StopTimer()
		cpu += cpuTime() - c0
		if len(d.Starts) != benchWorkers {
			b.Fatalf("cycle started %d tasks, want %d (every slot filled)", len(d.Starts), benchWorkers)
		}
	}
	b.ReportMetric(float64(b.N*benchWorkers)/b.Elapsed().Seconds(), "placements/s")
	reportCPU(b, cpu)
}

// reportCPU reports CPU time per operation, when the platform measures it.
func reportCPU(b *testing.B, cpu time.Duration) {
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// benchBacklogs are the shapes of the incremental benchmarks' backlog:
// 1,000 jobs of 100 tasks (the figure), 10,000 of 10 and 100,000 of
// one, because anything that walks every active job each cycle shows there.
var benchBacklogs = []struct{ jobs, tasks int }{
	{benchJobs, benchTasksPerJob},
	{10 * benchJobs, benchTasksPerJob / 10},
	{100 * benchJobs, benchTasksPerJob / 100},
}

// BenchmarkCycleIncremental measures the steady state after the fill: 100
// running tasks finish and one cycle places 100 tasks in their slots. One
// operation is the 100 FinishTask events plus the cycle. New jobs are
// submitted outside the timer each round, so the backlog stays at about
// 90,000 tasks however long the benchmark runs. The engine runs as the
// server runs it: the list of waiting jobs is built on demand
// (Config.LazyPending) and the cycle keeps the counts of waiting tasks by
// reason (PendingSummary), which the server publishes.
func BenchmarkCycleIncremental(b *testing.B) {
	for _, shape := range benchBacklogs {
		b.Run(fmt.Sprintf("jobs=%dx%d", shape.jobs, shape.tasks), func(b *testing.B) {
			benchIncremental(b, Config{LazyPending: true}, shape.jobs, shape.tasks)
		})
	}
}

// BenchmarkCycleIncrementalListed is BenchmarkCycleIncremental with every
// waiting job listed with its reason each cycle (Decisions.Pending), as
// `allot plan` runs the engine: the difference between the two is the cost
// of the list.
func BenchmarkCycleIncrementalListed(b *testing.B) {
	for _, shape := range benchBacklogs {
		b.Run(fmt.Sprintf("jobs=%dx%d", shape.jobs, shape.tasks), func(b *testing.B) {
			benchIncremental(b, Config{}, shape.jobs, shape.tasks)
		})
	}
}

func benchIncremental(b *testing.B, cfg Config, jobCount, tasksPerJob int) {
	const batch = 100
	workers := benchWorkerSpecs(benchWorkers)
	jobs := benchJobSpecs(jobCount, tasksPerJob)
	e := benchEngineConfig(b, cfg, workers, jobs)
	now := t0.Add(time.Second)
	d := e.Cycle(now)
	if len(d.Starts) != benchWorkers {
		b.Fatalf("fill started %d tasks, want %d", len(d.Starts), benchWorkers)
	}
	running := append([]Start(nil), d.Starts...) // oldest start first
	next := jobCount
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		now = now.Add(time.Second)
		for _, s := range running[:batch] {
			if err := e.Apply(FinishTask{Job: s.Job, Task: s.Task, Outcome: model.Succeeded, At: now}); err != nil {
				b.Fatal(err)
			}
		}
		running = running[batch:]
		d := e.Cycle(now)
		summary := e.PendingSummary() // what the server publishes
		b.StopTimer()
		cpu += cpuTime() - c0
		if summary.Tasks == 0 {
			b.Fatal("no waiting task counted")
		}
		if len(d.Starts) != batch {
			b.Fatalf("cycle started %d tasks after %d finished", len(d.Starts), batch)
		}
		running = append(running, d.Starts...)
		for k := 0; k < batch; k += tasksPerJob {
			if err := e.Apply(SubmitJob{Job: benchJobSpec(next, tasksPerJob)}); err != nil {
				b.Fatal(err)
			}
			next++
		}
		c0 = cpuTime()
		b.StartTimer()
	}
	reportCPU(b, cpu)
}

// BenchmarkSubmit measures submitting 100,000 tasks in 1,000 jobs and reports
// the heap the engine keeps per pending task, names included.
func BenchmarkSubmit(b *testing.B) {
	b.ReportAllocs()
	var perTask float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		jobs := benchJobSpecs(benchJobs, benchTasksPerJob)
		e, err := New(Config{Queues: []QueueConfig{{Name: "default", Policy: policy.Config{Kind: "fifo"}}}})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for _, j := range jobs {
			if err := e.Apply(SubmitJob{Job: j}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		jobs = nil // the engine keeps copies; the caller's specs may go
		runtime.GC()
		runtime.ReadMemStats(&after)
		perTask = float64(after.HeapAlloc-before.HeapAlloc) / (benchJobs * benchTasksPerJob)
		runtime.KeepAlive(e)
		b.StartTimer()
	}
	b.ReportMetric(perTask, "B/pending-task")
}

// BenchmarkSubmitDAG submits one job of 100,000 tasks whose dependencies
// the engine checks for cycles: a chain (each task needs the one before)
// and a wide fan-in (one task needs all the others). Both are linear in
// tasks and dependencies.
func BenchmarkSubmitDAG(b *testing.B) {
	const n = 100_000
	chain := model.Job{ID: "chain", Queue: "default", Submitted: t0, Tasks: make([]model.Task, n)}
	fanIn := model.Job{ID: "fan-in", Queue: "default", Submitted: t0, Tasks: make([]model.Task, n)}
	all := make([]string, 0, n-1)
	for i := range n {
		name := fmt.Sprintf("t%06d", i)
		chain.Tasks[i] = model.Task{Name: name}
		if i > 0 {
			chain.Tasks[i].Needs = []string{chain.Tasks[i-1].Name}
		}
		fanIn.Tasks[i] = model.Task{Name: name}
		if i < n-1 {
			all = append(all, name)
		}
	}
	fanIn.Tasks[n-1].Needs = all
	for _, bc := range []struct {
		name string
		job  model.Job
	}{{"chain-100k", chain}, {"fan-in-100k", fanIn}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				e, err := New(Config{Queues: []QueueConfig{{Name: "default", Policy: policy.Config{Kind: "fifo"}}}})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := e.Apply(SubmitJob{Job: bc.job}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
