package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// fuzzRoutes are the routes whose bodies FuzzAPIDecode sends; the fuzzer
// picks one by index. Worker w1 is registered and runs attempt 1 of task t
// of job j, so reports and leases reach the controller's logic.
var fuzzRoutes = []struct {
	method, path, contentType string
}{
	{"POST", "/v1/jobs", "application/yaml"},
	{"POST", "/v1/jobs", "application/json"},
	{"POST", "/v1/workers", "application/json"},
	{"POST", "/v1/workers/w1/reports", "application/json"},
	{"POST", "/v1/workers/w1/lease", "application/json"},
	{"POST", "/v1/workers/w1/state", "application/json"},
	{"PUT", "/v1/queues/batch/policy", "application/json"},
	{"PUT", "/v1/endpoints/e", "application/json"},
	{"PUT", "/v1/throttling", "application/json"},
	{"POST", "/v1/tokens", "application/json"},
	{"POST", "/v1/jobs/j/priority", "application/json"},
	{"POST", "/v1/workers/w1/heartbeat", "application/json"},
}

// fuzzPlane is a fresh controller on an in-memory store for one input, so
// that inputs do not pile up state and a failure replays alone. restart
// stops the controller and builds a new one on the same store, as a
// server restart does; it fails the test when a stored row does not read
// back (it would be quarantined).
func fuzzPlane(t *testing.T) (h http.Handler, restart func()) {
	st, err := sqlite.Open(sqlite.Memory)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	cfg := control.Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}, {Name: "gpu"}}}, Logger: log}
	ctrl, err := control.New(context.Background(), cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(func() {
		stop()
		st.Close()
	})
	restart = func() {
		stop()
		if _, err := control.New(context.Background(), cfg, st); err != nil {
			t.Fatalf("the server does not start again: %v", err)
		}
		evs, err := st.Events(context.Background(), store.EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind == control.EventRowQuarantined {
				t.Fatalf("a stored row does not read back: %s", e.Message)
			}
		}
	}
	if _, err := ctrl.Register(ctx, api.Register{Name: "w1", Resources: spec.Resources{CPU: 4000, Memory: 4096}, Slots: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := ctrl.Submit(ctx, spec.Job{ID: "j", Queue: "batch", Tasks: []spec.Task{{Name: "t", Run: "true"}}}); err != nil {
		t.Fatal(err)
	}
	return New(ctrl, Options{MaxBodyBytes: 1 << 20, Logger: log}).Handler(), restart
}

// FuzzAPIDecode sends arbitrary bodies to the routes that decode JSON or
// YAML (registration, reports, leases, heartbeats, worker state, policies,
// endpoints, throttling, tokens, priority changes, job submission through
// a real controller). The API must never answer 500 or panic: bad input
// is a 4xx whose body is a JSON error with a code and a message, and every
// other answer is valid JSON (or empty, for 204). And whatever it took, a
// server started again on the same store reads it all back.
func FuzzAPIDecode(f *testing.F) {
	seeds := []struct {
		route int
		body  string
	}{
		{0, "id: hello\ntasks: [{name: greet, run: echo hello}]\n"},
		{0, "tasks: [{name: a, run: x}, {name: a, run: y}]\n"},
		{0, "tasks: [{name: a, count: 1000, run: x}, {name: b, count: 1001, needs: [a], run: y}]\n"},
		{0, "queue: nowhere\ntasks: [{name: t, run: x}]\n"},
		{0, "id: j\ntasks: [{name: t, run: x}]\n"},
		{1, `{"id": "js", "share": "a", "tasks": [{"name": "t", "command": ["true"], "env": {"A": "${tasks.t.result.x}"}}]}`},
		{1, `{"tasks": [{"name": "t", "run": "x", "resources": {"cpu": "-1", "memory": "1Zi"}}]}`},
		{2, `{"name": "w2", "resources": {"cpu": "8", "memory": "30Gi", "gpus": 1, "gpuMemory": "80Gi"}, "slots": 4, "labels": {"zone": "a"}, "costPerHour": 2.5, "cached": ["m"]}`},
		{2, `{"name": "w1", "resources": {"cpu": "4", "memory": "4Gi"}, "slots": 2, "running": [{"job": "j", "task": "t", "attempt": 1}, {"job": "x", "task": "y", "attempt": 7}]}`},
		{2, `{"name": "", "slots": -1}`},
		{3, `{"reports": [{"job": "j", "task": "t", "attempt": 1, "exitCode": 0, "output": "hi", "result": {"rows": 1}}]}`},
		{3, `{"reports": [{"job": "j", "task": "t", "attempt": 1, "exitCode": 3, "error": "boom"}, {"job": "j", "task": "t", "attempt": 1, "stopped": true}]}`},
		{3, `{"reports": 3}`},
		{4, `{"wait": "10ms"}`},
		{4, `{"wait": "-5h"}`},
		{4, `{"wait": "1ms", "running": [{"job": "j", "task": "t", "attempt": 1}]}`},
		{4, `{"running": null}`},
		{5, `{"state": "draining"}`},
		{5, `{"state": "lost"}`},
		{6, `{"kind": "fairshare", "fairshare": {"shares": [{"share": "a", "weightFactor": 2}]}}`},
		{6, `{"kind": "nope"}`},
		{0, "tasks: [{name: t, run: x, count: 2.7, resources: {memory: 1e30, cpu: .nan, gpus: 1e30}}]\npriority: -1e308\n"},
		{1, `{"id":"..","tasks":[{"name":"x","count":"many","run":"y","resources":{"memory":"1e30"}}]}`},
		{2, `{"name": "w3", "resources": {"cpu": 1e30, "memory": "1e30Ti", "gpus": 1e30}, "slots": 2.7, "costPerHour": 1e308}`},
		{7, `{"type": "serverless", "maxConcurrency": 9223372036854775807, "variants": [{"name": "a", "weight": 1e308}]}`},
		{7, `{"type": "instance-backed", "instances": 3, "instanceConcurrency": 2}`},
		{8, `{"capacityTargetPercentage": 1e400, "defaultInstanceConcurrency": 9223372036854775807, "starvationWait": "1e300"}`},
		{8, `{"capacityTargetPercentage": 0.5, "starvationWait": "2m"}`},
		{9, `{"role": "admin", "expiresIn": "2562047h"}`},
		{9, `{"role": "submitter", "queues": ["*"], "shares": ["*"], "expiresIn": "24h"}`},
		{10, `{"priority": -1e308}`},
		{10, `{"priority": 7, "urgent": true}`},
		{11, `{"cache": [{"kind": "model", "name": "m"}, {"kind": 3}]}`},
	}
	for _, s := range seeds {
		f.Add(uint8(s.route), []byte(s.body))
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "examples", "jobs", "*.yaml"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(uint8(0), b)
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		h, restart := fuzzPlane(t)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond) // bounds a long poll
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, rt.method, rt.path, bytes.NewReader(body))
		req.Header.Set("Content-Type", rt.contentType)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		status, out := rec.Code, rec.Body.Bytes()
		switch {
		case status >= 500:
			t.Fatalf("%s %s answered %d: %s", rt.method, rt.path, status, out)
		case status == http.StatusNoContent:
			if len(out) != 0 {
				t.Fatalf("204 with a body: %q", out)
			}
		case status >= 400:
			var eb api.ErrorBody
			if err := json.Unmarshal(out, &eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
				t.Fatalf("%d answer is not a JSON error with a code and a message (%v): %s", status, err, out)
			}
		case status >= 200 && status < 300:
			if !json.Valid(out) {
				t.Fatalf("%d answer is not JSON: %s", status, out)
			}
		default:
			t.Fatalf("unexpected status %d: %s", status, out)
		}
		restart() // whatever was accepted reads back
	})
}
