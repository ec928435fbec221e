package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

// seen is what the fake server received.
type seen struct {
	method, path, query, contentType, auth string
	body                                   []byte
}

// answering starts a server that records each request and answers with
// status and body.
func answering(t *testing.T, status int, body string) (*Client, *seen) {
	t.Helper()
	s := &seen{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		*s = seen{method: r.Method, path: r.URL.EscapedPath(), query: r.URL.RawQuery,
			contentType: r.Header.Get("Content-Type"), auth: r.Header.Get("Authorization"), body: b}
		if body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL+"/prefix/", WithToken("sekrit"))
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

func sameJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("request body %q is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %q: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("request body = %s, want %s", got, want)
	}
}

func TestMethodsSendTheRouteAndDecodeTheAnswer(t *testing.T) {
	ctx := context.Background()
	cost := 2.5
	tests := []struct {
		name   string
		call   func(c *Client) (any, error)
		status int
		answer string
		// what the server must see
		method, path, query, contentType string
		body                             string // JSON compared structurally; "" = no body
		rawBody                          string // compared as is
		want                             any
	}{
		{
			name: "SubmitJob sends YAML as is",
			call: func(c *Client) (any, error) {
				return c.SubmitJob(ctx, []byte("id: j1\nqueue: q\n"), "")
			},
			status: 201, answer: `{"id":"j1","queue":"q","priority":0,"state":"waiting","submitted":"2026-01-01T00:00:00Z","counts":{"waiting":2}}`,
			method: "POST", path: "/prefix/v1/jobs", contentType: "application/yaml", rawBody: "id: j1\nqueue: q\n",
			want: api.Job{ID: "j1", Queue: "q", State: "waiting", Submitted: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Counts: map[string]int{"waiting": 2}},
		},
		{
			name: "SubmitJob guesses JSON",
			call: func(c *Client) (any, error) {
				return c.SubmitJob(ctx, []byte(` {"id":"j2"}`), "")
			},
			status: 201, answer: `{"id":"j2"}`,
			method: "POST", path: "/prefix/v1/jobs", contentType: "application/json", rawBody: ` {"id":"j2"}`,
			want: api.Job{ID: "j2"},
		},
		{
			name:   "Job escapes the id",
			call:   func(c *Client) (any, error) { return c.Job(ctx, "a b/c") },
			status: 200, answer: `{"id":"a b/c","tasks":[{"name":"t","state":"pending","attempt":0,"reason":{"code":"no_free_slot","message":"busy"}}]}`,
			method: "GET", path: "/prefix/v1/jobs/a%20b%2Fc",
			want: api.Job{ID: "a b/c", Tasks: []api.Task{{Name: "t", State: "pending", Reason: &model.Reason{Code: "no_free_slot", Message: "busy"}}}},
		},
		{
			name: "Jobs sends the filter",
			call: func(c *Client) (any, error) {
				return c.Jobs(ctx, JobFilter{State: "running", Queue: "q", Share: "s", After: 40, Limit: 5})
			},
			status: 200, answer: `{"jobs":[{"id":"x"}],"next":45}`,
			method: "GET", path: "/prefix/v1/jobs", query: "after=40&limit=5&queue=q&share=s&state=running",
			want: api.JobList{Jobs: []api.Job{{ID: "x"}}, Next: 45},
		},
		{
			name:   "Jobs without a filter sends no query",
			call:   func(c *Client) (any, error) { return c.Jobs(ctx, JobFilter{}) },
			status: 200, answer: `{"jobs":[]}`,
			method: "GET", path: "/prefix/v1/jobs",
			want: api.JobList{Jobs: []api.Job{}},
		},
		{
			name:   "Cancel",
			call:   func(c *Client) (any, error) { return c.Cancel(ctx, "j1") },
			status: 200, answer: `{"id":"j1","state":"cancelled"}`,
			method: "POST", path: "/prefix/v1/jobs/j1/cancel",
			want: api.Job{ID: "j1", State: "cancelled"},
		},
		{
			name:   "Logs",
			call:   func(c *Client) (any, error) { return c.Logs(ctx, "j1") },
			status: 200, answer: `{"job":"j1","tasks":[{"task":"t","attempt":2,"output":"hi\n"}]}`,
			method: "GET", path: "/prefix/v1/jobs/j1/logs",
			want: api.Logs{Job: "j1", Tasks: []api.TaskLog{{Task: "t", Attempt: 2, Output: "hi\n"}}},
		},
		{
			name:   "Events",
			call:   func(c *Client) (any, error) { return c.Events(ctx, 7, "j1", 100) },
			status: 200, answer: `[{"id":8,"at":"2026-01-01T00:00:01Z","kind":"task_started","job":"j1","task":"t"}]`,
			method: "GET", path: "/prefix/v1/events", query: "after=7&job=j1&limit=100",
			want: []api.Event{{ID: 8, At: time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC), Kind: "task_started", Job: "j1", Task: "t"}},
		},
		{
			name:   "Workers",
			call:   func(c *Client) (any, error) { return c.Workers(ctx) },
			status: 200, answer: `[{"name":"w1","state":"ready","resources":{"cpu":"4000m","memory":"1024Mi"},"slots":2,"running":1,"costPerHour":1,"lastSeen":"2026-01-01T00:00:00Z"}]`,
			method: "GET", path: "/prefix/v1/workers",
			want: []api.Worker{{Name: "w1", State: "ready", Resources: spec.Resources{CPU: 4000, Memory: 1024}, Slots: 2, Running: 1,
				CostPerHour: 1, LastSeen: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}},
		},
		{
			name: "Register sends the registration",
			call: func(c *Client) (any, error) {
				return c.Register(ctx, api.Register{Name: "w1", Resources: spec.Resources{CPU: 2000, GPUs: 1, GPUMemory: 16384},
					Labels: map[string]string{"zone": "a"}, Slots: 2, CostPerHour: &cost, Cached: []string{"llama"},
					Running: []api.Attempt{{Job: "j", Task: "t", Attempt: 1}}})
			},
			status: 200, answer: `{"name":"w1","state":"ready","slots":2}`,
			method: "POST", path: "/prefix/v1/workers", contentType: "application/json",
			body: `{"name":"w1","resources":{"cpu":"2000m","gpus":1,"gpuMemory":"16384Mi"},"labels":{"zone":"a"},"slots":2,
				"costPerHour":2.5,"cached":["llama"],"running":[{"job":"j","task":"t","attempt":1}]}`,
			want: api.Worker{Name: "w1", State: "ready", Slots: 2},
		},
		{
			name:   "SetWorkerState",
			call:   func(c *Client) (any, error) { return c.SetWorkerState(ctx, "w1", "draining") },
			status: 200, answer: `{"name":"w1","state":"draining","slots":1}`,
			method: "POST", path: "/prefix/v1/workers/w1/state", contentType: "application/json", body: `{"state":"draining"}`,
			want: api.Worker{Name: "w1", State: "draining", Slots: 1},
		},
		{
			name: "CreateToken sends the request and decodes the secret",
			call: func(c *Client) (any, error) {
				return c.CreateToken(ctx, api.CreateToken{Name: "alice", Role: "submitter", Queues: []string{"q"}, Shares: []string{"s"},
					ExpiresIn: new(spec.Duration(720 * time.Hour))})
			},
			status: 201, answer: `{"id":"tok-1","name":"alice","role":"submitter","queues":["q"],"shares":["s"],"created":"2026-01-01T00:00:00Z","secret":"allot_x"}`,
			method: "POST", path: "/prefix/v1/tokens", contentType: "application/json",
			body: `{"name":"alice","role":"submitter","queues":["q"],"shares":["s"],"expiresIn":"720h0m0s"}`,
			want: api.NewToken{Token: api.Token{ID: "tok-1", Name: "alice", Role: "submitter", Queues: []string{"q"}, Shares: []string{"s"},
				Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, Secret: "allot_x"},
		},
		{
			name:   "Tokens",
			call:   func(c *Client) (any, error) { return c.Tokens(ctx) },
			status: 200, answer: `[{"id":"tok-1","role":"worker","workers":["gpu-*"],"created":"2026-01-01T00:00:00Z"}]`,
			method: "GET", path: "/prefix/v1/tokens",
			want: []api.Token{{ID: "tok-1", Role: "worker", Workers: []string{"gpu-*"}, Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}},
		},
		{
			name:   "RevokeToken escapes the id",
			call:   func(c *Client) (any, error) { return c.RevokeToken(ctx, "tok/1") },
			status: 200, answer: `{"id":"tok/1","role":"admin","created":"2026-01-01T00:00:00Z","revoked":"2026-01-02T00:00:00Z"}`,
			method: "DELETE", path: "/prefix/v1/tokens/tok%2F1",
			want: api.Token{ID: "tok/1", Role: "admin", Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Revoked: ptr(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))},
		},
		{
			name: "Lease sends the wait and decodes the batch",
			call: func(c *Client) (any, error) {
				return c.Lease(ctx, "w1", api.LeaseRequest{Wait: spec.Duration(30 * time.Second)})
			},
			status: 200,
			answer: `{"assignments":[{"job":"j","task":"t","attempt":1,"run":"echo hi","env":{"A":"1"},"timeout":"1m0s"}],
				"stops":[{"job":"j","task":"u","attempt":3,"reason":{"code":"preempted","message":"m"},"grace":"5s"}]}`,
			method: "POST", path: "/prefix/v1/workers/w1/lease", contentType: "application/json", body: `{"wait":"30s"}`,
			want: api.Lease{
				Assignments: []api.Assignment{{Attempt: api.Attempt{Job: "j", Task: "t", Attempt: 1}, Run: "echo hi",
					Env: map[string]string{"A": "1"}, Timeout: spec.Duration(time.Minute)}},
				Stops: []api.StopOrder{{Attempt: api.Attempt{Job: "j", Task: "u", Attempt: 3},
					Reason: model.Reason{Code: "preempted", Message: "m"}, Grace: spec.Duration(5 * time.Second)}},
			},
		},
		{
			name: "Report sends the batch",
			call: func(c *Client) (any, error) {
				return nil, c.Report(ctx, "w1", api.Reports{Reports: []api.Report{{Attempt: api.Attempt{Job: "j", Task: "t", Attempt: 1},
					ExitCode: 3, Error: "boom", Output: "out", Result: json.RawMessage(`{"k":1}`)}}})
			},
			status: 204,
			method: "POST", path: "/prefix/v1/workers/w1/reports", contentType: "application/json",
			body: `{"reports":[{"job":"j","task":"t","attempt":1,"exitCode":3,"error":"boom","output":"out","result":{"k":1}}]}`,
		},
		{
			name:   "Heartbeat",
			call:   func(c *Client) (any, error) { return nil, c.Heartbeat(ctx, "w 1") },
			status: 204,
			method: "POST", path: "/prefix/v1/workers/w%201/heartbeat",
		},
		{
			name:   "Queues",
			call:   func(c *Client) (any, error) { return c.Queues(ctx) },
			status: 200, answer: `[{"name":"q","priority":1,"policy":{"kind":"fifo"},"running":2,"waiting":3}]`,
			method: "GET", path: "/prefix/v1/queues",
			want: []api.Queue{{Name: "q", Priority: 1, Policy: json.RawMessage(`{"kind":"fifo"}`), Running: 2, Waiting: 3}},
		},
		{
			name: "SetPolicy sends the policy as is",
			call: func(c *Client) (any, error) {
				return c.SetPolicy(ctx, "q", json.RawMessage(`{"kind":"fairshare","fairshare":{"decay":"1h"}}`))
			},
			status: 200, answer: `{"name":"q","policy":{"kind":"fairshare"}}`,
			method: "PUT", path: "/prefix/v1/queues/q/policy", contentType: "application/json",
			body: `{"kind":"fairshare","fairshare":{"decay":"1h"}}`,
			want: api.Queue{Name: "q", Policy: json.RawMessage(`{"kind":"fairshare"}`)},
		},
		{
			name:   "Health",
			call:   func(c *Client) (any, error) { return nil, c.Health(ctx) },
			status: 200, answer: "ok",
			method: "GET", path: "/prefix/healthz",
		},
		{
			name:   "Ready",
			call:   func(c *Client) (any, error) { return nil, c.Ready(ctx) },
			status: 200,
			method: "GET", path: "/prefix/readyz",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, s := answering(t, tt.status, tt.answer)
			got, err := tt.call(c)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if s.method != tt.method || s.path != tt.path || s.query != tt.query {
				t.Errorf("request = %s %s?%s, want %s %s?%s", s.method, s.path, s.query, tt.method, tt.path, tt.query)
			}
			if s.auth != "Bearer sekrit" {
				t.Errorf("Authorization = %q, want the bearer token", s.auth)
			}
			if s.contentType != tt.contentType {
				t.Errorf("Content-Type = %q, want %q", s.contentType, tt.contentType)
			}
			switch {
			case tt.rawBody != "":
				if string(s.body) != tt.rawBody {
					t.Errorf("body = %q, want %q", s.body, tt.rawBody)
				}
			case tt.body != "":
				sameJSON(t, s.body, tt.body)
			case len(s.body) > 0:
				t.Errorf("body = %q, want none", s.body)
			}
			if tt.want != nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("answer = %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestNoTokenSendsNoAuthorization(t *testing.T) {
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Values("Authorization")
		w.WriteHeader(204)
	}))
	defer srv.Close()
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Heartbeat(context.Background(), "w"); err != nil {
		t.Fatal(err)
	}
	if len(auth) != 0 {
		t.Errorf("Authorization = %q, want none", auth)
	}
}

