package control

import (
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

func TestExplainRuntimesComeFromObservedRunsThenTimeouts(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	js := spec.Job{ID: "j", Tasks: []spec.Task{
		{Name: "shard", Count: 3, Run: "true", Timeout: spec.Duration(time.Hour)},
		{Name: "merge", Run: "true", Needs: []string{"shard"}, Timeout: spec.Duration(7 * time.Minute)},
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
	got := lj.runtimes()
	want := map[string]time.Duration{
		"shard-2": 5 * time.Minute, // the mean of its stage's runs, not its timeout
		"merge":   7 * time.Minute, // nothing of its stage ran: its timeout
	}
	if len(got) != len(want) {
		t.Errorf("runtimes = %v, want %v (report has neither and is left to the engine)", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("runtime of %s = %v, want %v", k, got[k], v)
		}
	}
}
