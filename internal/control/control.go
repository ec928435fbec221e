// Package control is the control plane's scheduling loop: the only writer.
// Requests (submissions, reports, registrations) run on one goroutine that
// applies them to the engine, runs a scheduling cycle, persists everything
// that changed in one store transaction (group commit), and only then answers
// the callers and hands tasks to workers. A caller that got an answer knows its
// change is durable.
package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/config"
	"github.com/allot-sched/allot/internal/control/densityfeed"
	"github.com/allot-sched/allot/internal/control/hook"
	"github.com/allot-sched/allot/internal/density"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/inputs"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/whatif"
)

// Config configures a Controller.
type Config struct {
	Scheduling spec.Scheduling
	// CycleEvery runs a cycle at least this often even without events, so
	// time-based rules (rebalance durations, preempt delays) fire.
	CycleEvery time.Duration
	// StopGrace is how long a stopped task gets between SIGTERM and SIGKILL.
	StopGrace time.Duration
	// HeartbeatTimeout is how long a worker may stay silent (no heartbeat,
	// lease request or report) before it is declared lost: its tasks are
	// requeued, which is not a failed attempt, and it must register again.
	// It also bounds how long the server waits, after a restart, for a
	// worker it knew to come back.
	HeartbeatTimeout time.Duration
	// InputAllow limits the inputs jobs may declare (server.inputs.allow);
	// empty allows every input.
	InputAllow []string
	// MaxOutputBytes is how much of each attempt's output the server
	// keeps (server.maxOutput); the oldest bytes beyond it are dropped.
	// Zero means DefaultMaxOutputBytes.
	MaxOutputBytes int64
	// MaxLiveTasks bounds the tasks of the unfinished jobs
	// (server.limits.maxLiveTasks), MaxLiveTasksPerSubmitter those of one
	// submitter's (livetasks.go). Zero means spec.DefaultMaxLiveTasks and
	// spec.DefaultMaxLiveTasksPerSubmitter.
	MaxLiveTasks             int
	MaxLiveTasksPerSubmitter int
	// MaxBatch bounds how many requests one loop round takes.
	MaxBatch int
	// GatherMax is the longest a round waits for the callers the last
	// commit answered before its own commit starts (gatherFor). Zero
	// means DefaultGatherMax; a negative value never waits. A round keeps
	// the time it opened at, so tests that move a fake clock between
	// requests turn the wait off.
	GatherMax time.Duration
	// StoreRetryMax bounds the wait between two commits of a round the
	// store refused (a full disk): the server resumes within about this
	// long of there being room again.
	StoreRetryMax time.Duration
	// Clock reads the time; tests inject a fake.
	Clock  func() time.Time
	Logger *slog.Logger
	// Observer, when set, is told about every cycle and commit (metrics).
	Observer Observer
}

