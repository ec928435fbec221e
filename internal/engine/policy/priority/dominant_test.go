package priority_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/engine/policy/sla"
	"github.com/allot-sched/allot/internal/model"
)

// Under usage: dominant the usage window books what a job holds of the
// scarcest kind: of two equal jobs each one task short of its ideal, with
// one slot free, the job whose tasks hold GPUs has used more and waits,
// where under slots their usage is equal and the older job goes first.
// The pool: 15 slots, 32 CPUs, 16 GPUs; gpu's 7 tasks hold 14 GPUs (14/16
// of the pool, 13.1 slot-equivalents), cpu's 7 tasks 7 slots (7/15, 7).
func TestDominantUsageWindowServesTheJobThatHeldLessFirst(t *testing.T) {
	policies := map[string]func(usage policy.Usage) policy.Config{
		"priority": func(u policy.Usage) policy.Config {
			return policy.Config{Kind: "priority", Usage: string(u), Settings: &priority.Config{}}
		},
		"sla": func(u policy.Usage) policy.Config {
			return policy.Config{Kind: "sla", Usage: string(u), Settings: &sla.Config{Groups: []sla.Group{{Name: "all", Value: 1}}}}
		},
	}
	for name, cfg := range policies {
		for usage, want := range map[policy.Usage]string{policy.UsageSlots: "gpu", policy.UsageDominant: "cpu"} {
			t.Run(name+"/"+string(usage), func(t *testing.T) {
				e, err := engine.New(engine.Config{Queues: []engine.QueueConfig{{Name: "q", Policy: cfg(usage)}}})
				if err != nil {
					t.Fatal(err)
				}
				for i, slots := range []int{4, 4, 4, 3} {
					w := model.Worker{Name: fmt.Sprintf("w%d", i), Slots: slots, Capacity: model.Resources{MilliCPU: 8000, MemoryMB: 32768, GPUs: 4}}
					if err := e.Apply(engine.AddWorker{Worker: w, At: t0}); err != nil {
						t.Fatal(err)
					}
				}
				for _, j := range []struct {
					id  string
					res model.Resources
				}{{"gpu", model.Resources{MilliCPU: 1000, GPUs: 2}}, {"cpu", model.Resources{MilliCPU: 1000}}} {
					job := model.Job{ID: j.id, Queue: "q", Priority: 5, SLAGroup: "all", Submitted: t0}
					for k := 0; k < 20; k++ {
						job.Tasks = append(job.Tasks, model.Task{Name: fmt.Sprintf("t%02d", k), Resources: j.res})
					}
					if err := e.Apply(engine.SubmitJob{Job: job}); err != nil {
						t.Fatal(err)
					}
				}
				for _, id := range []string{"gpu", "cpu"} {
					for k := 0; k < 7; k++ {
						if err := e.Apply(engine.RestoreRunning{Job: id, Task: fmt.Sprintf("t%02d", k), Worker: fmt.Sprintf("w%d", k/2), Started: t0}); err != nil {
							t.Fatal(err)
						}
					}
				}
				// The free slot's first task ends at once: a window later,
				// both jobs have run 7 tasks all along.
				for _, s := range e.Cycle(t0).Starts {
					if err := e.Apply(engine.FinishTask{Job: s.Job, Task: s.Task, Outcome: model.Succeeded, At: t0}); err != nil {
						t.Fatal(err)
					}
				}
				d := e.Cycle(t0.Add(10 * time.Minute))
				if len(d.Starts) != 1 || d.Starts[0].Job != want {
					t.Fatalf("starts %+v, want one task of %s", d.Starts, want)
				}
			})
		}
	}
}
