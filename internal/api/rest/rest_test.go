package rest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// newServer runs the API on a real controller and SQLite store.
func newServer(t *testing.T, maxBody int64) *httptest.Server {
	t.Helper()
	return newServerWith(t, maxBody, spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}, {Name: "gpu"}}})
}

// newServerWith runs the API on a real controller with the given queues.
func newServerWith(t *testing.T, maxBody int64, cfg spec.Scheduling) *httptest.Server {
	t.Helper()
	return newServerOptions(t, cfg, Options{MaxBodyBytes: maxBody})
}

// newServerOptions runs the API with the given options on a real
// controller with the given queues, over real connections.
func newServerOptions(t *testing.T, cfg spec.Scheduling, opt Options) *httptest.Server {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctrl, err := control.New(ctx, control.Config{Scheduling: cfg}, st)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	srv := httptest.NewServer(New(ctrl, opt).Handler())
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-done
		st.Close()
	})
	return srv
}

func call(t *testing.T, srv *httptest.Server, method, path, contentType, body string) (int, api.ErrorBody, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var eb api.ErrorBody
	_ = json.Unmarshal(raw, &eb)
	return resp.StatusCode, eb, raw
}

func TestBadInputIsRejectedNamingTheFieldAndNothingIsStored(t *testing.T) {
	srv := newServer(t, 4096)
	cases := []struct {
		name, method, path, body string
		status                   int
		code, field              string
		line                     int
	}{
		{"malformed yaml", "POST", "/v1/jobs", "id: a\ntasks: [\n", 400, "invalid", "", 2},
		{"wrong type", "POST", "/v1/jobs", "id: a\npriority: high\ntasks: [{name: x, run: 'true'}]\n", 400, "invalid", "priority", 2},
		{"unknown field", "POST", "/v1/jobs", "id: a\ntasks:\n  - name: x\n    run: 'true'\n    colour: red\n", 400, "invalid", "tasks[0].colour", 5},
		{"unknown queue", "POST", "/v1/jobs", "id: a\nqueue: cpu\ntasks: [{name: x, run: 'true'}]\n", 400, "invalid", "queue", 2},
		{"cyclic needs", "POST", "/v1/jobs", "id: a\nqueue: batch\ntasks:\n  - {name: x, needs: [y], run: 'true'}\n  - {name: y, needs: [x], run: 'true'}\n", 400, "invalid", "tasks", 3},
		{"dangling need", "POST", "/v1/jobs", "id: a\nqueue: batch\ntasks:\n  - {name: x, needs: [nope], run: 'true'}\n", 400, "invalid", "tasks[0].needs[0]", 4},
		{"nothing to run", "POST", "/v1/jobs", "id: a\nqueue: batch\ntasks: [{name: x}]\n", 400, "invalid", "tasks[0]", 3},
		{"reference to a task not needed", "POST", "/v1/jobs", "id: a\nqueue: batch\ntasks:\n  - {name: x, run: 'true'}\n  - {name: y, run: 'echo ${tasks.x.result.v}'}\n", 400, "invalid", "tasks[1].run", 5},
		{"scenario-only field", "POST", "/v1/jobs", "id: a\nqueue: batch\ntasks: [{name: x, run: 'true', fails: 2}]\n", 400, "invalid", "tasks[0].fails", 3},
		{"bad name", "POST", "/v1/jobs", "id: 'a b'\nqueue: batch\ntasks: [{name: x, run: 'true'}]\n", 400, "invalid", "id", 1},
		{"oversized body", "POST", "/v1/jobs", "id: a\nqueue: batch\ntasks: [{name: x, run: '" + strings.Repeat("x", 5000) + "'}]\n", 413, "too_large", "body", 0},
		{"empty body", "POST", "/v1/jobs", "", 400, "invalid", "", 0},
		{"worker: unknown field", "POST", "/v1/workers", `{"name":"w","cpus":4}`, 400, "invalid", "cpus", 0},
		{"worker: wrong type", "POST", "/v1/workers", `{"name":"w","slots":"two"}`, 400, "invalid", "slots", 0},
		{"worker: negative slots", "POST", "/v1/workers", `{"name":"w","slots":-1}`, 400, "invalid", "slots", 0},
		{"worker: zero slots", "POST", "/v1/workers", `{"name":"w","slots":0}`, 400, "invalid", "slots", 0},
		{"worker: bad memory", "POST", "/v1/workers", `{"name":"w","resources":{"memory":"lots"}}`, 400, "invalid", "resources.memory", 0},
		{"worker: malformed json", "POST", "/v1/workers", `{"name":`, 400, "invalid", "body", 0},
		{"lease: unknown worker", "POST", "/v1/workers/ghost/lease", `{}`, 404, "not_found", "", 0},
		{"heartbeat: unknown worker", "POST", "/v1/workers/ghost/heartbeat", ``, 404, "not_found", "", 0},
		{"reports: malformed", "POST", "/v1/workers/ghost/reports", `{"reports": 3}`, 400, "invalid", "reports", 0},
		{"state: unknown worker", "POST", "/v1/workers/ghost/state", `{"state":"draining"}`, 404, "not_found", "", 0},
		{"policy: unknown kind", "PUT", "/v1/queues/batch/policy", `{"kind":"lottery"}`, 400, "invalid", "policy", 0},
		{"policy: unknown queue", "PUT", "/v1/queues/nope/policy", `{"kind":"fifo"}`, 404, "not_found", "", 0},
		{"job: unknown", "GET", "/v1/jobs/nope", ``, 404, "not_found", "", 0},
		{"cancel: unknown", "POST", "/v1/jobs/nope/cancel", ``, 404, "not_found", "", 0},
		{"list: bad limit", "GET", "/v1/jobs?limit=-3", ``, 400, "invalid", "limit", 0},
		{"events: bad after", "GET", "/v1/events?after=x", ``, 400, "invalid", "after", 0},
		{"unknown route", "GET", "/v1/nothing", ``, 404, "not_found", "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ct := "application/yaml"
			if strings.HasPrefix(tc.body, "{") {
				ct = "application/json"
			}
			status, eb, raw := call(t, srv, tc.method, tc.path, ct, tc.body)
			if status != tc.status || eb.Error.Code != tc.code {
				t.Fatalf("%s %s: %d %s, want %d %s", tc.method, tc.path, status, raw, tc.status, tc.code)
			}
			if eb.Error.Message == "" {
				t.Errorf("error without a message: %s", raw)
			}
			if tc.field != "" && eb.Error.Field != tc.field {
				t.Errorf("field %q, want %q (%s)", eb.Error.Field, tc.field, raw)
			}
			if tc.line != 0 && eb.Error.Line != tc.line {
				t.Errorf("line %d, want %d (%s)", eb.Error.Line, tc.line, raw)
			}
		})
	}
	var list api.JobList
	_, _, raw := call(t, srv, "GET", "/v1/jobs", "", "")
	if err := json.Unmarshal(raw, &list); err != nil || len(list.Jobs) != 0 {
		t.Fatalf("jobs stored after rejected submissions: %s", raw)
	}
	_, _, raw = call(t, srv, "GET", "/v1/workers", "", "")
	if strings.TrimSpace(string(raw)) != "[]" {
		t.Fatalf("workers stored after rejected registrations: %s", raw)
	}
}