func (c *Config) defaults() {
	if c.CycleEvery <= 0 {
		c.CycleEvery = time.Second
	}
	if c.StopGrace <= 0 {
		c.StopGrace = 10 * time.Second
	}
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 1024
	}
	if c.GatherMax == 0 {
		c.GatherMax = DefaultGatherMax
	}
	if c.MaxOutputBytes <= 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.MaxLiveTasks <= 0 {
		c.MaxLiveTasks = spec.DefaultMaxLiveTasks
	}
	if c.MaxLiveTasksPerSubmitter <= 0 {
		c.MaxLiveTasksPerSubmitter = spec.DefaultMaxLiveTasksPerSubmitter
	}
	if c.StoreRetryMax <= 0 {
		c.StoreRetryMax = DefaultStoreRetryMax
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// DefaultHeartbeatTimeout is Config.HeartbeatTimeout when unset: six
// heartbeats of an agent with its default interval.
const DefaultHeartbeatTimeout = 30 * time.Second

// ErrStopped is returned to requests made after the loop ended.
var ErrStopped = errors.New("the scheduling loop is not running")

// ErrHeld is returned to a change whose caller stopped waiting while the
// store refused writes: the loop took it, most likely into the held round,
// so it is neither refused nor stored yet (degraded.go).
var ErrHeld = errors.New("this change was taken before the store refused writes and waits to be stored: " +
	"it is stored when the store takes writes again, unless the server stops first; " +
	"its outcome is not known yet: send the same request again (a job with the same id) to learn it")

// Controller owns the engine and the store's write side.
type Controller struct {
	cfg     Config
	st      store.Store
	eng     *engine.Engine
	engCfg  engine.Config
	inputs  *inputs.Checker
	reqs    chan *request
	done    chan struct{}
	closing chan struct{}
	closed  sync.Once
	err     error

	// Loop-owned state: only the loop goroutine touches it.
	jobs map[string]*liveJob
	// live counts the tasks of jobs, changed only by addJob and dropJob
	// (livetasks.go).
	live    liveTasks
	workers map[string]*liveWorker
	// running indexes the task records in the running state by worker, so
	// that what one worker runs is found without walking every job. It may
	// hold records that have since moved on; readers check the record.
	running map[string]map[*store.Task]struct{}
	// owed holds, per worker, the attempts the server stopped whose
	// report (with their output) is still to come (stopped.go).
	owed map[string]map[api.Attempt]*owedReport
	// gone remembers the jobs forgotten last, for the ID check (ids.go).
	gone goneIDs
	// stored holds the IDs of the jobs the store may hold, so that a
	// submission of a new ID need not read the store (storedids.go).
	stored *storedIDs
	// inflight is the round whose commit runs beside the loop (Run), nil
	// when none does.
	inflight *txn
	// recent keeps each queue's recent runtimes, for explain's estimate.
	recent map[string]*whatif.Window
	// held names who holds each held job (hold.go).
	held map[string]string
	// features are the loop's features (features.go), and what each hook
	// point runs of them, in the order registerFeatures documents.
	features  []hook.Feature
	onRecover []hook.Recoverer
	onTick    []func(*txn)
	onDecide  []hook.DecisionsWatcher
	onEnd     []func(*txn)
	onStop    []hook.Stopper
	// density feeds the density series (GET /v1/density).
	density *densityfeed.Feed
	// degradedLogged is when the log last said the store refuses writes.
	degradedLogged time.Time

	// Shared with API goroutines.
	mu       sync.Mutex
	boxes    map[string]*mailbox
	notifyCh chan struct{} // closed and replaced after each commit with events
	snap     *Snapshot     // the last published snapshot
	health   StoreHealth   // whether the store takes writes (degraded.go)

	pl *placementState // cache hints, elastic loop, density (placement.go)
}

type request struct {
	fn func(t *txn) (any, error)
	// read marks a request that changes nothing: it is answered even
	// while a round is held because the store refuses writes.
	read bool
	val  any
	err  error
	done chan struct{}
}

// New builds a controller on st and rebuilds the engine from it.
func New(ctx context.Context, cfg Config, st store.Store) (*Controller, error) {
	cfg.defaults()
	// placement.mergeMax applies as configured (default 4): a merged batch
	// travels as one lease entry that the agent runs in one slot (batch.go).
	ic, err := inputs.New(cfg.InputAllow)
	if err != nil {
		return nil, err
	}
	engCfg, err := config.Engine(cfg.Scheduling)
	if err != nil {
		return nil, err
	}
	// The list of waiting jobs would cost every cycle time in proportion
	// to the backlog; the snapshot carries the engine's counts instead,
	// and pages ask for the reasons of the jobs they show (PendingOf).
	engCfg.LazyPending = true
	eng, err := engine.New(engCfg)
	if err != nil {
		return nil, err
	}
	c := &Controller{cfg: cfg, st: st, eng: eng, engCfg: engCfg, inputs: ic, reqs: make(chan *request, cfg.MaxBatch),
		done: make(chan struct{}), closing: make(chan struct{}), jobs: map[string]*liveJob{}, workers: map[string]*liveWorker{},
		running: map[string]map[*store.Task]struct{}{},
		boxes:   map[string]*mailbox{}, notifyCh: make(chan struct{}), stored: newStoredIDs()}
	win := density.NewWindow(densityBucket(cfg.Scheduling.Placement), density.WindowBuckets)
	c.registerFeatures(win)
	if err := c.recover(ctx); err != nil {
		return nil, fmt.Errorf("rebuilding the engine from the store: %w", err)
	}
	if err := c.initPlacement(ctx, win); err != nil {
		return nil, err
	}
	return c, nil
}

// Run runs the loop until ctx ends or a commit fails for good. A commit the
// store refuses for a cause outside it (a full disk) holds the round and is
// retried until it is stored (degraded.go). A refusal no retry cures (an
// invalid row, a fenced store) is fatal: the engine has moved on and the
// store has not, so the server must restart and rebuild from the store.
//
// A round's commit runs beside the loop: while round N's batch is being
// committed, the loop applies the requests that arrive as round N+1, so
// the store and the rest of the server each use a core. When N is stored,
// the loop runs N+1's cycle and starts N+1's commit: a round holds what
// arrived during the commit before it, as when the loop waited for each
// commit, and its requests were applied meanwhile; after a commit that
// answered many callers, N+1's commit waits a little for what they send
// next (gatherFor). Nothing of N+1 is
// committed, answered or handed to a worker before N is stored, and its
// answers wait for its own commit.
func (c *Controller) Run(ctx context.Context) error {
	defer close(c.done)
	defer c.stopFeatures() // however the loop ends, before done closes
	// The stored IDs are read beside the loop; the loop does not end
	// before the read does, so that nothing uses the store after Run.
	loadCtx, stopLoad := context.WithCancel(ctx)
	loaded := make(chan struct{})
	defer func() { stopLoad(); <-loaded }()
	go func() {
		defer close(loaded)
		if err := c.stored.load(loadCtx, c.st); err != nil && loadCtx.Err() == nil {
			c.cfg.Logger.Warn("reading the stored job IDs; each submission reads the store for its ID", "err", err)
		}
	}()
	tick := time.NewTicker(c.cfg.CycleEvery)
	defer tick.Stop()
	var (
		prev *flight // the round whose commit runs
		next *intake // the round taking requests
		// The callers the last commit answered, and how long it took:
		// the next round waits a little for them (gatherFor).
		answered int
		lastTook time.Duration
		landedAt time.Time
		gather   <-chan time.Time // while the round waits; nil otherwise
		gathered bool             // the wait is over
	)
	for {
		reqs := c.reqs
		if next != nil && len(next.batch) >= c.cfg.MaxBatch {
			reqs = nil // full: the rest waits for the round after
		}
		var landed <-chan error
		if prev != nil {
			landed = prev.done
		}
		select {
		case <-ctx.Done():
			var applied []*request // applied, never to be stored
			if next != nil {
				applied = next.batch
			}
			if prev != nil {
				if err := c.land(ctx, prev, <-prev.done); err != nil {
					return c.stopped(ctx, err, prev.batch, applied)
				}
			}
			c.err = ctx.Err()
			for _, r := range applied {
				r.val, r.err = nil, ErrStopped
				close(r.done)
			}
			c.drain(ErrStopped)
			return nil
		case r := <-reqs:
			next = c.take(next, r)
		case <-tick.C:
			next = c.take(next, nil)
			next.ticked = true
		case <-gather:
			gather, gathered = nil, true
		case err := <-landed:
			f := prev
			prev = nil
			landedAt = time.Now()
			answered, lastTook = len(f.batch), landedAt.Sub(f.started)
			if err := c.land(ctx, f, err); err != nil {
				var applied []*request
				if next != nil {
					applied = next.batch
				}
				return c.stopped(ctx, err, f.batch, applied)
			}
		}
		if prev != nil || next == nil {
			continue
		}
	more:
		for len(next.batch) < c.cfg.MaxBatch {
			select {
			case r := <-c.reqs:
				next = c.take(next, r)
			default:
				break more
			}
		}
		// The wait counts from the landing, when the callers were
		// answered: a request that comes long after waits for nothing.
		if rest := time.Until(landedAt.Add(gatherFor(answered, len(next.batch), lastTook, c.cfg.GatherMax))); rest > 0 && !gathered {
			if gather == nil {
				gather = time.After(rest)
			}
			continue
		}
		gather, gathered, answered = nil, false, 0
		t, batch := next.t, next.batch
		c.close(t, next.ticked)
		next = nil
		if t.batch.Empty() {
			c.finish(t, batch)
			continue
		}
		prev = c.launch(ctx, t, batch)
	}
}

// gatherMin is the fewest callers a commit must have answered for the
// next round to wait for them; DefaultGatherMax is the longest it waits
// unless Config.GatherMax says otherwise.
const (
	gatherMin        = 8
	DefaultGatherMax = 5 * time.Millisecond
)

// gatherFor is how long a round that holds `have` requests waits before its
// commit starts, after a commit that answered answered callers and took
// took. Callers that submit one job after another come back as soon as
// they are answered; without a wait, the round committed next holds only
// those that came back while the commit before ran, and many clients'
// jobs went in two or three commits where one would do: a commit's cost
// is mostly per commit (a page of each table and index written, an
// fsync), not per job. So the round waits until as many requests as the
// last commit answered are in, for at most as long as that commit took
// (the callers were answered then and are on their way) and limit. A
// server with few callers (fewer than gatherMin a commit) never waits,
// nor one whose limit is not positive.
func gatherFor(answered, have int, took, limit time.Duration) time.Duration {
	if answered < gatherMin || have >= answered || limit <= 0 {
		return 0
	}
	return min(took, limit)
}

// intake is the round taking requests: they are applied as they come.
type intake struct {
	t      *txn
	batch  []*request
	ticked bool
}

// take applies r (if any) in round in, which it opens if in is nil.
func (c *Controller) take(in *intake, r *request) *intake {
	if in == nil {
		in = &intake{t: c.open()}
	}
	if r != nil {
		r.val, r.err = r.fn(in.t)
		in.batch = append(in.batch, r)
	}
	return in
}

// stopped ends the loop after a round could not be stored: the requests of
// the given batches, and those waiting, are answered ErrStopped, or
// not_leader when another leader fenced the store (nothing of the rounds
// was stored: the leader has the work, and the caller goes there).
func (c *Controller) stopped(ctx context.Context, err error, batches ...[]*request) error {
	c.err = err
	for _, batch := range batches {
		for _, r := range batch {
			r.err = fmt.Errorf("%w: %v", ErrStopped, err)
			if errors.Is(err, store.ErrFenced) {
				r.err = &api.NotLeaderError{}
			}
			close(r.done)
		}
	}
	c.drain(c.stopErr())
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// Stopped before the round was stored (typically while the
		// store refused writes): none of it was acknowledged, so
		// nothing acknowledged is lost.
		c.cfg.Logger.Warn("scheduling loop stopped before its last round was stored; none of it was acknowledged", "err", err)
		return nil
	}
	c.cfg.Logger.Error("scheduling loop stopped", "err", err)
	return err
}

