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

func TestSetResourcesAsCancel(t *testing.T) {
	s := newAuthServer(t, "batch")
	alice := s.token(t, api.CreateToken{Name: "alice", Role: "submitter", Queues: []string{"*"}, Shares: []string{"research"}})
	s.must(t, 201, s.admin, "POST", "/v1/jobs", "id: theirs\nshare: ops\ntasks: [{name: x, run: 'true'}]\n", nil)
	s.must(t, 201, alice.Secret, "POST", "/v1/jobs", "id: mine\nshare: research\ntasks: [{name: x, count: 2, run: 'true', resources: {cpu: 4, memory: 1Gi}}]\n", nil)
	var j api.Job
	s.must(t, 200, alice.Secret, "POST", "/v1/jobs/mine/resources", `{"cpu":"500m","gpus":0}`, &j)
	if r := j.Spec.Tasks[0].Resources; r.CPU != 500 || r.Memory != 1024 {
		t.Fatalf("after the change the job asks for %+v, want 500m CPU and its 1Gi", r)
	}
	if status, eb, raw, _ := s.as(t, alice.Secret, "POST", "/v1/jobs/theirs/resources", `{"cpu":"1"}`); status != 404 || eb.Error.Code != api.CodeNotFound {
		t.Errorf("alice changing another team's job: %d %s, want 404", status, raw)
	}
	if status, eb, raw, _ := s.as(t, alice.Secret, "POST", "/v1/jobs/mine/resources", `{"cpu":"lots"}`); status != 400 || eb.Error.Field != "cpu" {
		t.Errorf("cpu lots: %d %s, want 400 naming cpu", status, raw)
	}
	if status, _, raw, _ := s.as(t, alice.Secret, "POST", "/v1/jobs/mine/resources", `{}`); status != 400 {
		t.Errorf("an empty change: %d %s, want 400", status, raw)
	}
}
