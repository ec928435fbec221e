package rest

import (
	"testing"

	"github.com/allot-sched/allot/internal/api"
)

func TestRequeueAndCancelTaskAreTheSubmittersOwnAsCancelIs(t *testing.T) {
	s := newAuthServer(t, "batch")
	alice := s.token(t, api.CreateToken{Role: "submitter", Queues: []string{"*"}, Shares: []string{"research"}})
	wk := s.token(t, api.CreateToken{Role: "worker", Workers: []string{"w1"}})
	job := func(id, share string) string {
		return "id: " + id + "\nshare: " + share + "\ntasks: [{name: x, run: 'sleep 60'}, {name: y, needs: [x], run: 'true'}]\n"
	}
	s.must(t, 201, s.admin, "POST", "/v1/jobs", job("theirs", "ops"), nil)
	s.must(t, 201, alice.Secret, "POST", "/v1/jobs", job("mine", "research"), nil)

	for _, p := range []string{"/v1/jobs/theirs/requeue", "/v1/jobs/theirs/tasks/x/requeue", "/v1/jobs/theirs/tasks/x/cancel"} {
		if status, eb, raw, _ := s.as(t, alice.Secret, "POST", p, ""); status != 404 || eb.Error.Code != api.CodeNotFound {
			t.Errorf("POST %s as alice: %d %s, want 404 as for a missing job", p, status, raw)
		}
		if status, _, raw, _ := s.as(t, wk.Secret, "POST", p, ""); status != 403 {
			t.Errorf("POST %s as a worker: %d %s, want 403", p, status, raw)
		}
	}
	var j api.Job
	s.must(t, 200, s.admin, "GET", "/v1/jobs/theirs", "", &j)
	if j.State != "pending" {
		t.Errorf("the other team's job is %s after alice's refused requests", j.State)
	}

	// Alice's own: x waits, so a requeue of it is a conflict; its cancel
	// ends y with it, and the job; the job's requeue runs both again.
	if status, eb, raw, _ := s.as(t, alice.Secret, "POST", "/v1/jobs/mine/tasks/x/requeue", ""); status != 409 || eb.Error.Code != api.CodeConflict {
		t.Errorf("requeue of a waiting task: %d %s, want 409", status, raw)
	}
	if status, eb, raw, _ := s.as(t, alice.Secret, "POST", "/v1/jobs/mine/tasks/nope/cancel", ""); status != 404 || eb.Error.Code != api.CodeNotFound {
		t.Errorf("cancel of an unknown task: %d %s, want 404", status, raw)
	}
	s.must(t, 200, alice.Secret, "POST", "/v1/jobs/mine/tasks/x/cancel", "", &j)
	if j.Counts["cancelled"] != 2 {
		t.Errorf("after the cancel of x: %+v, want x and y cancelled", j.Counts)
	}
	var again api.Job
	s.must(t, 200, alice.Secret, "POST", "/v1/jobs/mine/requeue", "", &again)
	if j = again; j.State != "pending" || j.Counts["cancelled"] != 0 {
		t.Errorf("after the requeue: %s %+v, want pending with nothing cancelled: %+v", j.State, j.Counts, j.Tasks)
	}
}
