package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/api/rest"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/classload"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// fixture is a real control plane (controller, SQLite store, REST API with
// the dashboard mounted) on a clock the test moves, so that the history the
// overview charts has samples minutes apart without waiting minutes.
type fixture struct {
	t     *testing.T
	srv   *httptest.Server
	ctrl  *control.Controller
	now   atomic.Int64 // unix nanoseconds of the fake clock
	admin string       // the admin token's secret, with authentication on
}

var start = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// schedulingConfig has a classload queue, whose policy sets each group's
// target, a fifo queue, and an endpoint with two variants throttled at 75%
// of their capacity.
func schedulingConfig() spec.Scheduling {
	two := 2
	current, candidate, target := 70.0, 30.0, 0.75
	return spec.Scheduling{
		Throttling: spec.Throttling{CapacityTargetPercentage: &target},
		Queues: []spec.Queue{
			{Name: "build", Priority: 10, Policy: policy.Config{Kind: "classload", Settings: &classload.Config{
				Classes:      []classload.LoadClass{{Name: "team-a", Percent: 60}, {Name: "team-b", Percent: 40}},
				RequestorMap: []classload.RequestorRule{{Class: "team-a", Pattern: "^team-a$"}, {Class: "team-b", Pattern: "^team-b$"}},
			}}},
			{Name: "batch"},
			// grid and fair stay empty in the scenario; the tests of big
			// systems and odd names fill them (every job is a group of
			// grid, every share one of fair).
			{Name: "grid", Policy: policy.Config{Kind: "priority"}},
			{Name: "fair", Policy: policy.Config{Kind: "fairshare", Settings: &fairshare.Config{}}},
		},
		Endpoints: []spec.Endpoint{{Name: "detector", Type: "instance-backed", InstanceConcurrency: two, Variants: []spec.Variant{
			{Name: "current", Weight: &current, Instances: 2},
			{Name: "candidate", Weight: &candidate, Instances: 1},
		}}},
	}
}

