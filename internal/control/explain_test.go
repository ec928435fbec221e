package control

import (
	"fmt"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/whatif"
)

func TestExplainRuntimesComeFromObservedRunsThenTheQueueThenTimeouts(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	js := spec.Job{ID: "j", Tasks: []spec.Task{
		{Name: "shard", Count: 3, Run: "true", Timeout: spec.Duration(time.Hour)},
		{Name: "merge", Run: "true", Needs: []string{"shard"}, Timeout: spec.Duration(7 * time.Minute)},
		{Name: "index", Run: "true", Needs: []string{"shard"}, Timeout: spec.Duration(time.Minute)},
		{Name: "plot", Run: "true", Duration: spec.Duration(90 * time.Second)},
		{Name: "report", Run: "true"},
	}}
	lj, err := newLiveJob(js, at)
	if err != nil {
		t.Fatal(err)
	}
	ran := func(name string, d time.Duration) {
		rec := lj.tasks[name]
		rec.State, rec.Started, rec.Ended = string(model.TaskSucceeded), at, at.Add(d)
	}
	ran("shard-0", 4*time.Minute)
	ran("shard-1", 6*time.Minute)
	cases := []struct {
		name        string
		queueMedian time.Duration
		want        map[string]time.Duration
	}{
		{"without the queue's runtimes", 0, map[string]time.Duration{
			"shard-2": 5 * time.Minute,  // the mean of its stage's runs, not its timeout
			"merge":   7 * time.Minute,  // nothing of its stage ran: its timeout
			"index":   time.Minute,      // the same
			"plot":    90 * time.Second, // its declared duration
		}}, // report has nothing: left to the engine's default
		{"with the queue's median", 3 * time.Minute, map[string]time.Duration{
			"shard-2": 5 * time.Minute,
			"merge":   3 * time.Minute,  // the queue's median, within its timeout
			"index":   time.Minute,      // the median capped by its timeout
			"plot":    90 * time.Second, // a declared duration comes first
			"report":  3 * time.Minute,  // the queue's median
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var queue *whatif.Window
			if tc.queueMedian > 0 {
				queue = &whatif.Window{}
				for range whatif.MinSamples {
					queue.Add(tc.queueMedian)
				}
			}
			got := lj.runtimes(queue)
			if len(got) != len(tc.want) {
				t.Errorf("runtimes = %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k].Typical != v {
					t.Errorf("runtime of %s = %v, want %v", k, got[k].Typical, v)
				}
			}
		})
	}
}

// The estimate learns from the queue: after tasks of the queue took two
// minutes each, a job waiting behind a task nothing else estimates is
// expected to start two minutes on, not after the 30-minute default.
func TestExplainEstimateUsesTheQueuesRecentRuntimes(t *testing.T) {
	// The fake clock jumps minutes: the worker must not be lost meanwhile.
	p := newPlaneConfig(t, Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}, HeartbeatTimeout: 24 * time.Hour})
	p.register("w1", 1)
	for i := range whatif.MinSamples {
		id := fmt.Sprintf("warm-%d", i)
		p.submit(spec.Job{ID: id, Tasks: []spec.Task{{Name: "t", Run: "true"}}})
		a := p.waitAssignment("w1", "t")
		p.clock.Add(2 * time.Minute)
		if err := p.report("w1", succeeded(a)); err != nil {
			t.Fatal(err)
		}
	}
	p.submit(spec.Job{ID: "blocker", Tasks: []spec.Task{{Name: "t", Run: "sleep 1"}}})
	p.waitAssignment("w1", "t")
	p.submit(spec.Job{ID: "waiting", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	x, err := p.c.Explain(p.ctx(), "waiting")
	if err != nil {
		t.Fatal(err)
	}
	if e := x.Estimate; e == nil || !e.Known || e.Wait() != 2*time.Minute {
		t.Fatalf("estimate %+v, want a start 2m on (the queue's median runtime)", e)
	}
}
