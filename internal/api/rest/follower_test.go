package rest

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// A follower with the store's reads serves the job reads and the event
// log from the store the leader writes, its event streams wake when told
// of a commit, and it still answers not_leader to everything else.
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
	reads := control.NewStoreReader(st)
	follower := httptest.NewServer(New(nil, Options{Leadership: l, FollowerReads: reads}).Handler())
	defer follower.Close()
	defer reads.Close()

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
	status, _, raw = call(t, follower, "GET", "/v1/events", "", "")
	var evs []api.Event
	if status != 200 || json.Unmarshal(raw, &evs) != nil || len(evs) == 0 || evs[0].Job != "j1" {
		t.Errorf("GET /v1/events on the follower: %d %s", status, raw)
	}
	// A stream on the follower wakes when the store says events were
	// committed (Notify), and ends when the reader closes.
	resp, err := http.Get(follower.URL + "/v1/events?follow=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if status, _, raw := call(t, leader, "POST", "/v1/jobs", "application/json", `{"id":"j3","tasks":[{"name":"t","run":"true"}]}`); status != http.StatusCreated {
		t.Fatalf("submit to the leader: %d %s", status, raw)
	}
	reads.Notify()
	deadline := time.After(5 * time.Second)
	for seen := false; !seen; {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended")
			}
			seen = strings.Contains(line, `"job":"j3"`)
		case <-deadline:
			t.Fatal("the follower's stream did not deliver the event committed after it started")
		}
	}
	reads.Close()
	for range lines {
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
