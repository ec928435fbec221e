package rest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

func TestRequestIDIsKeptWhenUsableAndMadeOtherwise(t *testing.T) {
	o := newObserved(t, metricsScheduling())
	generated := regexp.MustCompile(`^[0-9a-f]{24}$`)
	cases := []struct {
		name, given string
		keep        bool
	}{
		{"none", "", false},
		{"a trace id", "4bf92f3577b34da6a3ce929d0e0e4736", true},
		{"with punctuation", "req-1.2_3:4/5+6=", true},
		{"with a space", "a b", false},
		{"with a quote", `a"b`, false},
		{"too long", strings.Repeat("x", 129), false},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", o.srv.URL+"/healthz", nil)
			if c.given != "" {
				req.Header.Set(RequestIDHeader, c.given)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := resp.Header.Get(RequestIDHeader)
			switch {
			case c.keep && got != c.given:
				t.Errorf("id %q, want the caller's %q", got, c.given)
			case !c.keep && !generated.MatchString(got):
				t.Errorf("id %q, want a generated one (24 hex digits)", got)
			case !c.keep && seen[got]:
				t.Errorf("generated id %q given twice", got)
			}
			seen[got] = true
		})
	}
}

// routeLog records what the middleware tells a RequestObserver.
type routeLog struct {
	mu     sync.Mutex
	open   map[string]int
	routes []string
}

func (r *routeLog) RequestStarted(route string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open[route]++
}

func (r *routeLog) RequestDone(route string, status int, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open[route]--
	r.routes = append(r.routes, fmt.Sprintf("%s -> %d", route, status))
}

func TestRequestsAreLabelledByRoutePatternNotPath(t *testing.T) {
	rl := &routeLog{open: map[string]int{}}
	o := newObserved(t, metricsScheduling(), func(opt *Options) { opt.Requests, opt.Metrics = rl, nil })
	cases := []struct {
		method, path, body string
		want               string
	}{
		{"GET", "/v1/jobs/no-such-job", "", "GET /v1/jobs/{id} -> 404"},
		{"GET", "/v1/jobs/another-one", "", "GET /v1/jobs/{id} -> 404"},
		{"GET", "/v1/jobs", "", "GET /v1/jobs -> 200"},
		{"POST", "/v1/jobs", "id: x\nqueue: nope\ntasks: [{name: a, run: 'true'}]\n", "POST /v1/jobs -> 400"},
		{"GET", "/v1/nothing/here", "", "/v1/ -> 404"},
		{"GET", "/healthz", "", "GET /healthz -> 200"},
		{"GET", "/metrics", "", "GET /metrics -> 404"}, // this server exports none
	}
	for _, c := range cases {
		o.do(t, c.method, c.path, c.body, nil)
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if len(rl.routes) != len(cases) {
		t.Fatalf("observed %q, want %d requests", rl.routes, len(cases))
	}
	for i, c := range cases {
		if rl.routes[i] != c.want {
			t.Errorf("%s %s: observed %q, want %q", c.method, c.path, rl.routes[i], c.want)
		}
	}
	for route, n := range rl.open {
		if n != 0 {
			t.Errorf("route %q: %d requests still counted in flight", route, n)
		}
	}
}

// A handler that panics is counted and logged as a 500, and the panic
// still reaches net/http, which drops the connection.
func TestAPanickingHandlerCountsAsA500(t *testing.T) {
	rl := &routeLog{open: map[string]int{}}
	s := &Server{mux: http.NewServeMux(), opt: Options{Logger: slog.New(slog.DiscardHandler), Requests: rl}}
	s.mux.HandleFunc("GET /boom", func(http.ResponseWriter, *http.Request) { panic("boom") })
	srv := httptest.NewUnstartedServer(s.observe(s.mux))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // net/http reports the panic there
	srv.Start()
	defer srv.Close()
	if resp, err := http.Get(srv.URL + "/boom"); err == nil {
		resp.Body.Close()
		t.Fatalf("the panic did not reach net/http: answered %s", resp.Status)
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if want := []string{"GET /boom -> 500"}; !slices.Equal(rl.routes, want) || rl.open["GET /boom"] != 0 {
		t.Errorf("observed %q (in flight %d), want %q", rl.routes, rl.open["GET /boom"], want)
	}
}

func TestRequestLogLineCarriesIDRouteStatusPrincipalAndJob(t *testing.T) {
	o := newObserved(t, metricsScheduling())
	o.do(t, "GET", "/v1/jobs/ghost", nil, nil, RequestIDHeader, "rid-ghost")
	o.do(t, "POST", "/v1/workers", api.Register{Name: "w9", Slots: 1}, &api.Worker{}, RequestIDHeader, "rid-register")
	o.do(t, "POST", "/v1/workers/w9/heartbeat", nil, nil, RequestIDHeader, "rid-heartbeat")
	o.do(t, "GET", "/v1/jobs", nil, nil, RequestIDHeader, "rid-refresh", "HX-Request", "true")
	o.do(t, "GET", "/v1/jobs", nil, nil, RequestIDHeader, "rid-list")

	line := o.findLog(t, map[string]any{"msg": "request", "request_id": "rid-ghost"})
	want := map[string]any{"level": "INFO", "method": "GET", "route": "GET /v1/jobs/{id}", "status": float64(404),
		"principal": "anonymous", "job": "ghost"}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("request log %s = %v, want %v (line %v)", k, line[k], v, line)
		}
	}
	if _, ok := line["took"]; !ok {
		t.Errorf("request log has no duration: %v", line)
	}
	// The handler's own line carries the request's id too.
	o.findLog(t, map[string]any{"msg": "worker registered", "request_id": "rid-register", "worker": "w9"})
	// Heartbeats are frequent: debug level, with the worker named.
	o.findLog(t, map[string]any{"msg": "request", "request_id": "rid-heartbeat", "level": "DEBUG", "worker": "w9", "status": float64(204)})
	// So are the dashboard's refreshes; the same route asked for otherwise
	// is logged at info.
	o.findLog(t, map[string]any{"msg": "request", "request_id": "rid-refresh", "level": "DEBUG"})
	o.findLog(t, map[string]any{"msg": "request", "request_id": "rid-list", "level": "INFO"})
}

