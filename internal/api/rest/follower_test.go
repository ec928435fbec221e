package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// A follower with the store's reads serves the job reads from the store
// the leader writes, and still answers not_leader to everything else.
func TestAFollowerServesJobReadsFromTheStoreAndNothingElse(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ctrl, err := control.New(ctx, control.Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}}, st)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	defer func() { cancel(); <-done }()
	leader := httptest.NewServer(New(ctrl, Options{}).Handler())
	defer leader.Close()
	l := &switchLeadership{leader: leader.URL}
	follower := httptest.NewServer(New(nil, Options{Leadership: l, FollowerReads: control.NewStoreReader(st)}).Handler())
	defer follower.Close()

	if status, _, raw := call(t, leader, "POST", "/v1/jobs", "application/json", `{"id":"j1","tasks":[{"name":"t","run":"true"}]}`); status != http.StatusCreated {
		t.Fatalf("submit to the leader: %d %s", status, raw)
	}
	status, _, raw := call(t, follower, "GET", "/v1/jobs/j1", "", "")
	var j api.Job
	if status != 200 || json.Unmarshal(raw, &j) != nil || j.ID != "j1" || len(j.Tasks) != 1 {
		t.Errorf("GET a job on the follower: %d %s", status, raw)
	}
	status, _, raw = call(t, follower, "GET", "/v1/jobs?queue=batch", "", "")
	var list api.JobList
	if status != 200 || json.Unmarshal(raw, &list) != nil || len(list.Jobs) != 1 {
		t.Errorf("GET /v1/jobs on the follower: %d %s", status, raw)
	}
	if status, _, raw := call(t, follower, "GET", "/v1/jobs/j1/logs", "", ""); status != 200 {
		t.Errorf("GET a job's logs on the follower: %d %s", status, raw)
	}
	if status, eb, raw := call(t, follower, "GET", "/v1/jobs/nope", "", ""); status != 404 || eb.Error.Code != api.CodeNotFound {
		t.Errorf("GET an unknown job on the follower: %d %s", status, raw)
	}
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/jobs", `{"id":"j2","tasks":[{"name":"t","run":"true"}]}`},
		{"POST", "/v1/jobs/j1/cancel", ""},
		{"GET", "/v1/jobs/j1/explain", ""},
		{"GET", "/v1/workers", ""},
		{"POST", "/v1/workers/w1/heartbeat", ""},
	} {
		status, eb, raw := call(t, follower, r.method, r.path, "application/json", r.body)
		if status != http.StatusServiceUnavailable || eb.Error.Code != api.CodeNotLeader || eb.Error.Leader != leader.URL {
			t.Errorf("%s %s on the follower: %d %s, want 503 not_leader naming the leader", r.method, r.path, status, raw)
		}
	}
}
