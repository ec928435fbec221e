package scenario

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/allot-sched/allot/internal/spec"
)

// fuzzBudget bounds the workers and tasks of a fuzzed scenario that is
// built into an engine, so that every input runs in milliseconds. Larger
// ones are still parsed (the limits of the format apply to them) but not
// scheduled.
const fuzzBudget = 20_000

// FuzzScenario feeds scenario documents through what `allot plan` does:
// Parse, build the engine, run one cycle. None may panic, and the cycle's
// starts name jobs and workers of the scenario.
func FuzzScenario(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"workers: [{name: w, count: 3, slots: 2}]\njobs: [{id: j, count: 2, tasks: [{name: t, count: 4, running: 1}]}]\n",
		"queues: [{name: a}, {name: b, priority: 1}]\nworkers: [{name: w}]\njobs: [{queue: b, tasks: [{name: t}]}, {tasks: [{name: u}]}]\n",
		"start: 2026-01-01T00:00:00Z\nworkers: [{name: w, count: -1}]\njobs: [{id: j, count: -2, tasks: []}]\n",
		"jobs: [{id: j, tasks: [{name: a, needs: [b]}, {name: b, needs: [a]}]}]\n",
		"state: {queues: {nowhere: {}}}\n",
		"workers: [{name: w, resources: {cpu: 1e30, memory: 1e30Ti, gpus: 1e30}, slots: 2.7, costPerHour: .inf}]\njobs: [{id: j, priority: -1e308, tasks: [{name: t, count: 2.7, resources: {memory: NaN}}]}]\n",
		"endpoints: [{name: e, type: serverless, maxConcurrency: 9223372036854775807, variants: [{name: v, weight: 1e308}]}]\nthrottling: {capacityTargetPercentage: .nan}\n",
		`{"workers":[{"name":"w","resources":{"cpu":"99999999999999999999m"}}],"jobs":[{"id":"..","tasks":[{"name":"t","count":"many"}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if tooLarge(data) {
			return
		}
		s, err := Parse(data)
		if err != nil {
			return
		}
		for _, w := range s.Workers {
			c := w.Capacity
			if c.MilliCPU < 0 || c.MilliCPU > int64(spec.MaxCPU) || c.MemoryMB < 0 || c.MemoryMB > int64(spec.MaxMemory) ||
				c.GPUs < 0 || c.GPUs > spec.MaxGPUs || c.GPUMemoryMB < 0 || c.GPUMemoryMB > int64(spec.MaxMemory) ||
				w.Slots < 1 || w.Slots > spec.MaxSlots || !(w.CostPerHour >= 0 && w.CostPerHour <= spec.MaxCostPerHour) {
				t.Fatalf("worker %s accepted with capacity %+v, %d slots, cost %g", w.Name, c, w.Slots, w.CostPerHour)
			}
		}
		for _, j := range s.Jobs {
			if j.Priority < spec.MinPriority || j.Priority > spec.MaxPriority {
				t.Fatalf("job %s accepted with priority %d", j.ID, j.Priority)
			}
			for _, tk := range j.Tasks {
				if r := tk.Resources; r.MilliCPU < 0 || r.MemoryMB < 0 || r.GPUs < 0 || r.GPUMemoryMB < 0 {
					t.Fatalf("task %s of job %s accepted with resources %+v", tk.Name, j.ID, r)
				}
			}
		}
		e, err := s.Engine()
		if err != nil {
			// A state the engine cannot reach (a running task no worker
			// fits) is refused when the engine is built, with an error.
			return
		}
		d := e.Cycle(s.Start)
		jobs := map[string]bool{}
		for _, j := range s.Jobs {
			jobs[j.ID] = true
		}
		workers := map[string]bool{}
		for _, w := range s.Workers {
			workers[w.Name] = true
		}
		for _, st := range d.Starts {
			if !jobs[st.Job] || !workers[st.Worker] {
				t.Fatalf("start %+v names a job or worker the scenario does not have", st)
			}
		}
	})
}

// tooLarge reports whether a scenario would expand past fuzzBudget workers
// or tasks. It reads the document the way Parse does; a document Parse
// would refuse is not too large.
func tooLarge(data []byte) bool {
	var f File
	if _, err := spec.Decode(data, &f); err != nil {
		return false
	}
	n := 0
	add := func(count, each int) bool {
		count, each = max(count, 1), max(each, 1)
		if count > fuzzBudget || each > fuzzBudget {
			return true
		}
		n += count * each
		return n > fuzzBudget
	}
	deref := func(p *int) int {
		if p == nil {
			return 1
		}
		return *p
	}
	for _, w := range f.Workers {
		if add(deref(w.Count), 1) {
			return true
		}
	}
	for _, j := range f.Jobs {
		tasks := 0
		for _, tk := range j.Tasks {
			tasks += max(tk.Count, 1)
			if tasks > fuzzBudget {
				return true
			}
		}
		if add(deref(j.Count), tasks) {
			return true
		}
	}
	return false
}