func TestErrorsAreDecoded(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		answer    string
		want      api.Error
		notFound  bool
		invalid   bool
		retryable bool
	}{
		{
			name: "not found", status: 404,
			answer:   `{"error":{"code":"not_found","message":"worker \"w\" is not registered"}}`,
			want:     api.Error{Code: "not_found", Message: `worker "w" is not registered`},
			notFound: true,
		},
		{
			name: "invalid with field details", status: 400,
			answer: `{"error":{"code":"invalid","message":"bad spec","field":"tasks[0].run","line":4,
				"details":[{"field":"tasks[0].run","line":4,"message":"must not be empty"}]}}`,
			want: api.Error{Code: "invalid", Message: "bad spec", Field: "tasks[0].run", Line: 4,
				Details: []*model.FieldError{{Path: "tasks[0].run", Line: 4, Msg: "must not be empty"}}},
			invalid: true,
		},
		{
			name: "unavailable from the server", status: 503,
			answer:    `{"error":{"code":"unavailable","message":"no leader"}}`,
			want:      api.Error{Code: "unavailable", Message: "no leader"},
			retryable: true,
		},
		{
			name: "a proxy's page gets a code from the status", status: 502,
			answer:    "<html>Bad Gateway</html>",
			want:      api.Error{Code: "unavailable", Message: "<html>Bad Gateway</html>"},
			retryable: true,
		},
		{
			name: "a plain 404 of a wrong URL is not found", status: 404,
			answer:   "404 page not found\n",
			want:     api.Error{Code: "not_found", Message: "404 page not found"},
			notFound: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := answering(t, tt.status, tt.answer)
			_, err := c.Job(context.Background(), "j")
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not *Error", err, err)
			}
			if e.Status != tt.status || !reflect.DeepEqual(e.API(), tt.want) {
				t.Errorf("error = %d %#v, want %d %#v", e.Status, e.API(), tt.status, tt.want)
			}
			if IsNotFound(err) != tt.notFound || IsInvalid(err) != tt.invalid || Retryable(err) != tt.retryable {
				t.Errorf("IsNotFound=%v IsInvalid=%v Retryable=%v, want %v %v %v",
					IsNotFound(err), IsInvalid(err), Retryable(err), tt.notFound, tt.invalid, tt.retryable)
			}
			if !strings.Contains(err.Error(), tt.want.Message) {
				t.Errorf("message %q does not carry %q", err.Error(), tt.want.Message)
			}
		})
	}
}

