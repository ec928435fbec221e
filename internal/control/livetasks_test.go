package control

import (
	"errors"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/spec"
)

// tasksJob is a job of n tasks (one entry with a count) in queue batch.
func tasksJob(id string, n int) spec.Job {
	return spec.Job{ID: id, Queue: "batch", Tasks: []spec.Task{{Name: "t", Run: "true", Count: n}}}
}

// The live tasks are bounded per submitter and for the server; a refusal
// names the bound and the count, an admin is held to the server's bound
// alone, a job's end gives its tasks back, and a restart counts the jobs
// it recovers.
func TestLiveTasksAreBoundedPerSubmitterAndForTheServer(t *testing.T) {
	p := newPlaneConfig(t, Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}},
		MaxLiveTasks: 10, MaxLiveTasksPerSubmitter: 6})
	type step struct {
		name  string
		by    string
		admin bool
		job   spec.Job
		limit string // the bound that refuses it; "" to accept
		live  int    // the count the refusal names
	}
	submit := func(s step) {
		t.Helper()
		subs, err := p.c.SubmitCheckedWith(p.ctx(), s.by, []spec.Job{s.job}, SubmitOptions{AnySubmitter: s.admin})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		err = subs[0].Err
		var tm *TooManyTasksError
		switch {
		case s.limit == "" && err != nil:
			t.Fatalf("%s: refused: %v", s.name, err)
		case s.limit == "":
		case !errors.As(err, &tm):
			t.Fatalf("%s: %v, want a TooManyTasksError of %s", s.name, err, s.limit)
		case tm.Limit != s.limit || tm.Live != s.live || tm.Tasks != taskCount(s.job):
			t.Fatalf("%s: %+v, want limit %s with %d live", s.name, tm, s.limit, s.live)
		}
	}
	for _, s := range []step{
		{name: "alice's first", by: "alice", job: tasksJob("a1", 4)},
		{name: "alice past her bound", by: "alice", job: tasksJob("a2", 3), limit: "server.limits.maxLiveTasksPerSubmitter", live: 4},
		{name: "alice up to her bound", by: "alice", job: tasksJob("a3", 2)},
		{name: "bob, another submitter", by: "bob", job: tasksJob("b1", 3)},
		{name: "bob past the server's bound", by: "bob", job: tasksJob("b2", 2), limit: "server.limits.maxLiveTasks", live: 9},
		{name: "an admin past the server's bound", by: "ops", admin: true, job: tasksJob("o1", 2), limit: "server.limits.maxLiveTasks", live: 9},
		{name: "an admin past a submitter's bound", by: "alice", admin: true, job: tasksJob("o2", 1)},
	} {
		submit(s)
	}
	// A restart counts what it recovers: the server is full.
	p.restart()
	submit(step{name: "after a restart", by: "carol", job: tasksJob("c1", 1), limit: "server.limits.maxLiveTasks", live: 10})
	// An ended job gives its tasks back.
	if _, err := p.c.Cancel(p.ctx(), "a1"); err != nil {
		t.Fatal(err)
	}
	submit(step{name: "alice once a job ended", by: "alice", job: tasksJob("a4", 3)})
	submit(step{name: "alice past her bound again", by: "alice", job: tasksJob("a5", 1), limit: "server.limits.maxLiveTasksPerSubmitter", live: 6})
	// The snapshot (allot_live_tasks) shows the server's count: a3, b1,
	// o2 and a4.
	deadline := time.Now().Add(testTimeout)
	for p.c.Snapshot().LiveTasks != 9 {
		if time.Now().After(deadline) {
			t.Fatalf("snapshot: %d live tasks, want 9", p.c.Snapshot().LiveTasks)
		}
		time.Sleep(time.Millisecond)
	}
}

// Of the jobs of one bulk submission, those past a bound are refused each
// on its own and the others stored.
func TestBulkSubmissionPastTheLiveTaskBoundRefusesOnlyTheJobsPastIt(t *testing.T) {
	p := newPlaneConfig(t, Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}},
		MaxLiveTasks: 100, MaxLiveTasksPerSubmitter: 5})
	subs, err := p.c.SubmitManyBy(p.ctx(), "alice", []spec.Job{tasksJob("j1", 3), tasksJob("j2", 3), tasksJob("j3", 2), tasksJob("j4", 1)})
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{true, false, true, false} // stored
	for i, s := range subs {
		var tm *TooManyTasksError
		if stored := s.Err == nil; stored != want[i] || !stored && !errors.As(s.Err, &tm) {
			t.Errorf("job %d: %v, want stored %v or a TooManyTasksError", i+1, s.Err, want[i])
		}
	}
}

// Requeueing a job that ended makes its tasks live again: past its
// submitter's bound it is refused, and stays ended.
func TestRequeuePastTheLiveTaskBoundIsRefused(t *testing.T) {
	p := newPlaneConfig(t, Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}},
		MaxLiveTasks: 100, MaxLiveTasksPerSubmitter: 3})
	if _, err := p.c.SubmitBy(p.ctx(), "alice", tasksJob("old", 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.Cancel(p.ctx(), "old"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.SubmitBy(p.ctx(), "alice", tasksJob("new", 2)); err != nil {
		t.Fatal(err)
	}
	var tm *TooManyTasksError
	if _, err := p.c.Requeue(p.ctx(), "old", ""); !errors.As(err, &tm) || tm.Live != 2 || tm.Submitter != "alice" {
		t.Fatalf("Requeue past alice's bound: %v, want a TooManyTasksError with 2 live", err)
	}
	if st := p.job("old").State; st != "cancelled" {
		t.Errorf("the refused job is %s, want cancelled", st)
	}
}
