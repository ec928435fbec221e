package rest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/metrics"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// syncBuffer collects log output written from the loop and request
// goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines parses the JSON log lines written so far.
func (b *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// observed is a server wired as cmd/allot wires it: a real controller and
// SQLite store, the metrics as the loop's observer and the API's request
// observer, and JSON debug logs into a buffer.
type observed struct {
	srv  *httptest.Server
	m    *metrics.Metrics
	logs *syncBuffer
}

// newObserved builds the server; adjust changes its API options.
func newObserved(t *testing.T, sched spec.Scheduling, adjust ...func(*Options)) *observed {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	o := &observed{m: metrics.New(), logs: &syncBuffer{}}
	log := slog.New(slog.NewJSONHandler(o.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	ctrl, err := control.New(ctx, control.Config{Scheduling: sched, CycleEvery: 20 * time.Millisecond, Logger: log, Observer: o.m}, st)
	if err != nil {
		t.Fatal(err)
	}
	o.m.Watch(ctrl)
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	opt := Options{Logger: log, Metrics: o.m.Handler(), Requests: o.m}
	for _, f := range adjust {
		f(&opt)
	}
	o.srv = httptest.NewServer(New(ctrl, opt).Handler())
	t.Cleanup(func() {
		o.srv.Close()
		cancel()
		<-done
		st.Close()
	})
	return o
}

// do sends body (a string as it is, anything else as JSON) and decodes the
// answer into out when it is not nil.
func (o *observed) do(t *testing.T, method, path string, body any, out any, header ...string) int {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, o.srv.URL+path, r)
	if r != nil { // as the client sends them
		req.Header.Set("Content-Type", "application/json")
		if b, ok := body.(string); ok && !strings.HasPrefix(b, "{") {
			req.Header.Set("Content-Type", "application/yaml")
		}
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
	if resp.StatusCode >= 300 && out != nil {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode
}

// scrape reads /metrics over HTTP in the text format.
func (o *observed) scrape(t *testing.T) scraped {
	t.Helper()
	req, _ := http.NewRequest("GET", o.srv.URL+"/metrics", nil)
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return scraped(mfs)
}

type scraped map[string]*dto.MetricFamily

// value is the sample of name whose labels include want (pairs); counters,
// gauges and, for histograms, the sample count. ok is false when no
// sample matches.
func (s scraped) value(name string, want ...string) (float64, bool) {
	mf, ok := s[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, lp := range m.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		for i := 0; i+1 < len(want); i += 2 {
			if labels[want[i]] != want[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// sum adds every sample of name (counts for histograms).
func (s scraped) sum(name string) float64 {
	total := 0.0
	for _, m := range s[name].GetMetric() {
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

// eventually retries check until it returns "" or the deadline passes.
func eventually(t *testing.T, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// metricsScheduling is one queue and one serverless endpoint of capacity 2.
func metricsScheduling() spec.Scheduling {
	return spec.Scheduling{
		Queues:    []spec.Queue{{Name: "batch"}},
		Endpoints: []spec.Endpoint{{Name: "llm", Type: "serverless", MaxConcurrency: 2}},
	}
}

// TestScrapedCountersMatchWhatHappened runs jobs through a real server and
// worker protocol: successes, a failure retried, a failure that fails its
// dependent, a cancelled job that could never run, and two endpoint jobs of
// which the second is throttled; then scrapes /metrics over HTTP and checks
// every counter against what the test did and against the event log.
func TestScrapedCountersMatchWhatHappened(t *testing.T) {
	o := newObserved(t, metricsScheduling())
	reportCalls := o.runScenario(t)

	s := o.scrape(t)
	counters := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"allot_jobs_submitted_total", nil, 6},
		{"allot_task_starts_total", nil, 6}, // ok, flaky ×2, bad.b, e1, e2
		{"allot_task_ends_total", []string{"outcome", "succeeded"}, 4},
		{"allot_task_ends_total", []string{"outcome", "retried"}, 1},
		{"allot_task_ends_total", []string{"outcome", "failed"}, 2},
		{"allot_task_ends_total", []string{"outcome", "cancelled"}, 1},
		{"allot_task_requeues_total", []string{"reason", "retry"}, 1},
		{"allot_task_failures_total", []string{"reason", "failed"}, 1},
		{"allot_task_failures_total", []string{"reason", "dependency_failure"}, 1},
		{"allot_jobs_ended_total", []string{"state", "succeeded"}, 4},
		{"allot_jobs_ended_total", []string{"state", "failed"}, 1},
		{"allot_jobs_ended_total", []string{"state", "cancelled"}, 1},
		{"allot_placement_candidate_pool_size", []string{"mode", "adaptive"}, 6},
		{"allot_endpoint_submitted_total", []string{"endpoint", "llm"}, 2},
		{"allot_endpoint_admitted_total", []string{"endpoint", "llm"}, 2},
		{"allot_endpoint_throttles_total", []string{"endpoint", "llm"}, 1},
		{"allot_endpoint_single_job_exceptions_total", []string{"endpoint", "llm"}, 0},
		{"allot_endpoint_errors_total", []string{"endpoint", "llm"}, 0},
		{"allot_store_commit_failures_total", nil, 0},
		{"allot_api_request_duration_seconds", []string{"route", "POST /v1/jobs", "code", "2xx"}, 6},
		{"allot_api_request_duration_seconds", []string{"route", "POST /v1/jobs/{id}/cancel", "code", "2xx"}, 1},
		{"allot_api_request_duration_seconds", []string{"route", "POST /v1/workers/{name}/reports", "code", "2xx"}, float64(reportCalls)},
		{"allot_workers", []string{"state", "ready"}, 1},
		{"allot_fleet_workers", nil, 1},
		{"allot_fleet_slots", nil, 4},
		{"allot_fleet_cost_per_hour", nil, 2.5},
		{"allot_endpoint_load", []string{"endpoint", "llm"}, 0},
		{"allot_endpoint_max_capacity", []string{"endpoint", "llm"}, 2},
	}
	for _, c := range counters {
		got, ok := s.value(c.name, c.labels...)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if got := s.sum("allot_placements_total"); got != 6 {
		t.Errorf("placements: %v, want 6 (one per start)", got)
	}
	if inv, _ := s.value("allot_endpoint_invocations_total", "endpoint", "llm"); inv < 3 {
		t.Errorf("endpoint invocations %v: want at least 3 (e1 admitted, e2 throttled, e2 admitted)", inv)
	}
	// The loop keeps cycling on its ticker while the scrape reads the two
	// series one after the other, so they may differ by a cycle in flight.
	cycles, _ := s.value("allot_scheduling_cycles_total")
	timed, _ := s.value("allot_scheduling_cycle_duration_seconds")
	if cycles == 0 || timed < cycles-1 || timed > cycles+1 {
		t.Errorf("cycles %v, timed cycles %v: want equal (±1 in flight) and not zero", cycles, timed)
	}
	if commits, _ := s.value("allot_store_commit_duration_seconds"); commits == 0 {
		t.Error("no commit was timed")
	}

	// The events counter agrees with the durable event log, kind by kind.
	var evs []api.Event
	o.do(t, "GET", "/v1/events", nil, &evs)
	byKind := map[string]float64{}
	for _, e := range evs {
		byKind[e.Kind]++
	}
	for kind, n := range byKind {
		if got, _ := s.value("allot_events_total", "kind", kind); got != n {
			t.Errorf("allot_events_total{kind=%q} = %v, the event log has %v", kind, got, n)
		}
	}
	if got := s.sum("allot_events_total"); got != float64(len(evs)) {
		t.Errorf("allot_events_total sums to %v, the event log has %d events", got, len(evs))
	}

	// A disabled worker is still counted by state, but costs nothing.
	o.do(t, "POST", "/v1/workers/w1/state", map[string]string{"state": "disabled"}, &api.Worker{})
	eventually(t, "the disabled worker", func() string {
		s := o.scrape(t)
		disabled, _ := s.value("allot_workers", "state", "disabled")
		cost, _ := s.value("allot_fleet_cost_per_hour")
		if disabled != 1 || cost != 0 {
			return fmt.Sprintf("workers{disabled} = %v, cost = %v; want 1 and 0", disabled, cost)
		}
		return ""
	})
}

// allEnded reports whether every job reached an end state.
func (o *observed) allEnded(t *testing.T, ids ...string) bool {
	t.Helper()
	for _, id := range ids {
		var j api.Job
		o.do(t, "GET", "/v1/jobs/"+id, nil, &j)
		switch j.State {
		case "succeeded", "failed", "cancelled":
		default:
			return false
		}
	}
	return true
}

// runScenario registers worker w1 (4 slots, cost 2.5/h) and runs six jobs
// through the worker protocol: big cannot run anywhere and is cancelled;
// ok succeeds; flaky fails its first attempt and succeeds on the retry;
// bad.b fails, which fails bad.c; e1 and e2 each take the whole capacity
// of endpoint llm, so e2 is throttled until e1 ends. It returns how many
// report requests the worker made.
func (o *observed) runScenario(t *testing.T) int {
	t.Helper()
	cost := 2.5
	reg := api.Register{Name: "w1", Resources: spec.Resources{CPU: 4000, Memory: 8192}, Slots: 4, CostPerHour: &cost}
	o.do(t, "POST", "/v1/workers", reg, &api.Worker{})

	// A job no worker can run waits as unschedulable, then is cancelled.
	o.do(t, "POST", "/v1/jobs", "id: big\nqueue: batch\ntasks: [{name: x, run: 'true', resources: {cpu: 64}}]\n", &api.Job{})
	eventually(t, "the pending gauge", func() string {
		s := o.scrape(t)
		if n, _ := s.value("allot_pending_tasks", "reason", "unschedulable"); n != 1 || s.sum("allot_pending_tasks") != 1 {
			return fmt.Sprintf("allot_pending_tasks{reason=unschedulable} = %v of %v, want 1 of 1", n, s.sum("allot_pending_tasks"))
		}
		return ""
	})
	o.do(t, "POST", "/v1/jobs/big/cancel", nil, &api.Job{})

	jobs := map[string]string{
		"ok":    "id: ok\nqueue: batch\ntasks: [{name: a, run: 'true'}]\n",
		"flaky": "id: flaky\nqueue: batch\ntasks: [{name: f, run: 'true', maxAttempts: 2}]\n",
		"bad":   "id: bad\nqueue: batch\ntasks:\n  - {name: b, run: 'false'}\n  - {name: c, run: 'true', needs: [b]}\n",
		"e1":    "id: e1\nqueue: batch\nendpoint: llm\nload: 2\ntasks: [{name: t, run: 'true'}]\n",
		"e2":    "id: e2\nqueue: batch\nendpoint: llm\nload: 2\ntasks: [{name: t, run: 'true'}]\n",
	}
	for _, id := range []string{"ok", "flaky", "bad", "e1", "e2"} {
		o.do(t, "POST", "/v1/jobs", jobs[id], &api.Job{}, RequestIDHeader, "submit-"+id)
	}

	// The worker: lease, then report each attempt; the first attempt of
	// flaky.f and every attempt of bad.b fail.
	reportCalls := 0
	deadline := time.Now().Add(15 * time.Second)
	for !o.allEnded(t, "ok", "flaky", "bad", "e1", "e2") {
		if time.Now().After(deadline) {
			t.Fatal("the jobs did not end")
		}
		var l api.Lease
		o.do(t, "POST", "/v1/workers/w1/lease", api.LeaseRequest{Wait: spec.Duration(100 * time.Millisecond)}, &l)
		if len(l.Assignments) == 0 {
			continue
		}
		var rs api.Reports
		for _, a := range l.Assignments {
			code := 0
			if (a.Job == "flaky" && a.Attempt.Attempt == 1) || a.Job == "bad" {
				code = 1
			}
			rs.Reports = append(rs.Reports, api.Report{Attempt: a.Attempt, ExitCode: code, Secret: a.Secret})
		}
		if st := o.do(t, "POST", "/v1/workers/w1/reports", rs, nil); st != http.StatusNoContent {
			t.Fatalf("reports: %d", st)
		}
		reportCalls++
	}
	return reportCalls
}