func newFixture(t *testing.T, withAuth bool) *fixture {
	t.Helper()
	f := &fixture{t: t}
	f.now.Store(start.UnixNano())
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	clock := func() time.Time { return time.Unix(0, f.now.Load()).UTC() }
	ctrl, err := control.New(ctx, control.Config{Scheduling: schedulingConfig(), Clock: clock, CycleEvery: 20 * time.Millisecond,
		HeartbeatTimeout: 24 * time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, st)
	if err != nil {
		t.Fatal(err)
	}
	f.ctrl = ctrl
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	opt := rest.Options{Logger: quiet}
	if withAuth {
		file := filepath.Join(dir, auth.AdminTokenFile)
		if _, _, err := auth.Bootstrap(ctx, st, file, clock()); err != nil {
			t.Fatal(err)
		}
		secret, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f.admin = strings.TrimSpace(string(secret))
		opt.Auth = auth.NewAuthenticator(st, clock, 0)
	}
	f.srv = httptest.NewServer(rest.New(ctrl, opt).Handler())
	t.Cleanup(func() {
		f.srv.Close()
		cancel()
		<-done
		st.Close()
	})
	return f
}

// call makes an API or page request as the admin (when authentication is
// on) and returns the status and body.
func (f *fixture) call(method, path, body string) (int, string) {
	f.t.Helper()
	return f.callAs(f.admin, method, path, body)
}

func (f *fixture) callAs(token, method, path, body string) (int, string) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	switch {
	case strings.HasPrefix(body, "{"):
		req.Header.Set("Content-Type", "application/json")
	case body != "":
		req.Header.Set("Content-Type", "application/yaml")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// noRedirect shows redirects to the test instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (f *fixture) must(want int, method, path, body string, out any) {
	f.t.Helper()
	status, b := f.call(method, path, body)
	if status != want {
		f.t.Fatalf("%s %s: %d %s, want %d", method, path, status, b, want)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(b), out); err != nil {
			f.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// advance moves the clock on and waits for a cycle at the new time, so the
// snapshot (and its history) has a sample there.
func (f *fixture) advance(d time.Duration) {
	f.t.Helper()
	at := time.Unix(0, f.now.Add(int64(d))).UTC()
	deadline := time.Now().Add(10 * time.Second)
	for !f.ctrl.Snapshot().At.Equal(at) {
		if time.Now().After(deadline) {
			f.t.Fatalf("no cycle at %s (last %s)", at, f.ctrl.Snapshot().At)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fixture) register(name string, slots int, resources string, labels map[string]string) {
	f.t.Helper()
	lb, _ := json.Marshal(labels)
	f.must(200, "POST", "/v1/workers", fmt.Sprintf(`{"name":%q,"slots":%d,"resources":%s,"labels":%s}`, name, slots, resources, lb), nil)
}

// lease takes what the cycle assigned to a worker.
func (f *fixture) lease(worker string) []api.Assignment {
	f.t.Helper()
	var l api.Lease
	f.must(200, "POST", "/v1/workers/"+worker+"/lease", `{}`, &l)
	return l.Assignments
}

// finish reports attempts as succeeded.
func (f *fixture) finish(worker string, as ...api.Assignment) {
	f.t.Helper()
	var r api.Reports
	for _, a := range as {
		r.Reports = append(r.Reports, api.Report{Attempt: a.Attempt, Secret: a.Secret})
	}
	b, _ := json.Marshal(r)
	f.must(204, "POST", "/v1/workers/"+worker+"/reports", string(b), nil)
}

// workerNames of the scenario: three that run tasks, and one each draining
// and disabled, so every state shows.
var workerNames = []string{"node-a1", "node-a2", "node-b1", "node-drain", "node-off"}

// scenario fills the control plane over about three minutes of its clock:
// team-a's DAG job and bulk job take every slot, team-b's bulk job arrives
// and gets its classload target as team-a's tasks finish, the pipeline's
// first task ends so its train tasks start, bulk-a ends, and batch jobs
// (some on an endpoint beyond its capacity) queue behind.
func (f *fixture) scenario() {
	f.t.Helper()
	f.register("node-a1", 4, `{"cpu":"8","memory":"32Gi","gpus":1,"gpuMemory":"24Gi"}`, map[string]string{"zone": "eu-1"})
	f.register("node-a2", 4, `{"cpu":"8","memory":"32Gi"}`, map[string]string{"zone": "eu-2"})
	f.register("node-b1", 2, `{"cpu":"4","memory":"16Gi"}`, map[string]string{"zone": "eu-1"})
	f.register("node-drain", 2, `{"cpu":"4","memory":"8Gi"}`, nil)
	f.register("node-off", 2, `{"cpu":"4","memory":"8Gi"}`, nil)
	f.must(200, "POST", "/v1/workers/node-drain/state", `{"state":"draining"}`, nil)
	f.must(200, "POST", "/v1/workers/node-off/state", `{"state":"disabled"}`, nil)
	f.advance(10 * time.Second)

	held := map[string][]api.Assignment{}
	step := func(n int) {
		for range n {
			f.advance(10 * time.Second)
			for _, w := range workerNames[:3] {
				held[w] = append(held[w], f.lease(w)...)
			}
		}
	}
	// finish reports up to n held attempts of job (and task, when given)
	// as succeeded.
	finish := func(job, task string, n int) {
		for _, w := range workerNames[:3] {
			var keep, done []api.Assignment
			for _, a := range held[w] {
				if a.Job == job && (task == "" || a.Task == task) && len(done) < n {
					done = append(done, a)
				} else {
					keep = append(keep, a)
				}
			}
			if len(done) > 0 {
				f.finish(w, done...)
			}
			n -= len(done)
			held[w] = keep
		}
	}
	f.must(201, "POST", "/v1/jobs", pipelineJob, nil)
	f.must(201, "POST", "/v1/jobs", "id: bulk-a\nqueue: build\nrequestor: team-a\ntasks:\n  - {name: shard, count: 12, run: 'true', resources: {cpu: 1, memory: 2Gi}}\n", nil)
	step(3)
	f.must(201, "POST", "/v1/jobs", "id: bulk-b\nqueue: build\nrequestor: team-b\ntasks:\n  - {name: shard, count: 14, run: 'true', resources: {cpu: 1.5, memory: 3Gi}}\n", nil)
	step(2)
	finish("bulk-a", "", 3)
	step(2)
	finish("bulk-a", "", 2)
	finish("pipeline", "prepare", 1)
	step(2)
	finish("bulk-b", "", 2)
	step(2)
	finish("bulk-a", "", 12)
	step(2)
	f.must(201, "POST", "/v1/jobs", "id: nightly\nqueue: batch\ntasks:\n  - {name: export, count: 3, run: 'true'}\n", nil)
	for i := range 5 {
		f.must(201, "POST", "/v1/jobs", fmt.Sprintf("id: detect-%d\nqueue: batch\nendpoint: detector\nload: 2\ntasks:\n  - {name: region, run: 'true'}\n", i), nil)
	}
	step(2)
	finish("bulk-b", "", 3)
	step(3)
}

// pipelineJob is a small DAG: prepare, three train tasks that need it, and
// a report that needs them all.
const pipelineJob = `id: pipeline
queue: build
requestor: team-a
tasks:
  - {name: prepare, run: 'true'}
  - {name: train, count: 3, needs: [prepare], run: 'true', resources: {cpu: 2, memory: 6Gi}}
  - {name: report, needs: [train], run: 'true'}
`
