package sim_test

import (
	"testing"

	"github.com/allot-sched/allot/internal/scenario"
	"github.com/allot-sched/allot/internal/sim"
)

// Jobs that wait for other jobs in the simulator: one submitted before
// the job it waits for arrives, one whose parent ended (and was forgotten)
// before it arrives, and one that fails with its failed parent.
func TestSimulatedJobsWaitForTheJobsTheyDependOn(t *testing.T) {
	s, err := scenario.Parse([]byte(`
queues: [{name: default, policy: {kind: fifo}}]
workers: [{name: w, count: 2, resources: {cpu: 4, memory: 8Gi}}]
jobs:
  - id: early
    dependsOn: [{job: parent}]
    tasks: [{name: t, duration: 1m}]
  - id: parent
    submitAt: 1m
    tasks: [{name: t, duration: 5m}]
  - id: broken
    tasks: [{name: t, duration: 1m, fails: 1}]
  - id: late
    submitAt: 30m
    dependsOn: [{job: parent, type: afterok}]
    tasks: [{name: t, duration: 1m}]
  - id: doomed
    dependsOn: [{job: broken}]
    tasks: [{name: t, duration: 1m}]
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(sim.Input{Config: s.Config, Workers: s.Workers, Jobs: s.Jobs, Start: s.Start}, sim.Options{TimelineLines: 1000})
	if err != nil {
		t.Fatal(err)
	}
	started := map[string]float64{}
	failed := map[string]bool{}
	for _, e := range res.Timeline {
		switch e.Kind {
		case "start":
			if _, ok := started[e.Job]; !ok {
				started[e.Job] = e.AtSeconds
			}
		case "fail":
			failed[e.Job] = true
		}
	}
	if res.Outcome != "completed" {
		t.Fatalf("outcome %s, unfinished %+v", res.Outcome, res.Unfinished)
	}
	if at, ok := started["early"]; !ok || at < 6*60 {
		t.Errorf("early started at %v (%v), want after parent ended at 6m", at, ok)
	}
	if at, ok := started["late"]; !ok || at < 30*60 {
		t.Errorf("late started at %v (%v), want at its arrival, 30m", at, ok)
	}
	if _, ok := started["doomed"]; ok || !failed["doomed"] {
		t.Errorf("doomed started %v, failed %v: want it failed without starting", ok, failed["doomed"])
	}
}
