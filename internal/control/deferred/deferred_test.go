package deferred

import (
	"io"
	"log/slog"
	"testing"

	"github.com/allot-sched/allot/internal/control/hook"
	"github.com/allot-sched/allot/internal/control/hook/hooktest"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
)

// A task held back for a sticky worker gets one task_deferred event per
// wait: none while it goes on waiting, one again once it started and waits
// anew, or once its job ended and came back under the same name.
func TestOneEventPerWait(t *testing.T) {
	f := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	wait := engine.Deferral{Job: "j", Task: "t", Worker: "w1", Reason: model.Reason{Code: "sticky"}}
	steps := []struct {
		d    engine.Decisions
		want int
	}{
		{engine.Decisions{Deferred: []engine.Deferral{wait}}, 1},
		{engine.Decisions{Deferred: []engine.Deferral{wait}}, 0},
		{engine.Decisions{Starts: []engine.Start{{Job: "j", Task: "t", Worker: "w1"}}}, 0},
		{engine.Decisions{Deferred: []engine.Deferral{wait}}, 1},
		{engine.Decisions{JobsDone: []engine.JobEnd{{Job: "j"}}}, 0},
		{engine.Decisions{Deferred: []engine.Deferral{wait}}, 1},
	}
	for i, s := range steps {
		r := &hooktest.Round{}
		f.Decisions(r, &s.d)
		if len(r.Log) != s.want {
			t.Fatalf("step %d: events %+v, want %d", i, r.Log, s.want)
		}
		for _, e := range r.Log {
			if e.Kind != hook.EventTaskDeferred || e.Job != "j" || e.Task != "t" || e.Worker != "w1" || e.Reason != "sticky" {
				t.Errorf("step %d: event %+v", i, e)
			}
		}
	}
}
