package control

import (
	"errors"
	"fmt"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
)

func oneTask(id string) spec.Job {
	return spec.Job{ID: id, Queue: "batch", Tasks: []spec.Task{{Name: "t", Run: "true"}}}
}

// secondJob is another job than oneTask(id) under the same ID: a job the
// ID's holder did not submit (the same body again would be a duplicate,
// duplicate.go).
func secondJob(id string) spec.Job {
	js := oneTask(id)
	js.Tasks[0].Run = "echo second"
	return js
}

// runToEnd submits a one-task job and reports its task succeeded, so that
// the job ends and the loop forgets it.
func runToEnd(p *plane, id string) {
	p.t.Helper()
	p.submit(oneTask(id))
	l := p.leaseUntil("w", "the task of "+id, func(l api.Lease) bool { _, ok := attemptOf(l.Assignments, "t"); return ok })
	a, _ := attemptOf(l.Assignments, "t")
	if err := p.report("w", succeeded(a)); err != nil {
		p.t.Fatal(err)
	}
	if j := p.job(id); j.State != "succeeded" {
		p.t.Fatalf("job %s is %s, want succeeded", id, j.State)
	}
}

func wantTaken(t *testing.T, what string, err error) {
	t.Helper()
	var taken *IDTakenError
	if !errors.As(err, &taken) || !errors.Is(err, ErrConflict) {
		t.Errorf("%s: %v, want an *IDTakenError", what, err)
	}
}

// Job IDs stay taken once used: by live and ended jobs, and after a
// restart, when the loop remembers only the unfinished ones.
func TestJobIDsStayTakenAcrossARestart(t *testing.T) {
	p := newPlane(t)
	p.register("w", 1)
	runToEnd(p, "ended")
	p.submit(spec.Job{ID: "live", Queue: "batch", Tasks: []spec.Task{{Name: "t", Run: "sleep 60"}}})
	for round := range 2 {
		for _, id := range []string{"ended", "live"} {
			_, err := p.c.Submit(p.ctx(), secondJob(id))
			wantTaken(t, fmt.Sprintf("round %d, a second job %s", round, id), err)
			fresh := fmt.Sprintf("%s-%d", id, round)
			subs, err := p.c.SubmitManyBy(p.ctx(), "", []spec.Job{oneTask(fresh), secondJob(id)})
			if err != nil {
				t.Fatal(err)
			}
			wantTaken(t, fmt.Sprintf("round %d, a second job %s in a bulk call", round, id), subs[1].Err)
			if subs[0].Err != nil {
				t.Errorf("round %d, job %s: %v", round, fresh, subs[0].Err)
			}
		}
		p.restart()
		p.register("w", 1)
	}
}

// A job can be created, run and forgotten by the loop between the
// submission's read of the store (which found nothing: the job's creation
// was not committed yet) and the submission's loop round. The ID is taken
// all the same.
func TestAnIDEndedBetweenTheStoreReadAndTheRoundIsTaken(t *testing.T) {
	p := newPlane(t)
	p.register("w", 1)
	seen := p.c.gone.epoch.Load()
	runToEnd(p, "quick") // meanwhile: created, ended, forgotten
	_, err := p.c.do(p.ctx(), func(tx *txn) (any, error) {
		if _, live := p.c.jobs["quick"]; live {
			t.Fatal("the loop still holds the ended job")
		}
		return p.c.submit(p.ctx(), tx, secondJob("quick"), "", "", false, seen)
	})
	wantTaken(t, "a second job quick, checked in the store before the first was stored", err)
}

// The record of forgotten jobs is bounded; a submission that read the store
// before the oldest epoch it still holds is checked against the store on
// the loop.
func TestForgottenIDsAreBoundedAndOldReadsAreCheckedAgain(t *testing.T) {
	var g goneIDs
	g.forget([]string{"first"})
	if gone, known := g.since("first", 0); !gone || !known {
		t.Fatalf("first, read in epoch 0: gone %v known %v, want both", gone, known)
	}
	if gone, known := g.since("first", 1); gone || !known {
		t.Fatalf("first, read in epoch 1: gone %v known %v, want known, not gone (the read saw it)", gone, known)
	}
	ids := make([]string, goneKeep)
	for i := range ids {
		ids[i] = fmt.Sprintf("j%d", i)
	}
	g.forget(ids)
	if len(g.at) != goneKeep || len(g.order) != goneKeep {
		t.Fatalf("%d IDs remembered (%d in order), want %d", len(g.at), len(g.order), goneKeep)
	}
	if _, known := g.since("first", 0); known {
		t.Error("a read in epoch 0 is relied on after epoch 1 was dropped")
	}
	if gone, known := g.since("j7", 1); !gone || !known {
		t.Errorf("j7, read in epoch 1: gone %v known %v, want both", gone, known)
	}

	// The loop reads the store when the record cannot tell.
	p := newPlane(t)
	p.register("w", 1)
	runToEnd(p, "old")
	p.c.gone.floor = p.c.gone.epoch.Load() + 1 // as if the epochs up to now were dropped
	_, err := p.c.do(p.ctx(), func(tx *txn) (any, error) {
		return p.c.submit(p.ctx(), tx, secondJob("old"), "", "", false, p.c.gone.epoch.Load())
	})
	wantTaken(t, "a second job old, checked in an epoch the record dropped", err)
}

// A job submitted without an ID gets one the server makes, which is not
// taken.
func TestServerMadeIDsAreFree(t *testing.T) {
	p := newPlane(t)
	subs, err := p.c.SubmitManyBy(p.ctx(), "", []spec.Job{oneTask(""), oneTask(""), oneTask("")})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, s := range subs {
		if s.Err != nil || s.Job.ID == "" || seen[s.Job.ID] {
			t.Fatalf("job %d: %+v %v, want a new ID", i, s.Job.ID, s.Err)
		}
		seen[s.Job.ID] = true
		if j := p.job(s.Job.ID); j.ID != s.Job.ID {
			t.Errorf("job %s is not stored under its ID (%+v)", s.Job.ID, j)
		}
	}
}
