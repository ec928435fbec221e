package scenario

import (
	"testing"

	"github.com/allot-sched/allot/internal/sim"
)

// TestGangExample checks what examples/gang.yaml promises: the gang of 8
// starts whole, in one cycle, at 30m, when the last warm-up tasks end;
// the lint tasks backfill in front of it; the stream does not delay it.
func TestGangExample(t *testing.T) {
	s := loadExample(t, "gang.yaml")
	res, err := sim.Run(sim.Input{Config: s.Config, Workers: s.Workers, Jobs: s.Jobs, Start: s.Start}, sim.Options{TimelineLines: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != "completed" {
		t.Fatalf("outcome %s", res.Outcome)
	}
	var trainStarts []sim.TimelineEntry
	lintFirst := -1.0
	for _, e := range res.Timeline {
		switch {
		case e.Job == "train" && (e.Kind == "start" || e.Kind == "stop"):
			trainStarts = append(trainStarts, e)
		case e.Job == "lint" && e.Kind == "start" && lintFirst < 0:
			lintFirst = e.AtSeconds
		}
	}
	if len(trainStarts) != 1 || trainStarts[0].Kind != "start" || trainStarts[0].Count != 8 || trainStarts[0].AtSeconds != 30*60 {
		t.Fatalf("the gang's starts and stops: %+v, want all 8 at once at 1800s", trainStarts)
	}
	if lintFirst != 10*60 {
		t.Fatalf("lint first started at %gs, want 600s (backfill on the held workers)", lintFirst)
	}
}
