package priority_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/engine/policy/sla"
)

// TestPropertyPreemptionIsSafe runs random grids, configs and job mixes
// through several rounds and checks, every cycle: the engine never starts
// more tasks than there are free slots after the stops, no urgent task is
// ever stopped, a suspended (priority 0) job never starts, and stops happen
// only when the config allows them.
func TestPropertyPreemptionIsSafe(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		slots := rapid.IntRange(1, 40).Draw(rt, "slots")
		kind := rapid.SampledFrom([]string{"priority", "sla"}).Draw(rt, "kind")
		var cfg policy.Config
		switch kind {
		case "priority":
			cfg = priorityCfg(priority.Config{
				Algorithm:          rapid.SampledFrom([]string{"usage", "time"}).Draw(rt, "algorithm"),
				SerialPriority:     rapid.Bool().Draw(rt, "serial"),
				PreemptablePercent: rapid.IntRange(0, 100).Draw(rt, "percent"),
				PreemptDelay:       time.Duration(rapid.IntRange(0, 3).Draw(rt, "delayMin")) * time.Minute,
				UsageWindow:        time.Duration(rapid.IntRange(1, 20).Draw(rt, "windowMin")) * time.Minute,
			})
		case "sla":
			cfg = slaCfg(sla.Config{Groups: groups("a", 0.2, "b", 0.3, "c", 0.5), Preemption: rapid.Bool().Draw(rt, "slaPreempt")})
		}
		g := newGrid(rt, slots, cfg)
		urgent := map[string]bool{}
		suspended := map[string]bool{}
		if rapid.Bool().Draw(rt, "filler") {
			// A long job that fills the grid, so later jobs must preempt.
			g.submit(newJob("filler", 2*slots).prio(rapid.IntRange(1, 9).Draw(rt, "fillerPrio")).sla("c").dur(time.Hour))
		}
		rounds := rapid.IntRange(1, 10).Draw(rt, "rounds")
		for r := 0; r < rounds; r++ {
			for k, n := 0, rapid.IntRange(0, 4).Draw(rt, "newJobs"); k < n; k++ {
				id := fmt.Sprintf("j%d_%d", r, k)
				j := newJob(id, rapid.IntRange(1, 40).Draw(rt, "tasks")).
					dur(time.Duration(rapid.IntRange(1, 60).Draw(rt, "durMin")) * time.Minute)
				if m := rapid.IntRange(0, 10).Draw(rt, "maxSlots"); m > 0 {
					j.maxSlots(m)
				}
				switch kind {
				case "priority":
					j.prio(rapid.IntRange(0, 9).Draw(rt, "prio"))
					if rapid.IntRange(0, 2).Draw(rt, "urgent") == 0 {
						j.urgent()
						urgent[id] = true
					} else if j.Priority == 0 {
						suspended[id] = true
					}
				case "sla":
					j.sla(rapid.SampledFrom([]string{"a", "b", "c"}).Draw(rt, "group"))
				}
				g.submit(j)
			}
			free := slots - g.busy()
			d := g.cycle()
			if len(d.Starts) > free+len(d.Stops) {
				rt.Fatalf("round %d: %d starts with %d free slots and %d stops", r, len(d.Starts), free, len(d.Stops))
			}
			if g.busy() > slots {
				rt.Fatalf("round %d: %d tasks run on %d slots", r, g.busy(), slots)
			}
			for _, s := range d.Stops {
				if urgent[s.Job] {
					rt.Fatalf("round %d: urgent job %s's task %s was stopped: %s", r, s.Job, s.Task, s.Reason.Message)
				}
			}
			if kind == "priority" && cfg.Settings.(*priority.Config).PreemptablePercent == 0 && len(d.Stops) > 0 {
				rt.Fatalf("round %d: preemption disabled but stopped %v", r, d.Stops)
			}
			if kind == "sla" && !cfg.Settings.(*sla.Config).Preemption && len(d.Stops) > 0 {
				rt.Fatalf("round %d: SLA preemption disabled but stopped %v", r, d.Stops)
			}
			for _, s := range d.Starts {
				if suspended[s.Job] {
					rt.Fatalf("round %d: suspended job %s started %s", r, s.Job, s.Task)
				}
			}
			g.advance(g.now.Add(time.Duration(rapid.IntRange(0, 6).Draw(rt, "stepMin")) * time.Minute))
		}
	})
}
