package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
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
		if status, _, raw := call(t, srv, "GET", path, "", ""); status != http.StatusOK || strings.Contains(string(raw), "leader.example") {
			t.Errorf("GET %s: %d %s, want 200 without the leader's URL: a follower that knows the leader is ready", path, status, raw)
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

// With authentication on, a caller without a valid token learns nothing
// of the leader: the API answers 401, the dashboard's paths not_leader
// without naming it; a caller with a token is told.
func TestOnlyAuthenticatedCallersLearnWhereTheLeaderIs(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	file := filepath.Join(dir, auth.AdminTokenFile)
	if _, _, err := auth.Bootstrap(context.Background(), st, file, time.Now()); err != nil {
		t.Fatal(err)
	}
	secret, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	l := &switchLeadership{leader: "http://leader.example:7070"}
	// A replica that does not lead needs no loop to answer.
	srv := httptest.NewServer(New(nil, Options{Auth: auth.NewAuthenticator(st, nil, 0), Leadership: l}).Handler())
	t.Cleanup(srv.Close)
	get := func(path, token string) (int, api.Error, http.Header) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var eb api.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&eb)
		return resp.StatusCode, eb.Error, resp.Header
	}
	if status, e, h := get("/v1/jobs", ""); status != http.StatusUnauthorized || e.Leader != "" || h.Get(api.LeaderHeader) != "" {
		t.Errorf("no token: %d %+v, want 401 naming no leader", status, e)
	}
	if status, e, h := get("/", ""); status != http.StatusServiceUnavailable || e.Code != api.CodeNotLeader || e.Leader != "" || h.Get(api.LeaderHeader) != "" {
		t.Errorf("the dashboard without a token: %d %+v, want not_leader naming no leader", status, e)
	}
	if status, e, _ := get("/v1/jobs", strings.TrimSpace(string(secret))); status != http.StatusServiceUnavailable || e.Leader != l.leader {
		t.Errorf("with a token: %d %+v, want not_leader naming the leader", status, e)
	}
}

// A request that passed the leadership check just before the replica lost
// the lead meets a loop that has stopped: it is answered not_leader with
// the new leader's URL, so that the client moves on at once, rather than
// "unavailable", which it would wait on.
func TestALoopStoppedByTheLossOfTheLeadAnswersNotLeader(t *testing.T) {
	l := &switchLeadership{leading: true}
	s := New(nil, Options{Leadership: l})
	for _, c := range []struct {
		leading bool
		status  int
		code    string
	}{
		{true, http.StatusServiceUnavailable, api.CodeUnavailable},
		{false, http.StatusServiceUnavailable, api.CodeNotLeader},
	} {
		l.set(c.leading, "http://next.example:7070")
		w := httptest.NewRecorder()
		s.fail(w, fmt.Errorf("%w: lost the lead", control.ErrStopped))
		var eb struct{ Error api.Error }
		if err := json.Unmarshal(w.Body.Bytes(), &eb); err != nil {
			t.Fatal(err)
		}
		if w.Code != c.status || eb.Error.Code != c.code {
			t.Errorf("leading %v: %d %s, want %d %s", c.leading, w.Code, w.Body, c.status, c.code)
		}
		if !c.leading && (eb.Error.Leader != "http://next.example:7070" || w.Header().Get(api.LeaderHeader) == "") {
			t.Errorf("not leading: %s, want the leader named in the body and the header", w.Body)
		}
	}
}
