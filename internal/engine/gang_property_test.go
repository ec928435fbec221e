package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/drive"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
	"pgregory.net/rapid"
)

// TestGangsNeverRunPartly drives random fleets and backlogs of gangs and
// smaller jobs, under each policy, with members lost at random, and checks
// after every cycle that no gang runs below its minimum (running and
// succeeded members together), that a gang's first cycle starts at least
// its minimum, that no worker runs more tasks than it has slots, and in
// the end that every job ran to its end: small jobs did not starve a gang.
func TestGangsNeverRunPartly(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		kind := rapid.SampledFrom([]string{"fifo", "fairshare", "priority"}).Draw(rt, "policy")
		e, err := New(Config{Seed: rapid.Uint64().Draw(rt, "seed"),
			Queues:    []QueueConfig{{Name: "default", Policy: policy.Config{Kind: kind}}},
			Placement: PlacementConfig{Strategy: rapid.SampledFrom([]string{"first-fit", "min-satisfying", "best"}).Draw(rt, "strategy")}})
		if err != nil {
			rt.Fatal(err)
		}
		slots := 0
		for i, n := 0, rapid.IntRange(1, 6).Draw(rt, "workers"); i < n; i++ {
			s := rapid.IntRange(1, 3).Draw(rt, "slots")
			slots += s
			if err := e.Apply(AddWorker{Worker: model.Worker{Name: fmt.Sprintf("w%d", i), Slots: s,
				Capacity: model.Resources{MilliCPU: int64(s) * 2000, MemoryMB: 8192}}, At: t0}); err != nil {
				rt.Fatal(err)
			}
		}
		minutes := func(label string) time.Duration {
			return time.Duration(rapid.IntRange(1, 30).Draw(rt, label)) * time.Minute
		}
		for i, n := 0, rapid.IntRange(1, 12).Draw(rt, "jobs"); i < n; i++ {
			j := model.Job{ID: fmt.Sprintf("j%d", i), Queue: "default", Submitted: t0.Add(time.Duration(i) * time.Second),
				Share: rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "share"), Priority: rapid.IntRange(1, 3).Draw(rt, "priority")}
			if rapid.Bool().Draw(rt, "gang") {
				size := rapid.IntRange(2, min(slots, 8)+1).Draw(rt, "size")
				size = min(size, slots) // a gang larger than the fleet is the never-fits test's
				if size < 1 {
					size = 1
				}
				least := rapid.IntRange(1, size).Draw(rt, "minAvailable")
				d := minutes("gangDuration")
				for k := range size {
					j.Tasks = append(j.Tasks, model.Task{Name: fmt.Sprintf("w%d", k), Resources: cpus(1), Duration: d, Gang: "job", GangMin: least})
				}
			} else {
				for k, m := 0, rapid.IntRange(1, 3).Draw(rt, "tasks"); k < m; k++ {
					j.Tasks = append(j.Tasks, model.Task{Name: fmt.Sprintf("t%d", k), Resources: cpus(1), Duration: minutes("duration")})
				}
			}
			if err := e.Apply(SubmitJob{Job: j}); err != nil {
				rt.Fatal(err)
			}
		}
		ends := drive.NewAttempts(func(task *task) bool { return task.state == model.TaskRunning })
		clock := t0
		for step := 0; ; step++ {
			if step > 5000 {
				rt.Fatal("no end after 5000 cycles")
			}
			before := map[*gang]bool{}
			for _, j := range e.active {
				for _, task := range j.tasks {
					if task.gang != nil {
						before[task.gang] = task.gang.launched
					}
				}
			}
			d := e.Cycle(clock)
			// Stops come before the cycle's starts.
			for _, s := range d.Stops {
				if task, err := e.lookup(s.Job, s.Task); err == nil {
					ends.Stop(task)
				}
			}
			started := map[*gang]int{}
			for _, s := range d.Starts {
				task, _ := e.lookup(s.Job, s.Task)
				ends.Start(task, clock.Add(task.spec.Duration))
				if task.gang != nil {
					started[task.gang]++
				}
			}
			for gg, launched := range before {
				run, done := gg.count(model.TaskRunning), gg.count(model.TaskSucceeded)
				if run > 0 && run+done < gg.min {
					rt.Fatalf("cycle %d: %s of job %s runs %d with %d done, below its minimum %d", step, gg.label(), gg.job.id, run, done, gg.min)
				}
				if !launched && started[gg] > 0 && started[gg] < min(gg.min, len(gg.members)-done) {
					rt.Fatalf("cycle %d: %s of job %s started %d tasks, below its minimum %d", step, gg.label(), gg.job.id, started[gg], gg.min)
				}
			}
			for _, w := range e.fleet.Workers() {
				if w.Running > w.Spec.Slots {
					rt.Fatalf("cycle %d: worker %s runs %d tasks on %d slots", step, w.Spec.Name, w.Running, w.Spec.Slots)
				}
			}
			// Now and then a running task's worker restarts it.
			if rapid.IntRange(0, 9).Draw(rt, "lose") == 0 {
				var running []*task
				for _, j := range e.active {
					for _, task := range j.tasks {
						if task.state == model.TaskRunning {
							running = append(running, task)
						}
					}
				}
				if len(running) > 0 {
					task := running[rapid.IntRange(0, len(running)-1).Draw(rt, "victim")]
					ends.Stop(task)
					if err := e.Apply(FinishTask{Job: task.job.id, Task: task.spec.Name, Outcome: model.Requeued, At: clock}); err != nil {
						rt.Fatal(err)
					}
					continue // a cycle at the same instant handles it
				}
			}
			next, ok := ends.Next()
			if !ok {
				break
			}
			clock = next
			for {
				task, at, ok := ends.Pop(clock)
				if !ok {
					break
				}
				if err := e.Apply(FinishTask{Job: task.job.id, Task: task.spec.Name, Outcome: model.Succeeded, At: at}); err != nil {
					rt.Fatal(err)
				}
			}
		}
		for _, j := range e.active {
			if !j.done {
				rt.Fatalf("job %s did not end: %d of %d tasks left, %+v", j.id, j.left, len(j.tasks), e.PendingOf(j.id))
			}
		}
	})
}
