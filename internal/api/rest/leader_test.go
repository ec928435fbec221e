package rest

import (
	"net/http"
	"sync"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
)

// switchLeadership is a Leadership a test flips.
type switchLeadership struct {
	mu      sync.Mutex
	leading bool
	leader  string
}

func (l *switchLeadership) Leader() (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leading, l.leader
}

func (l *switchLeadership) set(leading bool, leader string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leading, l.leader = leading, leader
}

// A replica that does not lead answers every API call not_leader, with
// the leader's URL in the body and a header, and handles none of them;
// probes and the API description are its own. Once it leads it serves.
func TestAReplicaThatDoesNotLeadNamesTheLeaderAndHandlesNothing(t *testing.T) {
	l := &switchLeadership{leader: "http://leader.example:7070"}
	srv := newServerOptions(t, spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}, Options{Leadership: l})
	job := `{"id":"j1","tasks":[{"name":"t","run":"true"}]}`

	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/jobs", job},
		{"GET", "/v1/jobs", ""},
		{"POST", "/v1/workers", `{"name":"w1"}`},
		{"POST", "/v1/workers/w1/heartbeat", ""},
		{"GET", "/", ""},
	} {
		status, eb, raw := call(t, srv, r.method, r.path, "application/json", r.body)
		if status != http.StatusServiceUnavailable || eb.Error.Code != api.CodeNotLeader || eb.Error.Leader != l.leader {
			t.Errorf("%s %s: %d %s, want 503 not_leader naming the leader", r.method, r.path, status, raw)
		}
	}
	resp, err := http.Post(srv.URL+"/v1/jobs", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get(api.LeaderHeader); got != l.leader {
		t.Errorf("%s header = %q, want %q", api.LeaderHeader, got, l.leader)
	}
	for _, path := range []string{"/healthz", "/readyz", "/openapi.json"} {
		if status, _, raw := call(t, srv, "GET", path, "", ""); status != http.StatusOK {
			t.Errorf("GET %s: %d %s, want 200: a follower that knows the leader is ready", path, status, raw)
		}
	}

	l.set(false, "") // an election under way
	status, eb, raw := call(t, srv, "GET", "/readyz", "", "")
	if status != http.StatusServiceUnavailable || eb.Error.Code != api.CodeNotLeader || eb.Error.Leader != "" {
		t.Errorf("readyz without a known leader: %d %s, want 503 not_leader", status, raw)
	}

	l.set(true, "")
	if status, _, raw := call(t, srv, "POST", "/v1/jobs", "application/json", job); status != http.StatusCreated {
		t.Fatalf("submit on the leader: %d %s", status, raw)
	}
	// Nothing was handled while it did not lead: j1 is new here.
	status, eb, raw = call(t, srv, "GET", "/v1/jobs/j1", "", "")
	if status != http.StatusOK || eb.Error.Code != "" {
		t.Errorf("get j1: %d %s", status, raw)
	}
}
