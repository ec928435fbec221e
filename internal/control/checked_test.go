package control

import (
	"testing"

	"github.com/allot-sched/allot/internal/spec"
)

// SubmitCheckedBy stores what SubmitManyBy stores for jobs that passed
// CheckJob, and answers a taken ID alike; SubmitManyBy still checks what
// it is given.
func TestCheckedSubmissionStoresWhatASubmissionStores(t *testing.T) {
	p := newPlane(t)
	specs := []spec.Job{oneTask("checked-a"), oneTask("")}
	for _, js := range specs {
		if err := p.c.CheckJob(js); err != nil {
			t.Fatalf("CheckJob(%q): %v", js.ID, err)
		}
	}
	got, err := p.c.SubmitCheckedBy(p.ctx(), "alice", specs)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range got {
		if s.Err != nil {
			t.Fatalf("job %d refused: %v", i, s.Err)
		}
		stored, err := p.c.Job(p.ctx(), s.Job.ID)
		if err != nil {
			t.Fatalf("job %d (%s) not stored: %v", i, s.Job.ID, err)
		}
		if stored.Queue != "batch" || stored.Submitter != "alice" {
			t.Errorf("job %d stored as queue %q by %q, want batch by alice", i, stored.Queue, stored.Submitter)
		}
	}
	if got[0].Job.ID != "checked-a" || got[1].Job.ID == "" {
		t.Errorf("IDs %q, %q: want checked-a and one the server made", got[0].Job.ID, got[1].Job.ID)
	}
	again, err := p.c.SubmitCheckedBy(p.ctx(), "", []spec.Job{secondJob("checked-a")})
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Err == nil {
		t.Error("a second job under a taken ID was stored")
	}

	bad := oneTask("unchecked")
	bad.Queue = "no-such-queue"
	out, err := p.c.SubmitManyBy(p.ctx(), "", []spec.Job{bad})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Err == nil {
		t.Error("SubmitManyBy stored a job of a queue that does not exist")
	}
}