func TestTransportErrorsAreRetryableButCancellationIsNot(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close() // nothing listens there any more
	c, err := New(u)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Heartbeat(context.Background(), "w")
	if err == nil || !Retryable(err) {
		t.Errorf("connection refused: err=%v, Retryable=%v, want a retryable error", err, Retryable(err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Heartbeat(ctx, "w"); err == nil || Retryable(err) {
		t.Errorf("cancelled: err=%v, Retryable=%v, want a non-retryable error", err, Retryable(err))
	}
}

func TestNewRejectsURLsWithoutSchemeOrHost(t *testing.T) {
	for _, u := range []string{"localhost:8080", "ftp://x", "http://", "::"} {
		if _, err := New(u); err == nil {
			t.Errorf("New(%q) accepted it", u)
		}
	}
	c, err := New(" https://example.com/allot/?x=1 ")
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != "https://example.com/allot" {
		t.Errorf("BaseURL = %q", c.BaseURL())
	}
}

func TestLeaseOutlivesItsWaitButNotAHungServer(t *testing.T) {
	hold := make(chan time.Duration, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // so the server notices when the client hangs up
		select {
		case <-time.After(<-hold):
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, `{"assignments":[],"stops":[]}`)
	}))
	defer srv.Close()
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c.leaseSlack = 300 * time.Millisecond
	wait := api.LeaseRequest{Wait: spec.Duration(100 * time.Millisecond)}

	// The server answers a little after the wait: within the margin.
	hold <- 250 * time.Millisecond
	if _, err := c.Lease(context.Background(), "w", wait); err != nil {
		t.Errorf("an answer within wait+margin failed: %v", err)
	}
	// The server holds it for long: the client gives up after wait+margin.
	hold <- 10 * time.Second
	start := time.Now()
	_, err = c.Lease(context.Background(), "w", wait)
	if !errors.Is(err, ErrLeaseTimeout) || !Retryable(err) {
		t.Errorf("hung server: err=%v, want a retryable ErrLeaseTimeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("gave up after %v, want about 400ms", d)
	}
}

func TestJobFilterEscapesValues(t *testing.T) {
	q := JobFilter{Queue: "a&b=c"}.query()
	if got, _ := url.ParseQuery(q.Encode()); got.Get("queue") != "a&b=c" {
		t.Errorf("queue round trip = %q", got.Get("queue"))
	}
}

// TestErrorTextNamesEachProblemOnce checks what the CLI prints for an error
// answer: the field once, every detail once, whatever the server repeated.
func TestErrorTextNamesEachProblemOnce(t *testing.T) {
	cases := []struct {
		name string
		e    api.Error
		want string
	}{
		{
			name: "a whole message is not prefixed again",
			e: api.Error{Code: "invalid", Field: "tasks[0].resources.cpu", Line: 5,
				Message: `line 5: tasks[0].resources.cpu: "-1" is not a CPU quantity`,
				Details: []*model.FieldError{{Path: "tasks[0].resources.cpu", Line: 5, Msg: `"-1" is not a CPU quantity`}}},
			want: `line 5: tasks[0].resources.cpu: "-1" is not a CPU quantity (invalid, HTTP 400)`,
		},
		{
			name: "a bare message gets its field",
			e:    api.Error{Code: "invalid", Field: "state", Message: "unknown state"},
			want: "state: unknown state (invalid, HTTP 400)",
		},
		{
			name: "details the message lacks follow it",
			e: api.Error{Code: "invalid", Field: "a", Message: "a: bad",
				Details: []*model.FieldError{{Path: "a", Msg: "bad"}, {Path: "b", Msg: "worse"}}},
			want: "a: bad (invalid, HTTP 400)\n  b: worse",
		},
		{
			name: "a detail equal to the field and message is not repeated",
			e: api.Error{Code: "invalid", Field: "tasks[0].run", Message: "must not be empty",
				Details: []*model.FieldError{{Path: "tasks[0].run", Msg: "must not be empty"}, {Path: "id", Line: 2, Msg: "bad name"}}},
			want: "tasks[0].run: must not be empty (invalid, HTTP 400)\n  line 2: id: bad name",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := &Error{Status: 400, apiError: tc.e}
			if got := err.Error(); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
