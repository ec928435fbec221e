//go:build unix

package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
)

// waitFor polls cond until it holds or a deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// gone reports whether a process has ended (a zombie counts: it runs no
// more, and in a container nobody may reap it).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && len(b) > i+2 && b[i+2] == 'Z'
}

// readPID waits for a task to write a PID into path and returns it.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	waitFor(t, "the task to write "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

// fakeServer implements the worker routes of the API, minimally, and
// records what the agent sends.
type fakeServer struct {
	mu            sync.Mutex
	known         map[string]bool
	registrations []api.Register
	registerFails []int // statuses to answer registrations with, in turn
	// unknownFields are registration fields the server refuses as unknown
	// (400, naming the field), as a server that predates them does.
	unknownFields []string
	// refuseUsage refuses reports with usage fields, as a server that
	// predates them does.
	refuseUsage  bool
	leases       []api.Lease
	leaseWake    chan struct{}
	reportStatus func(batch []api.Report) int // nil: 204
	reportCalls  [][]api.Report               // every batch received, delivered or not
	// requests names every reports request in turn: "stopping",
	// "leaving", or "reports" for one that carries only reports.
	requests   []string
	delivered  []api.Report
	heartbeats int
	hbCache    [][]api.CacheHint // the cache hints of every heartbeat with a body
	leaseHolds [][]api.Attempt   // the Running list of every lease request
	// secrets are those of the attempts given out; like the real server,
	// it refuses (403) a batch with a report that lacks its attempt's.
	secrets map[api.Attempt]string
	forged  []api.Report // reports refused for their secret
}

func newFakeServer(t *testing.T) (*fakeServer, string) {
	fs, srv := newFakeHTTPServer(t)
	return fs, srv.URL
}

// newFakeHTTPServer is newFakeServer with its server, for a test that
// stops it.
func newFakeHTTPServer(t *testing.T) (*fakeServer, *httptest.Server) {
	fs := &fakeServer{known: map[string]bool{}, leaseWake: make(chan struct{}, 1), secrets: map[api.Attempt]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/workers", fs.register)
	mux.HandleFunc("POST /v1/workers/{name}/lease", fs.lease)
	mux.HandleFunc("POST /v1/workers/{name}/reports", fs.reports)
	mux.HandleFunc("POST /v1/workers/{name}/heartbeat", fs.heartbeat)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return fs, srv
}

func fail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: api.Error{Code: code, Message: msg}})
}

func decode(r *http.Request, v any) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func (fs *fakeServer) register(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		fail(w, 400, api.CodeInvalid, err.Error())
		return
	}
	var reg api.Register
	var fields map[string]json.RawMessage
	if err := errors.Join(json.Unmarshal(b, &reg), json.Unmarshal(b, &fields)); err != nil {
		fail(w, 400, api.CodeInvalid, err.Error())
		return
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, f := range fs.unknownFields {
		if _, ok := fields[f]; ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: api.Error{Code: api.CodeInvalid, Field: f, Message: fmt.Sprintf("unknown field %q", f)}})
			return
		}
	}
	if len(fs.registerFails) > 0 {
		status := fs.registerFails[0]
		fs.registerFails = fs.registerFails[1:]
		fail(w, status, "from_test", "refused by the test")
		return
	}
	fs.registrations = append(fs.registrations, reg)
	fs.known[reg.Name] = true
	_ = json.NewEncoder(w).Encode(api.Worker{Name: reg.Name, State: "ready", Slots: reg.Slots})
}

func (fs *fakeServer) isKnown(name string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.known[name]
}

func (fs *fakeServer) lease(w http.ResponseWriter, r *http.Request) {
	var req api.LeaseRequest
	if err := decode(r, &req); err != nil {
		fail(w, 400, api.CodeInvalid, err.Error())
		return
	}
	name := r.PathValue("name")
	if req.Running != nil {
		fs.mu.Lock()
		fs.leaseHolds = append(fs.leaseHolds, *req.Running)
		fs.mu.Unlock()
	}
	timer := time.NewTimer(time.Duration(req.Wait))
	defer timer.Stop()
	for {
		fs.mu.Lock()
		if !fs.known[name] {
			fs.mu.Unlock()
			fail(w, 404, api.CodeNotFound, "worker "+name+" is not registered")
			return
		}
		if len(fs.leases) > 0 {
			l := fs.leases[0]
			fs.leases = fs.leases[1:]
			fs.mu.Unlock()
			_ = json.NewEncoder(w).Encode(l)
			return
		}
		fs.mu.Unlock()
		select {
		case <-fs.leaseWake:
		case <-timer.C:
			_ = json.NewEncoder(w).Encode(api.Lease{Assignments: []api.Assignment{}, Stops: []api.StopOrder{}})
			return
		case <-r.Context().Done():
			return
		}
	}
}

