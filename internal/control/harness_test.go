package control

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/sqlite"
	"github.com/allot-sched/allot/internal/store/storetest"
)

// fakeClock is the controller's clock in tests: time moves only when the
// test says so, so a heartbeat timeout passes without sleeping.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
	// settle, when set, runs after each move with the new time. A plane
	// sets it to wait for a loop round at that time: a round opened
	// before the move stays open while the commit before it runs, and
	// would take the test's next request at the old time.
	settle func(time.Time)
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Add(d time.Duration) {
	now, settle := f.move(d)
	if settle != nil {
		settle(now)
	}
}

// addHeld moves the clock without waiting for a round, for a loop that a
// full disk holds: it runs none until the disk is freed.
func (f *fakeClock) addHeld(d time.Duration) { f.move(d) }

func (f *fakeClock) move(d time.Duration) (time.Time, func(time.Time)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	return f.now, f.settle
}

const testTimeout = 10 * time.Second

// plane is a controller running its loop on a store file, as a server
// process would; stop ends it the way kill -9 would (nothing more is
// written), and reopen starts a new one on the same file.
type plane struct {
	t     *testing.T
	path  string
	cfg   Config // the test's own settings; open adds the clock, tick and (if none) a logger that drops all
	clock *fakeClock
	st    *sqlite.Store
	// disk sits between the controller and st: disk.Fill makes the
	// store's writes fail as on a full disk. startFull fills it before
	// the controller is built (a restart on a full disk).
	disk      *storetest.FullDisk
	startFull bool
	c         *Controller
	stopC     context.CancelFunc
	done      chan error
	// runErr is what the last loop's Run returned.
	runErr error
	// secrets holds the secret of every attempt a lease handed out, as
	// the agent keeps it; report sends it with reports that carry none.
	secrets map[api.Attempt]string
}

func newPlane(t *testing.T) *plane {
	return newPlaneConfig(t, Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}},
		HeartbeatTimeout: 30 * time.Second})
}

// newPlaneConfig is newPlane with settings of the test's own.
func newPlaneConfig(t *testing.T, cfg Config) *plane {
	t.Helper()
	p := &plane{t: t, path: filepath.Join(t.TempDir(), "allot.db"), cfg: cfg, clock: newFakeClock(), secrets: map[api.Attempt]string{}}
	p.open()
	t.Cleanup(p.stop)
	return p
}

