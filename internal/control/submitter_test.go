package control

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

func TestSubmitterIsKeptAcrossRestartsAndEnds(t *testing.T) {
	p := newPlaneWith(t, detConfig(1))
	job := func(id string, inputs ...string) spec.Job {
		return spec.Job{ID: id, Queue: "batch", Inputs: inputs, Tasks: []spec.Task{{Name: "t", Run: "true"}}}
	}
	missing := filepath.Join(t.TempDir(), "gone.tif")
	for _, tc := range []struct {
		by string
		js spec.Job
	}{{"alice", job("live")}, {"bob", job("ends")}, {"carol", job("dead", missing)}, {"", job("nobody")}} {
		if _, err := p.c.SubmitBy(p.ctx(), tc.by, tc.js); err != nil {
			t.Fatalf("SubmitBy(%q, %s): %v", tc.by, tc.js.ID, err)
		}
	}
	if _, err := p.c.Cancel(p.ctx(), "ends"); err != nil {
		t.Fatal(err)
	}
	p.restart()
	want := map[string]string{"live": "alice", "ends": "bob", "dead": "carol", "nobody": ""}
	for id, by := range want {
		if got := p.job(id).Submitter; got != by {
			t.Errorf("job %s after a restart: submitter %q, want %q", id, got, by)
		}
	}
	list, err := p.c.Jobs(p.ctx(), store.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range list.Jobs {
		if j.Submitter != want[j.ID] {
			t.Errorf("job %s in the list: submitter %q, want %q", j.ID, j.Submitter, want[j.ID])
		}
	}
	// The event says who submitted; without a submitter it says nothing.
	for _, e := range p.events(EventJobSubmitted) {
		var data map[string]any
		if err := json.Unmarshal(e.Data, &data); err != nil {
			t.Fatal(err)
		}
		by, ok := data["submitter"]
		if want[e.Job] == "" && ok || want[e.Job] != "" && by != want[e.Job] {
			t.Errorf("job_submitted of %s: data %s, want submitter %q", e.Job, e.Data, want[e.Job])
		}
	}
}

// The answer to a taken ID is the same for a live, an ended and a
// dead-lettered job, and names only the ID.
func TestTakenIDAnswersAlikeWhateverTheJob(t *testing.T) {
	p := newPlaneWith(t, detConfig(1))
	missing := filepath.Join(t.TempDir(), "gone.tif")
	for _, js := range []spec.Job{
		{ID: "live", Queue: "batch", Share: "research", Tasks: []spec.Task{{Name: "t", Run: "sleep 60"}}},
		{ID: "ended", Queue: "batch", Share: "research", Tasks: []spec.Task{{Name: "t", Run: "true"}}},
		{ID: "dead", Queue: "batch", Share: "research", Inputs: []string{missing}, Tasks: []spec.Task{{Name: "t", Run: "true"}}},
	} {
		if _, err := p.c.SubmitBy(p.ctx(), "alice", js); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.c.Cancel(p.ctx(), "ended"); err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, id := range []string{"live", "ended", "dead"} {
		_, err := p.c.SubmitBy(p.ctx(), "bob", spec.Job{ID: id, Queue: "batch", Share: "ops", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
		var taken *IDTakenError
		if !errors.As(err, &taken) || !errors.Is(err, ErrConflict) || taken.ID != id {
			t.Fatalf("a second job %s: %v, want an *IDTakenError that is a conflict", id, err)
		}
		answers = append(answers, strings.ReplaceAll(err.Error(), `"`+id+`"`, `"ID"`))
	}
	if answers[0] != answers[1] || answers[0] != answers[2] {
		t.Errorf("the answers differ by the job's state: %q", answers)
	}
	for _, leak := range []string{"research", "alice", "dead", "ended", "cancel", "batch", "exists"} {
		if strings.Contains(answers[0], leak) {
			t.Errorf("the answer %q tells %q", answers[0], leak)
		}
	}
}
