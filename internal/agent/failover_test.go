//go:build unix

package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/api/rest"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// leadership is an api.Leadership a test sets.
type leadership struct {
	mu      sync.Mutex
	leading bool
	leader  string
}

func (l *leadership) Leader() (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leading, l.leader
}

func (l *leadership) set(leading bool, leader string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leading, l.leader = leading, leader
}

// replicaServer is a server process of a cluster: its controller on the
// shared store, and a stop that ends both.
type replicaServer struct {
	ctrl *control.Controller
	stop func()
}

// runReplica starts a controller on the SQLite file, recovering what is
// stored there, as a new leader does from the shared store.
func runReplica(t *testing.T, db string) replicaServer {
	t.Helper()
	st, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctrl, err := control.New(ctx, control.Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}}, st)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			st.Close()
		})
	}
	t.Cleanup(stop)
	return replicaServer{ctrl: ctrl, stop: stop}
}

// swappable is a handler a test replaces while its server keeps its URL.
type swappable struct{ h atomic.Pointer[http.Handler] }

func (s *swappable) set(h http.Handler)                               { s.h.Store(&h) }
func (s *swappable) ServeHTTP(w http.ResponseWriter, r *http.Request) { (*s.h.Load()).ServeHTTP(w, r) }

// The leader dies with a task running. The agent, given the three
// replicas' URLs, passes over the dead one and a follower to the new
// leader without backing off (its backoff is a minute), registers there
// at once with what it runs, and the task keeps running and ends once,
// in its first attempt.
func TestTheAgentFollowsAFailoverAtOnceAndKeepsItsTask(t *testing.T) {
	db := filepath.Join(t.TempDir(), "allot.db")
	first := runReplica(t, db)

	// A leads; B and C follow, naming A.
	a := httptest.NewServer(rest.New(first.ctrl, rest.Options{}).Handler())
	t.Cleanup(a.Close)
	bLead, cLead := &leadership{}, &leadership{}
	var bFront swappable
	b := httptest.NewServer(&bFront)
	t.Cleanup(b.Close)
	c := httptest.NewServer(rest.New(first.ctrl, rest.Options{Leadership: cLead}).Handler())
	t.Cleanup(c.Close)
	bLead.set(false, a.URL)
	cLead.set(false, a.URL)
	bFront.set(rest.New(first.ctrl, rest.Options{Leadership: bLead}).Handler())

	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	cfg := testConfig(a.URL + "," + c.URL + "," + b.URL)
	cfg.HeartbeatEvery, cfg.LeaseWait = 100*time.Millisecond, time.Second
	cfg.BackoffMin, cfg.BackoffMax = time.Minute, time.Minute
	ag, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- ag.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-runDone })

	job, err := first.ctrl.Submit(context.Background(), spec.Job{ID: "j1", Tasks: []spec.Task{{Name: "t",
		Run: "touch " + started + "; while [ ! -e " + release + " ]; do sleep 0.02; done"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the task to start", func() bool { _, err := os.Stat(started); return err == nil })

	// The leader dies: its listener and its connections close, its loop
	// stops. While no leader is known the followers say so.
	bLead.set(false, "")
	cLead.set(false, "")
	a.CloseClientConnections()
	a.Close()
	first.stop()
	second := runReplica(t, db)
	failedOver := time.Now()
	bFront.set(rest.New(second.ctrl, rest.Options{}).Handler())
	cLead.set(false, b.URL)

	waitFor(t, "the agent to register with the new leader", func() bool {
		s := ag.regServer.Load()
		return s != nil && *s == b.URL
	})
	if d := time.Since(failedOver); d > 5*time.Second {
		t.Errorf("registered with the new leader %v after the failover, want within 5 s", d)
	}
	got, err := second.ctrl.Job(context.Background(), job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tasks) != 1 || got.Tasks[0].State != "running" || got.Tasks[0].Attempt != 1 || got.Tasks[0].Worker != "w1" {
		t.Fatalf("after the failover the task is %+v, want still running on w1 in attempt 1", got.Tasks)
	}

	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var final api.Job
	waitFor(t, "the job to succeed", func() bool {
		final, err = second.ctrl.Job(context.Background(), job.ID)
		return err == nil && final.State == "succeeded"
	})
	if final.Tasks[0].Attempt != 1 {
		t.Errorf("the task ended in attempt %d, want 1: it was never requeued", final.Tasks[0].Attempt)
	}
}

// A new leader that knows the worker (it answers its leases) still gets
// a registration at once, with what the worker runs: the agent registers
// again whenever its client moved to another server.
func TestTheAgentRegistersAtOnceWithAServerItMovedTo(t *testing.T) {
	old, oldSrv := newFakeHTTPServer(t)
	next, nextSrv := newFakeHTTPServer(t)
	next.known["w1"] = true // it answers w1's leases and heartbeats without a registration
	cfg := testConfig(oldSrv.URL + "," + nextSrv.URL)
	cfg.HeartbeatEvery = time.Hour
	cfg.BackoffMin, cfg.BackoffMax = time.Minute, time.Minute
	start(t, cfg)
	marker := filepath.Join(t.TempDir(), "started")
	long := assign("j", "long", 1, "touch "+marker+"; sleep 30", nil)
	old.give(api.Lease{Assignments: []api.Assignment{long}})
	waitFor(t, "the task to start", func() bool { _, err := os.Stat(marker); return err == nil })

	oldSrv.CloseClientConnections()
	oldSrv.Close()
	waitFor(t, "a registration with the new server", func() bool { regs, _, _ := next.snapshot(); return len(regs) == 1 })
	regs, _, _ := next.snapshot()
	if len(regs[0].Running) != 1 || regs[0].Running[0] != long.Attempt {
		t.Errorf("registered with running = %+v, want the task it runs", regs[0].Running)
	}
}

// freezer passes requests to a replica's handler until frozen; then, as
// a stopped process whose kernel still accepts connections, it answers
// nothing: new requests and the answers of those in flight (a lease long
// poll) wait until the caller gives up.
type freezer struct {
	h      http.Handler
	frozen atomic.Bool
}

func (f *freezer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !f.frozen.Load() {
		f.h.ServeHTTP(frozenWriter{w, f, r}, r)
		return
	}
	<-r.Context().Done()
}

// frozenWriter holds the answer of a request of a replica frozen since.
type frozenWriter struct {
	http.ResponseWriter
	f *freezer
	r *http.Request
}

func (w frozenWriter) hold() {
	if w.f.frozen.Load() {
		<-w.r.Context().Done()
	}
}
func (w frozenWriter) WriteHeader(code int)        { w.hold(); w.ResponseWriter.WriteHeader(code) }
func (w frozenWriter) Write(b []byte) (int, error) { w.hold(); return w.ResponseWriter.Write(b) }
func (w frozenWriter) Flush() {
	w.hold()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// The leader freezes (SIGSTOP) with a task running and a lease long poll
// of a minute open: no connection breaks, nothing answers. Followers name
// it until a standby takes over. The agent (backoff a minute) notices
// within its server timeout, leaves the long poll, registers with the new
// leader as soon as it leads, and the task runs on and ends once, in its
// first attempt.
func TestTheAgentLeavesAFrozenLeaderAndKeepsItsTask(t *testing.T) {
	db := filepath.Join(t.TempDir(), "allot.db")
	first := runReplica(t, db)
	front := &freezer{h: rest.New(first.ctrl, rest.Options{}).Handler()}
	a := httptest.NewServer(front)
	t.Cleanup(a.Close)
	bLead, cLead := &leadership{}, &leadership{}
	var bFront swappable
	b := httptest.NewServer(&bFront)
	t.Cleanup(b.Close)
	c := httptest.NewServer(rest.New(first.ctrl, rest.Options{Leadership: cLead}).Handler())
	t.Cleanup(c.Close)
	bLead.set(false, a.URL)
	cLead.set(false, a.URL)
	bFront.set(rest.New(first.ctrl, rest.Options{Leadership: bLead}).Handler())

	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	cfg := testConfig(a.URL + "," + c.URL + "," + b.URL)
	cfg.HeartbeatEvery, cfg.LeaseWait, cfg.ServerTimeout = 5*time.Second, time.Minute, 300*time.Millisecond
	cfg.BackoffMin, cfg.BackoffMax = time.Minute, time.Minute
	ag, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- ag.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-runDone })

	job, err := first.ctrl.Submit(context.Background(), spec.Job{ID: "j1", Tasks: []spec.Task{{Name: "t",
		Run: "touch " + started + "; while [ ! -e " + release + " ]; do sleep 0.02; done"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the task to start", func() bool { _, err := os.Stat(started); return err == nil })
	time.Sleep(100 * time.Millisecond) // the next long poll is open

	// The leader freezes; after the leader timeout a standby leads on the
	// same store. The frozen one's loop stops: it commits nothing more.
	front.frozen.Store(true)
	first.stop()
	time.Sleep(time.Second)
	second := runReplica(t, db)
	tookOver := time.Now()
	bFront.set(rest.New(second.ctrl, rest.Options{}).Handler())
	cLead.set(false, b.URL)

	deadline := time.Now().Add(20 * time.Second)
	for s := ag.regServer.Load(); s == nil || *s != b.URL; s = ag.regServer.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the agent did not register with the new leader within 20 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d := time.Since(tookOver); d > 5*time.Second {
		t.Errorf("registered with the new leader %v after it took over, want within 5 s", d)
	}
	got, err := second.ctrl.Job(context.Background(), job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tasks) != 1 || got.Tasks[0].State != "running" || got.Tasks[0].Attempt != 1 || got.Tasks[0].Worker != "w1" {
		t.Fatalf("after the failover the task is %+v, want still running on w1 in attempt 1", got.Tasks)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var final api.Job
	waitFor(t, "the job to succeed", func() bool {
		final, err = second.ctrl.Job(context.Background(), job.ID)
		return err == nil && final.State == "succeeded"
	})
	if final.Tasks[0].Attempt != 1 {
		t.Errorf("the task ended in attempt %d, want 1: it was never requeued", final.Tasks[0].Attempt)
	}
}