func (p *plane) open() {
	p.t.Helper()
	st, err := sqlite.Open(p.path)
	if err != nil {
		p.t.Fatal(err)
	}
	cfg := p.cfg
	cfg.CycleEvery = 2 * time.Millisecond // ticks come often; the fake clock decides what is late
	cfg.Clock = p.clock.Now
	if cfg.GatherMax == 0 {
		// A round kept open for callers takes requests the test sends
		// after moving the fake clock at the time it opened.
		cfg.GatherMax = -1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	disk := storetest.NewFullDisk(st)
	if p.startFull {
		disk.Fill()
	}
	c, err := New(context.Background(), cfg, disk)
	if err != nil {
		st.Close()
		p.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.st, p.disk, p.c, p.stopC, p.done = st, disk, c, cancel, make(chan error, 1)
	p.clock.settle = p.roundAt
	go func() { p.done <- c.Run(ctx) }()
}

// roundAt waits until the loop has closed a round at now or later, or has
// ended: every request sent after that is taken at the new time.
func (p *plane) roundAt(now time.Time) {
	p.t.Helper()
	deadline := time.Now().Add(testTimeout)
	for p.c.Snapshot().At.Before(now) {
		select {
		case <-p.c.done:
			return
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no loop round at %s", now)
		}
		time.Sleep(time.Millisecond)
	}
}

func (p *plane) stop() {
	if p.c == nil {
		return
	}
	p.clock.settle = nil
	p.stopC()
	p.runErr = <-p.done
	p.st.Close()
	p.c = nil
}

// restart stops the controller and builds a new one from the same file.
func (p *plane) restart() {
	p.t.Helper()
	p.stop()
	p.open()
}

func (p *plane) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	p.t.Cleanup(cancel)
	return ctx
}

func (p *plane) register(name string, slots int, running ...api.Attempt) {
	p.t.Helper()
	reg := api.Register{Name: name, Resources: spec.Resources{CPU: 4000, Memory: 8192}, Slots: slots, Running: running}
	if _, err := p.c.Register(p.ctx(), reg); err != nil {
		p.t.Fatalf("register %s: %v", name, err)
	}
}

func (p *plane) submit(js spec.Job) {
	p.t.Helper()
	if _, err := p.c.Submit(p.ctx(), js); err != nil {
		p.t.Fatalf("submit %s: %v", js.ID, err)
	}
}

// lease takes what the worker has without waiting.
func (p *plane) lease(worker string) api.Lease {
	p.t.Helper()
	l, err := p.c.Lease(p.ctx(), worker, 0, nil)
	if err != nil {
		p.t.Fatalf("lease %s: %v", worker, err)
	}
	p.remember(l)
	return l
}

// remember keeps the secrets of the attempts l hands out (batch members
// included), as the agent does.
func (p *plane) remember(l api.Lease) {
	for _, a := range l.Assignments {
		for _, m := range append([]api.Assignment{a}, a.Batch...) {
			if m.Secret != "" {
				p.secrets[m.Attempt] = m.Secret
			}
		}
	}
}

// leaseUntil polls the worker's mailbox until cond holds for what arrived
// so far, and returns everything that arrived.
func (p *plane) leaseUntil(worker string, what string, cond func(api.Lease) bool) api.Lease {
	p.t.Helper()
	var all api.Lease
	deadline := time.Now().Add(testTimeout)
	for {
		l := p.lease(worker)
		all.Assignments = append(all.Assignments, l.Assignments...)
		all.Stops = append(all.Stops, l.Stops...)
		if cond(all) {
			return all
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: timed out waiting for %s; got %+v", worker, what, all)
		}
		time.Sleep(time.Millisecond)
	}
}

// report sends reports as the agent does: each with its attempt's secret
// (a report that sets one of its own keeps it).
func (p *plane) report(worker string, reports ...api.Report) error {
	for i := range reports {
		if reports[i].Secret == "" {
			reports[i].Secret = p.secrets[reports[i].Attempt]
		}
	}
	return p.c.Report(p.ctx(), worker, reports)
}

func (p *plane) job(id string) api.Job {
	p.t.Helper()
	j, err := p.c.Job(p.ctx(), id)
	if err != nil {
		p.t.Fatalf("job %s: %v", id, err)
	}
	return j
}

func (p *plane) task(job, name string) api.Task {
	p.t.Helper()
	for _, tk := range p.job(job).Tasks {
		if tk.Name == name {
			return tk
		}
	}
	p.t.Fatalf("job %s has no task %s", job, name)
	return api.Task{}
}

func (p *plane) worker(name string) api.Worker {
	p.t.Helper()
	ws, err := p.c.Workers(p.ctx())
	if err != nil {
		p.t.Fatal(err)
	}
	for _, w := range ws {
		if w.Name == name {
			return w
		}
	}
	p.t.Fatalf("no worker %s in %+v", name, ws)
	return api.Worker{}
}

// waitWorkerState polls until the worker is in state.
func (p *plane) waitWorkerState(name, state string) {
	p.t.Helper()
	deadline := time.Now().Add(testTimeout)
	for p.worker(name).State != state {
		if time.Now().After(deadline) {
			p.t.Fatalf("worker %s is %s, want %s", name, p.worker(name).State, state)
		}
		time.Sleep(time.Millisecond)
	}
}

// events lists the stored events of kind (all kinds when empty).
func (p *plane) events(kind string) []store.Event {
	p.t.Helper()
	evs, err := p.st.Events(p.ctx(), store.EventFilter{})
	if err != nil {
		p.t.Fatal(err)
	}
	return slices.DeleteFunc(evs, func(e store.Event) bool { return kind != "" && e.Kind != kind })
}

func attemptOf(as []api.Assignment, task string) (api.Attempt, bool) {
	for _, a := range as {
		if a.Task == task {
			return a.Attempt, true
		}
	}
	return api.Attempt{}, false
}

func hasStop(ss []api.StopOrder, a api.Attempt) bool {
	for _, s := range ss {
		if s.Attempt == a {
			return true
		}
	}
	return false
}

func succeeded(a api.Attempt) api.Report { return api.Report{Attempt: a} }

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
