package control

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/whatif"
)

// A task that has run longer than the queue's median is not expected to
// end at once: it runs as long as the longest of its peers, and the
// estimate says it is less sure.
func TestExplainEstimateUsesTheElapsedTimeOfRunningTasks(t *testing.T) {
	// The fake clock jumps minutes: the worker must not be lost meanwhile.
	p := newPlaneConfig(t, Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}, HeartbeatTimeout: 24 * time.Hour})
	p.register("w1", 1)
	for i := range whatif.MinSamples + 1 {
		id := fmt.Sprintf("warm-%d", i)
		p.submit(spec.Job{ID: id, Tasks: []spec.Task{{Name: "t", Run: "true"}}})
		a := p.waitAssignment("w1", "t")
		d := 2 * time.Minute
		if i == 0 {
			d = 10 * time.Minute // the longest run of the queue
		}
		p.clock.Add(d)
		if err := p.report("w1", succeeded(a)); err != nil {
			t.Fatal(err)
		}
	}
	p.submit(spec.Job{ID: "blocker", Tasks: []spec.Task{{Name: "t", Run: "sleep 1000"}}})
	p.waitAssignment("w1", "t")
	p.clock.Add(7 * time.Minute) // past the median of 2 minutes
	p.submit(spec.Job{ID: "waiting", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	x, err := p.c.Explain(p.ctx(), "waiting")
	if err != nil {
		t.Fatal(err)
	}
	if e := x.Estimate; e == nil || !e.Known || e.Wait() != 3*time.Minute || e.Confidence != "medium" {
		t.Fatalf("estimate %+v, want a start 3m on (the longest run, 10m, less the 7m run so far), confidence medium", e)
	}
}

// A queue without history does not make up a runtime: the estimate of a
// job waiting behind a task nothing estimates is unknown, and says what
// would tell.
func TestExplainEstimateWithoutHistoryIsUnknown(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "blocker", Tasks: []spec.Task{{Name: "t", Run: "sleep 1000"}}})
	p.waitAssignment("w1", "t")
	p.submit(spec.Job{ID: "waiting", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	x, err := p.c.Explain(p.ctx(), "waiting")
	if err != nil {
		t.Fatal(err)
	}
	if e := x.Estimate; e == nil || e.Known || !strings.Contains(e.Note, "blocker/t") || !strings.Contains(e.Note, "timeout") {
		t.Fatalf("estimate %+v, want unknown, naming blocker/t and what would tell", e)
	}
}