// give queues a lease for the agent's next poll. Each assignment (and
// batch member) without a secret gets one, as the server gives them.
func (fs *fakeServer) give(l api.Lease) {
	fs.mu.Lock()
	for i := range l.Assignments {
		a := &l.Assignments[i]
		fs.issue(a)
		for k := range a.Batch {
			fs.issue(&a.Batch[k])
		}
	}
	fs.leases = append(fs.leases, l)
	fs.mu.Unlock()
	select {
	case fs.leaseWake <- struct{}{}:
	default:
	}
}

// issue gives a its attempt's secret, the one already issued if any.
func (fs *fakeServer) issue(a *api.Assignment) {
	if a.Secret == "" {
		a.Secret = fs.secrets[a.Attempt]
	}
	if a.Secret == "" {
		a.Secret = fmt.Sprintf("secret-of-%s/%s/%d", a.Job, a.Task, a.Attempt.Attempt)
	}
	fs.secrets[a.Attempt] = a.Secret
}

func (fs *fakeServer) reports(w http.ResponseWriter, r *http.Request) {
	var rs api.Reports
	if err := decode(r, &rs); err != nil {
		fail(w, 400, api.CodeInvalid, err.Error())
		return
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if !fs.known[r.PathValue("name")] {
		fail(w, 404, api.CodeNotFound, "unknown worker")
		return
	}
	switch {
	case rs.Stopping:
		fs.requests = append(fs.requests, "stopping")
	case rs.Leaving:
		fs.requests = append(fs.requests, "leaving")
	default:
		fs.requests = append(fs.requests, "reports")
	}
	fs.reportCalls = append(fs.reportCalls, rs.Reports)
	if fs.refuseUsage {
		for i, rep := range rs.Reports {
			if rep.CPUSeconds != 0 || rep.PeakMemory != 0 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(400)
				_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: api.Error{Code: api.CodeInvalid,
					Field: fmt.Sprintf("reports[%d].cpuSeconds", i), Message: `unknown field "cpuSeconds"`}})
				return
			}
		}
	}
	for _, rep := range rs.Reports {
		if want, ok := fs.secrets[rep.Attempt]; ok && rep.Secret != want {
			fs.forged = append(fs.forged, rep)
			fail(w, 403, api.CodeForbidden, "a report lacks its attempt's secret")
			return
		}
	}
	status := 204
	if fs.reportStatus != nil {
		status = fs.reportStatus(rs.Reports)
	}
	if status != 204 {
		fail(w, status, api.CodeUnavailable, "try later")
		return
	}
	fs.delivered = append(fs.delivered, rs.Reports...)
	w.WriteHeader(204)
}

func (fs *fakeServer) heartbeat(w http.ResponseWriter, r *http.Request) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if !fs.known[r.PathValue("name")] {
		fail(w, 404, api.CodeNotFound, "unknown worker")
		return
	}
	fs.heartbeats++
	if r.ContentLength != 0 {
		var hb api.Heartbeat
		if err := decode(r, &hb); err != nil {
			fail(w, 400, api.CodeInvalid, err.Error())
			return
		}
		fs.hbCache = append(fs.hbCache, hb.Cache)
	}
	w.WriteHeader(204)
}

// forget makes the server lose the worker, as a restart would.
func (fs *fakeServer) forget(name string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	delete(fs.known, name)
}

func (fs *fakeServer) report(a api.Attempt) (api.Report, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, r := range fs.delivered {
		if r.Attempt == a {
			return r, true
		}
	}
	return api.Report{}, false
}

func (fs *fakeServer) snapshot() (regs []api.Register, calls [][]api.Report, delivered []api.Report) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append(regs, fs.registrations...), append(calls, fs.reportCalls...), append(delivered, fs.delivered...)
}

// testConfig is a fast agent: short waits and retries, explicit resources
// (no detection).
func testConfig(server string) Config {
	return Config{
		Server:         server,
		Name:           "w1",
		Resources:      spec.Resources{CPU: 2000, Memory: 1024},
		Slots:          1,
		Grace:          time.Second,
		HeartbeatEvery: 20 * time.Millisecond,
		LeaseWait:      200 * time.Millisecond,
		BackoffMin:     5 * time.Millisecond,
		BackoffMax:     20 * time.Millisecond,
		Logger:         slog.New(slog.DiscardHandler),
	}
}

// running is an agent started by start.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, cfg Config) *running {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	t.Cleanup(func() { _ = r.stop() })
	return r
}

// stop cancels the agent and returns what Run returned.
func (r *running) stop() error {
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(10 * time.Second):
		return errors.New("Run did not return")
	}
}

func assign(job, task string, attempt int, run string, env map[string]string) api.Assignment {
	return api.Assignment{Attempt: api.Attempt{Job: job, Task: task, Attempt: attempt}, Run: run, Env: env}
}
