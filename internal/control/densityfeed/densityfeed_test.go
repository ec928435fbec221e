package densityfeed

import (
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/control/hook"
	"github.com/allot-sched/allot/internal/control/hook/hooktest"
	"github.com/allot-sched/allot/internal/density"
	"github.com/allot-sched/allot/internal/store"
)

// A round's end counts every task of each submitted job, each start, and
// the busy workers, with the enabled workers the fleet count set.
func TestRoundEndRecordsSubmissionsStartsAndBusyWorkers(t *testing.T) {
	w := density.NewWindow(time.Minute, density.WindowBuckets)
	w.SetEnabled(3)
	f := New(w)
	at := time.Date(2026, 3, 1, 10, 0, 5, 0, time.UTC)
	f.RoundEnd(&hooktest.Round{At: at, Tasks: map[string]int{"j": 4, "k": 2}, Busy: 2, Log: []store.Event{
		{Kind: hook.EventJobSubmitted, Job: "j"}, {Kind: hook.EventTaskStarted, Job: "j"},
		{Kind: hook.EventTaskStarted, Job: "j"}, {Kind: "task_succeeded", Job: "j"}, {Kind: hook.EventJobSubmitted, Job: "gone"},
	}})
	f.RoundEnd(&hooktest.Round{At: at.Add(time.Second), Busy: 1, Log: []store.Event{{Kind: hook.EventTaskStarted, Job: "j"}}})
	d := f.Series()
	if d.BucketSeconds != 60 || len(d.Buckets) != 1 {
		t.Fatalf("series %+v, want one 60 s bucket", d)
	}
	b := d.Buckets[0]
	if b.Submitted != 4 || b.Started != 3 || b.ActiveWorkers != 1 || b.PeakActiveWorkers != 2 || b.EnabledWorkers != 3 {
		t.Errorf("bucket %+v, want 4 submitted, 3 started, 1 active (peak 2), 3 enabled", b)
	}
}