func TestDuplicateJobIsAConflictAndKeepsTheFirst(t *testing.T) {
	srv := newServer(t, 0)
	first := "id: a\nqueue: batch\nshare: one\ntasks: [{name: x, run: 'true'}]\n"
	if status, _, raw := call(t, srv, "POST", "/v1/jobs", "application/yaml", first); status != 201 {
		t.Fatalf("first submit: %d %s", status, raw)
	}
	status, eb, _ := call(t, srv, "POST", "/v1/jobs", "application/yaml", strings.Replace(first, "share: one", "share: two", 1))
	if status != 409 || eb.Error.Code != "conflict" {
		t.Fatalf("duplicate: %d %+v", status, eb)
	}
	var j api.Job
	_, _, raw := call(t, srv, "GET", "/v1/jobs/a", "", "")
	if err := json.Unmarshal(raw, &j); err != nil || j.Share != "one" {
		t.Fatalf("stored job changed by the duplicate: %s", raw)
	}
}

func TestOpenAPIAndHealth(t *testing.T) {
	srv := newServer(t, 0)
	for _, p := range []string{"/healthz", "/readyz", "/openapi.json"} {
		status, _, raw := call(t, srv, "GET", p, "", "")
		if status != 200 || !json.Valid(raw) {
			t.Errorf("GET %s: %d %s", p, status, raw)
		}
	}
	_, _, raw := call(t, srv, "GET", "/openapi.json", "", "")
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc.OpenAPI == "" || doc.Paths["/v1/jobs"] == nil {
		t.Errorf("openapi.json does not describe /v1/jobs: %v", err)
	}
}