func (c *Controller) drain(err error) {
	for {
		select {
		case r := <-c.reqs:
			r.err = err
			close(r.done)
		default:
			return
		}
	}
}

// flight is a round whose batch is being committed.
type flight struct {
	t       *txn
	batch   []*request
	done    chan error // the commit's result
	started time.Time
}

// round runs one loop iteration at once: requests, a cycle, one commit,
// answers.
func (c *Controller) round(ctx context.Context, batch []*request, ticked bool) error {
	t := c.prepare(batch, ticked)
	if !t.batch.Empty() {
		if err := c.commitUntilStored(ctx, t); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
	c.finish(t, batch)
	return nil
}

// prepare applies a round's requests, runs the cycle and collects what the
// round stores.
func (c *Controller) prepare(batch []*request, ticked bool) *txn {
	t := c.open()
	for _, r := range batch {
		r.val, r.err = r.fn(t)
	}
	c.close(t, ticked)
	return t
}

// open starts a round at the loop's clock.
func (c *Controller) open() *txn {
	return &txn{c: c, now: c.cfg.Clock().UTC(), assign: map[string][]api.Assignment{}, stops: map[string][]api.StopOrder{}}
}

// close ends a round whose requests are applied: the tick's features if
// it ticked, the cycle, and what the round stores.
func (c *Controller) close(t *txn, ticked bool) {
	if ticked {
		for _, f := range c.onTick {
			f(t)
		}
	}
	if t.changed || ticked {
		c.cycle(t)
	}
	t.flush()
	for _, f := range c.onEnd {
		f(t)
	}
}

// launch starts committing t's batch beside the loop.
func (c *Controller) launch(ctx context.Context, t *txn, batch []*request) *flight {
	f := &flight{t: t, batch: batch, done: make(chan error, 1), started: time.Now()}
	c.inflight = t
	go func() {
		err := c.commit(ctx, t.batch)
		c.cfg.Logger.Debug("commit", "tasks", len(t.batch.Tasks), "events", len(t.batch.Events), "took", time.Since(f.started))
		f.done <- err
	}()
	return f
}

// land ends a round whose commit returned err: a refusal that retrying can
// cure holds the loop until the batch is stored (degraded.go); then the
// round's answers go out.
func (c *Controller) land(ctx context.Context, f *flight, err error) error {
	c.inflight = nil
	if err != nil {
		if !retryable(err) {
			return fmt.Errorf("commit: %w", err)
		}
		if err := c.holdUntilStored(ctx, f.t, err); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
	c.finish(f.t, f.batch)
	return nil
}

// finish ends a round whose batch is stored: ended jobs are forgotten, the
// workers get their orders, the callers their answers, and the event
// streams a wake-up.
func (c *Controller) finish(t *txn, batch []*request) {
	for _, j := range t.finished {
		if lj, ok := c.jobs[j]; ok && !store.JobEnded(lj.rec.State) {
			continue // requeued since it ended: live again (requeue.go)
		}
		c.dropJob(j)
		// Its end is durable now; the engine need not remember it.
		_ = c.eng.Apply(engine.ForgetJob{Job: j})
	}
	c.gone.forget(t.finished)
	c.deliver(t)
	for _, r := range batch {
		close(r.done)
	}
	if len(t.batch.Events) > 0 {
		c.mu.Lock()
		close(c.notifyCh)
		c.notifyCh = make(chan struct{})
		c.mu.Unlock()
	}
}

// do runs fn on the loop and waits until its changes are committed.
func (c *Controller) do(ctx context.Context, fn func(t *txn) (any, error)) (any, error) {
	return c.send(ctx, &request{fn: fn, done: make(chan struct{})})
}

// read runs fn, which changes nothing, on the loop: unlike a change, it is
// answered while the store refuses writes.
func (c *Controller) read(ctx context.Context, fn func(t *txn) (any, error)) (any, error) {
	return c.send(ctx, &request{fn: fn, read: true, done: make(chan struct{})})
}

// send hands r to the loop and waits for its answer.
func (c *Controller) send(ctx context.Context, r *request) (any, error) {
	select {
	case c.reqs <- r:
	case <-c.done:
		return nil, c.stopErr()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-r.done:
		return r.val, r.err
	case <-ctx.Done():
		// The loop still runs the request; only its answer is dropped, so a
		// stalled loop cannot hang callers (readiness answers 503).
		if h := c.StoreHealth(); h.Degraded && !r.read {
			return nil, fmt.Errorf("%w (the store refuses writes: %s)", ErrHeld, h.Cause)
		}
		return nil, ctx.Err()
	case <-c.done:
		// The loop answers every request it took before it ended; one that
		// arrived after its last drain gets no round.
		select {
		case <-r.done:
			return r.val, r.err
		default:
			return nil, c.stopErr()
		}
	}
}

// stopErr is the answer to a request the ended loop did not take: a loop
// fenced by another leader answers not_leader, so that the caller goes to
// the leader; any other stop, ErrStopped. Call it once c.done is closed,
// or from the loop.
func (c *Controller) stopErr() error {
	if errors.Is(c.err, store.ErrFenced) {
		return &api.NotLeaderError{}
	}
	return ErrStopped
}

// Ping makes a round trip through the loop: it answers once the loop has
// taken a request and committed what was pending with it, which is what
// readiness means. It costs no scan of the scheduling state.
func (c *Controller) Ping(ctx context.Context) error {
	_, err := c.do(ctx, func(*txn) (any, error) { return nil, nil })
	return err
}

// ReleaseWaiters ends every lease long poll at once, answering with what
// the worker has so far. A server calls it when it starts shutting down, so a
// worker reconnects to the next server without waiting out its poll.
func (c *Controller) ReleaseWaiters() { c.closed.Do(func() { close(c.closing) }) }

// Closing is closed when the server starts shutting down; long-lived
// requests (event streams) end on it.
func (c *Controller) Closing() <-chan struct{} { return c.closing }

// Changed returns a channel closed at the next commit that appended events;
// the event stream waits on it.
func (c *Controller) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.notifyCh
}

// Store returns the store, for reads that need no loop round.
func (c *Controller) Store() store.Store { return c.st }
