package control

import (
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
)

// The job's user travels with every assignment of its tasks, and survives
// a restart of the server with the stored job.
func TestAssignmentsCarryTheJobsUserAcrossARestart(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 2)
	p.submit(spec.Job{ID: "j", User: "svc-etl", Tasks: []spec.Task{{Name: "a", Run: "true"}, {Name: "b", Needs: []string{"a"}, Run: "true"}}})
	p.submit(spec.Job{ID: "plain", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	l := p.leaseUntil("w1", "a and the plain job", func(l api.Lease) bool {
		_, a := attemptOf(l.Assignments, "a")
		_, t := attemptOf(l.Assignments, "t")
		return a && t
	})
	checkUsers(t, "before the restart", l.Assignments)
	a, _ := attemptOf(l.Assignments, "a")
	plain, _ := attemptOf(l.Assignments, "t")

	p.restart()
	p.register("w1", 2, a, plain)
	if err := p.report("w1", succeeded(a), succeeded(plain)); err != nil {
		t.Fatal(err)
	}
	l = p.leaseUntil("w1", "b", func(l api.Lease) bool { _, ok := attemptOf(l.Assignments, "b"); return ok })
	checkUsers(t, "after the restart", l.Assignments)
}

func checkUsers(t *testing.T, when string, as []api.Assignment) {
	t.Helper()
	for _, a := range as {
		want := "svc-etl"
		if a.Job == "plain" {
			want = ""
		}
		if a.User != want {
			t.Errorf("%s, %s/%s has user %q, want %q", when, a.Job, a.Task, a.User, want)
		}
	}
}
