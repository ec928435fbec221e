package rest

import (
	"testing"

	"github.com/allot-sched/allot/internal/api"
)

// Hold and release take cancel's authorisation: a submitter holds and
// releases the jobs it sees (404 for the others, as for a missing job), an
// admin any job; the job names its holder.
func TestHoldAndReleaseAsCancel(t *testing.T) {
	s := newAuthServer(t, "batch")
	alice := s.token(t, api.CreateToken{Name: "alice", Role: "submitter", Queues: []string{"*"}, Shares: []string{"research"}})
	job := func(id, share string) string {
		return "id: " + id + "\nshare: " + share + "\ntasks: [{name: x, run: 'sleep 60'}]\n"
	}
	s.must(t, 201, s.admin, "POST", "/v1/jobs", job("theirs", "ops"), nil)
	s.must(t, 201, alice.Secret, "POST", "/v1/jobs", job("mine", "research"), nil)

	var j api.Job
	s.must(t, 200, alice.Secret, "POST", "/v1/jobs/mine/hold", "", &j)
	if j.HeldBy != "alice" {
		t.Fatalf("held job answers heldBy %q, want alice", j.HeldBy)
	}
	s.must(t, 200, alice.Secret, "GET", "/v1/jobs/mine", "", &j)
	if j.HeldBy != "alice" || len(j.Tasks) != 1 || j.Tasks[0].Reason == nil || j.Tasks[0].Reason.Code != "held" {
		t.Fatalf("GET of the held job: heldBy %q tasks %+v", j.HeldBy, j.Tasks)
	}
	for _, path := range []string{"/v1/jobs/theirs/hold", "/v1/jobs/theirs/release"} {
		status, eb, raw, _ := s.as(t, alice.Secret, "POST", path, "")
		if status != 404 || eb.Error.Code != api.CodeNotFound {
			t.Errorf("POST %s as alice: %d %s, want 404 as for a missing job", path, status, raw)
		}
	}
	s.must(t, 200, s.admin, "POST", "/v1/jobs/theirs/hold", "", &j)
	if j.HeldBy == "" {
		t.Fatal("the admin's hold names no holder")
	}
	var released api.Job
	s.must(t, 200, alice.Secret, "POST", "/v1/jobs/mine/release", "", &released)
	if released.HeldBy != "" {
		t.Fatalf("released job still held by %q", released.HeldBy)
	}
	s.must(t, 200, s.admin, "POST", "/v1/jobs/mine/cancel", "", nil)
	status, eb, raw, _ := s.as(t, alice.Secret, "POST", "/v1/jobs/mine/hold", "")
	if status != 409 || eb.Error.Code != api.CodeConflict {
		t.Fatalf("hold of an ended job: %d %s, want 409", status, raw)
	}
	if status, _, raw, _ := s.as(t, alice.Secret, "POST", "/v1/jobs/nope/release", ""); status != 404 {
		t.Fatalf("release of a missing job: %d %s", status, raw)
	}
}