func TestLogLinesAboutAJobCarryItsID(t *testing.T) {
	o := newObserved(t, metricsScheduling())
	o.runScenario(t)
	for _, want := range []map[string]any{
		{"msg": "job submitted", "job": "ok", "request_id": "submit-ok", "tasks": float64(1), "state": "pending"},
		{"msg": "task requeued", "job": "flaky", "task": "f", "reason": "retry", "worker": "w1"},
		{"msg": "task failed", "job": "bad", "task": "b", "reason": "failed"},
		{"msg": "task failed", "job": "bad", "task": "c", "reason": "dependency_failure"},
		{"msg": "job throttled", "job": "e2", "reason": "throttled"},
		{"msg": "job ended", "job": "flaky", "state": "succeeded"},
		{"msg": "job ended", "job": "big", "state": "cancelled"},
		{"msg": "request", "route": "POST /v1/jobs/{id}/cancel", "job": "big"},
	} {
		o.findLog(t, want)
	}
}

// findLog returns the first log line that has every key of want with its
// value, and fails the test when none has.
func (o *observed) findLog(t *testing.T, want map[string]any) map[string]any {
	t.Helper()
	// Request lines are written once the answer is sent; give the last
	// one a moment.
	deadline := time.Now().Add(2 * time.Second)
	for {
	line:
		for _, l := range o.logs.lines(t) {
			for k, v := range want {
				if l[k] != v {
					continue line
				}
			}
			return l
		}
		if time.Now().After(deadline) {
			for _, l := range o.logs.lines(t) {
				if l["job"] == want["job"] {
					t.Log(l)
				}
			}
			t.Fatalf("no log line with %v", want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestEventStreamClientsShowAsRequestsInFlight(t *testing.T) {
	o := newObserved(t, metricsScheduling())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", o.srv.URL+"/v1/events?follow=1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	o.do(t, "POST", "/v1/jobs", "id: s\nqueue: batch\ntasks: [{name: a, run: 'true'}]\n", &api.Job{})
	// The stream passes through the middleware's writer: events arrive.
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "event: job_submitted") {
	}
	if !strings.HasPrefix(sc.Text(), "event: job_submitted") {
		t.Fatalf("no job_submitted event on the stream: %v", sc.Err())
	}
	if n, _ := o.scrape(t).value("allot_api_requests_in_flight", "route", "GET /v1/events"); n != 1 {
		t.Errorf("event streams in flight: %v, want 1", n)
	}
	cancel()
	eventually(t, "the closed stream", func() string {
		if n, _ := o.scrape(t).value("allot_api_requests_in_flight", "route", "GET /v1/events"); n != 0 {
			return fmt.Sprintf("event streams in flight: %v, want 0", n)
		}
		return ""
	})
}

func TestAnyTokenMayScrapeButNotAnonymously(t *testing.T) {
	s := newAuthServer(t, "batch")
	wk := s.token(t, api.CreateToken{Role: "worker", Workers: []string{"w1"}})
	sub := s.token(t, api.CreateToken{Role: "submitter", Queues: []string{"*"}, Shares: []string{"*"}})
	if status, _, _, _ := s.as(t, "", "GET", "/metrics", ""); status != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", status)
	}
	// This server exports no metrics: an allowed caller gets 404, a
	// refused one would get 403.
	for who, token := range map[string]string{"admin": s.admin, "submitter": sub.Secret, "worker": wk.Secret} {
		if status, eb, _, _ := s.as(t, token, "GET", "/metrics", ""); status != http.StatusNotFound || eb.Error.Code != api.CodeNotFound {
			t.Errorf("%s token: %d %+v, want 404 (allowed; no metrics on this server)", who, status, eb)
		}
	}
}
