// Package agent is the worker agent (`allot worker`): it registers the
// machine's resources with the server, long-polls for leases, runs each
// assigned attempt as a process in its own process group, and reports how
// it ended. It rides out server restarts and outages: running tasks keep
// running, reports wait until the server takes them, and a server that
// forgot the worker is told again what it still runs.
package agent

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/allot-sched/allot/internal/agent/cgroup"
	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/model"
)

// Defaults of Config's zero fields.
const (
	DefaultOutputTailBytes = 64 << 10
	// MaxOutputTailBytes is the most output a report carries: the server
	// keeps the last 1 MiB of an attempt's output, so more would only
	// travel to be cut.
	MaxOutputTailBytes    = 1 << 20
	DefaultGrace          = 10 * time.Second
	DefaultHeartbeatEvery = 5 * time.Second
	DefaultLeaseWait      = 30 * time.Second
	DefaultBackoffMin     = 500 * time.Millisecond
	DefaultBackoffMax     = 30 * time.Second
	DefaultServerTimeout  = 2 * time.Second
)

// serverCheckEvery is how often, at least, an agent given several servers
// checks with a heartbeat that the one it uses answers: a frozen leader
// (its kernel still accepts connections) is noticed only by a request
// that is not answered in time.
const serverCheckEvery = time.Second

// requestTimeout bounds the agent's short requests (register, heartbeat,
// reports), so a connection that went silent is noticed and retried.
const requestTimeout = 30 * time.Second

// Config is how an agent runs. Zero fields take the defaults above, and
// zero resources are detected on the machine.
type Config struct {
	// Server is the base URL of the API, e.g. http://allot:8080, or the
	// URLs of the replicas of a cluster, separated by commas: the agent
	// moves at once to the leader, or the next one, on not_leader or a
	// connection error, and registers there (docs/ha.md).
	Server string
	// Token is the bearer token (a worker role); empty for a development
	// server without authentication.
	Token string
	// RootCAs, when set, are the only certificate authorities trusted for
	// an https Server (a private CA); nil trusts the system's.
	RootCAs *x509.CertPool
	// Name identifies the worker; it defaults to the host name. A worker
	// that restarts under the same name takes its place back.
	Name string
	// Resources are what the worker offers. Zero CPU, memory, GPUs or GPU
	// memory are detected (CPUs, /proc/meminfo, nvidia-smi).
	Resources model.ResourceSpec
	Labels    map[string]string
	Slots     int // attempts at once; default 1
	// Prefetch is how many assignments beyond Slots the agent takes ahead
	// and queues, so a slot that frees starts the next task at once
	// instead of waiting for the server's round trip; at most Slots. The
	// server counts them as running (api.Register.Prefetch). A server
	// that predates prefetching refuses the field: the agent then
	// registers without it, and says so in its log.
	Prefetch    int
	CostPerHour *float64 // nil: the server's default (1)
	Cached      []string // models and datasets already on the machine
	// Cache lists models and datasets the machine holds, with their kind,
	// as cache hints. The agent sends them at registration and with its
	// heartbeats, which keeps them fresh while it runs (the server applies
	// an unchanged list once per quarter of its cache TTL). What a task
	// that names a model or dataset ran successfully here is recorded by
	// the server from the agent's report.
	Cache []api.CacheHint
	// WorkDir is the working directory of tasks that name none, and the
	// base of relative ones; empty gives each attempt a fresh temporary
	// directory, removed when it ends.
	WorkDir string
	// StateDir is the agent's private directory (created 0700; one that
	// others may write to is refused). The agent holds it locked while it
	// runs, so two agents cannot share it, and records there the process
	// groups of its running tasks: at start it kills what a crash of its
	// previous run left (leftovers.go). Empty keeps no state.
	StateDir string
	// RunAs is the user tasks run as when their job names none; empty runs
	// them as the agent's own user. Only an agent running as root can
	// name another user (the CLI defaults it to nobody for root).
	RunAs string
	// AllowUsers are the users a job may ask its tasks to run as (its
	// user field), as patterns (path.Match: svc-*); root only when a
	// pattern is exactly "root". A job naming another user fails its
	// attempt here, with a reason.
	AllowUsers []string
	// OutputTailBytes is how much of the end of a task's output (stdout and
	// stderr together) travels with its report.
	OutputTailBytes int
	// Cgroups says how attempts are confined (confine.go): CgroupsAuto
	// (or empty) in a cgroup of their own on the hierarchy the host gives
	// controllers to, CgroupsV1 or CgroupsV2 on that one, CgroupsOff not
	// at all. Where no cgroup can be made the agent runs tasks unconfined
	// and registers why (api.Register.Unconfined).
	Cgroups string
	// CgroupRoot, when set, is the directory the attempts' groups are made
	// in, instead of under the agent's own group in the mounted
	// hierarchies: a cgroup v2 tree, or with CgroupsV1 a directory of
	// v1 hierarchies (one per controller).
	CgroupRoot string
	// PidsLimit bounds the processes and threads of each attempt at once
	// (its cgroup's pids.max): 0 is cgroup.DefaultPids, negative none.
	PidsLimit int64
	// StreamEvery is how often a running task's new output is sent to
	// the server (allot logs -f); 0 means DefaultStreamEvery, a negative
	// value sends none (only the report's tail).
	StreamEvery time.Duration
	// Grace is the time between SIGTERM and SIGKILL on a timeout, at
	// shutdown, and on a stop order that gives none.
	Grace time.Duration
	// HeartbeatEvery is how often the agent tells the server it is alive.
	HeartbeatEvery time.Duration
	// LeaseWait is how long the server may hold a lease request open.
	LeaseWait time.Duration
	// ServerTimeout is, with several servers, how long the one the agent
	// uses may take to answer a heartbeat, registration or report (a
	// lease: its wait on top) before the agent takes it for frozen or cut
	// off and moves to the next; it checks at least every second. Keep it
	// below the servers' leader timeout (3 s by default): the agent then
	// reaches the new leader soon after it takes over. One server is
	// given the time it needs (30 s per request).
	ServerTimeout time.Duration
	// BackoffMin and BackoffMax bound the delay between retries while the
	// server is unreachable (doubling, with jitter).
	BackoffMin, BackoffMax time.Duration
	Logger                 *slog.Logger
	// Started, when set, is called as the process of each attempt starts,
	// from the goroutine that started it: allot bench --exec times
	// submit-to-start with it.
	Started func(api.Attempt)
}

// Agent is one running worker agent. Create it with New, run it with Run.
type Agent struct {
	cfg    Config
	c      *client.Client
	log    *slog.Logger
	reg    api.Register // what the worker registers, without Running
	run    runner
	report *reporter
	// streams sends running attempts' output (stream.go); nil sends none.
	streams *streamer
	stats   agentStats
	// leftovers are what attempts left (directories, records), cleaned by
	// one goroutine after their reports are queued (tidy).
	leftovers chan leftover

	mu       sync.Mutex
	attempts map[api.Attempt]*attempt // accepted and not yet reported: queued or running
	queue    []*attempt               // accepted, waiting for a free slot
	busy     int                      // attempts with a slot
	closing  bool                     // shutting down: start nothing
	wg       sync.WaitGroup           // attempts being run

	// noUsage is set once the server refused the reports' usage fields:
	// it predates them, and gets reports without them.
	noUsage atomic.Bool

	// regMu makes registering again single-flight; gen counts successful
	// registrations, so a caller whose request failed under generation g
	// registers again only if nobody did since.
	regMu sync.Mutex
	gen   atomic.Uint64
	// regServer is the server of the last successful registration: when
	// the client moves to another (a failover), the agent registers
	// there at once (followServer).
	regServer atomic.Pointer[string]

	// away ends the requests out to a server the agent left (a lease long
	// poll, a report): a frozen server would hold them to their
	// deadlines. leave ends it and makes the next one.
	awayMu sync.Mutex
	away   context.Context
	leave  context.CancelFunc
}

// New checks cfg, fills its defaults and detects the machine's resources.
// It does not contact the server: Run does.
func New(cfg Config) (*Agent, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Server == "" {
		return nil, errors.New("agent: server: the URL of the Allot server is required")
	}
	if cfg.ServerTimeout == 0 {
		cfg.ServerTimeout = DefaultServerTimeout
	}
	opts := []client.Option{client.WithToken(cfg.Token), client.WithServerTimeout(cfg.ServerTimeout)}
	if cfg.RootCAs != nil {
		opts = append(opts, client.WithRootCAs(cfg.RootCAs))
	}
	c, err := client.New(cfg.Server, opts...)
	if err != nil {
		return nil, fmt.Errorf("agent: server: %w", err)
	}
	if cfg.Name == "" {
		if cfg.Name, err = os.Hostname(); err != nil {
			return nil, fmt.Errorf("agent: name: not given and the host name is unknown: %w", err)
		}
	}
	for _, f := range []struct {
		name string
		bad  bool
	}{
		{"slots", cfg.Slots < 0},
		{"prefetch", cfg.Prefetch < 0},
		{"outputTailBytes", cfg.OutputTailBytes < 0},
		{"grace", cfg.Grace < 0},
		{"heartbeatEvery", cfg.HeartbeatEvery < 0},
		{"leaseWait", cfg.LeaseWait < 0},
		{"backoffMin", cfg.BackoffMin < 0},
		{"backoffMax", cfg.BackoffMax < 0},
		{"serverTimeout", cfg.ServerTimeout < 0},
		{"costPerHour", cfg.CostPerHour != nil && *cfg.CostPerHour < 0},
		{"resources.gpus", cfg.Resources.GPUs < 0},
	} {
		if f.bad {
			return nil, fmt.Errorf("agent: %s: must not be negative", f.name)
		}
	}
	switch cfg.Cgroups {
	case "":
		cfg.Cgroups = CgroupsAuto
	case CgroupsAuto, CgroupsV1, CgroupsV2, CgroupsOff:
	default:
		return nil, fmt.Errorf("agent: cgroups: must be auto, v1, v2 or off, got %q", cfg.Cgroups)
	}
	pids := cfg.PidsLimit
	switch {
	case pids == 0:
		pids = cgroup.DefaultPids
	case pids < 0:
		pids = 0
	}
	if cfg.OutputTailBytes > MaxOutputTailBytes {
		return nil, fmt.Errorf("agent: outputTailBytes: must be at most %d (the server keeps the last 1 MiB of an output), got %d",
			MaxOutputTailBytes, cfg.OutputTailBytes)
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&cfg.Grace, DefaultGrace)
	def(&cfg.HeartbeatEvery, DefaultHeartbeatEvery)
	def(&cfg.LeaseWait, DefaultLeaseWait)
	def(&cfg.BackoffMin, DefaultBackoffMin)
	def(&cfg.BackoffMax, DefaultBackoffMax)
	cfg.LeaseWait = min(cfg.LeaseWait, api.MaxLeaseWait)
	cfg.BackoffMax = max(cfg.BackoffMax, cfg.BackoffMin)
	if cfg.Slots == 0 {
		cfg.Slots = 1
	}
	if cfg.Prefetch > cfg.Slots {
		return nil, fmt.Errorf("agent: prefetch: must be at most the slots (%d), got %d", cfg.Slots, cfg.Prefetch)
	}
	if cfg.OutputTailBytes == 0 {
		cfg.OutputTailBytes = DefaultOutputTailBytes
	}
	if cfg.WorkDir != "" {
		if cfg.WorkDir, err = filepath.Abs(cfg.WorkDir); err != nil {
			return nil, fmt.Errorf("agent: workdir: %w", err)
		}
	}
	users, err := newUserPolicy(cfg.RunAs, cfg.AllowUsers)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if err := shareWorkDir(cfg.WorkDir, users); err != nil {
		return nil, fmt.Errorf("agent: workdir: %w", err)
	}
	var devices []model.GPUDevice
	cfg.Resources, devices = detectResources(cfg.Resources, cfg.Logger)
	log := cfg.Logger.With("worker", cfg.Name)
	a := &Agent{
		cfg: cfg,
		c:   c,
		log: log,
		reg: api.Register{Name: cfg.Name, Resources: cfg.Resources, GPUDevices: devices, Labels: cfg.Labels, Slots: cfg.Slots,
			Prefetch: cfg.Prefetch, CostPerHour: cfg.CostPerHour, Cached: cfg.Cached, Cache: cfg.Cache},
		run: runner{workDir: cfg.WorkDir, tailBytes: cfg.OutputTailBytes, grace: cfg.Grace, log: log, users: users,
			started: cfg.Started, pids: pids, gpus: cfg.Resources.GPUs},
		attempts:  map[api.Attempt]*attempt{},
		away:      context.Background(),
		leave:     func() {},
		leftovers: make(chan leftover, 4*cfg.Slots+16),
	}
	a.report = newReporter(a.sendReports, a.backoff(), log)
	if cfg.StreamEvery >= 0 {
		every := cfg.StreamEvery
		if every == 0 {
			every = DefaultStreamEvery
		}
		a.streams = newStreamer(every, a.sendOutput)
		a.run.stream = a.streams.open
	}
	return a, nil
}

// Registration is what the agent registers: its name, resources (after
// detection), labels, slots, cost and cache hints.
func (a *Agent) Registration() api.Register { return a.reg }

func (a *Agent) backoff() backoff { return backoff{min: a.cfg.BackoffMin, max: a.cfg.BackoffMax} }

// Run registers the worker and serves leases until ctx ends. Then it stops
// leasing, sends SIGTERM to every running task, gives them Grace to end
// (SIGKILL after), delivers the reports it still holds (trying for up to
// Grace, at least a few seconds) and returns. It returns an error when the
// server refuses the first registration (a wrong token, an invalid name)
// or when reports could not be delivered before returning.
func (a *Agent) Run(ctx context.Context) error {
	// A descriptor the process inherited without close-on-exec would
	// reach every task.
	if err := closeOnExecInherited(); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if a.cfg.StateDir != "" {
		sd, err := a.takeStateDir()
		if err != nil {
			return err
		}
		defer sd.close()
	}
	// Before the first registration, which says whether tasks run
	// confined; the groups go once every attempt ended.
	unconfine := a.confine()
	defer unconfine()
	if err := a.register(ctx, true); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	repCtx, repStop := context.WithCancel(context.WithoutCancel(ctx))
	repDone := make(chan struct{})
	go func() {
		defer close(repDone)
		a.report.run(repCtx)
	}()
	if a.streams != nil {
		// Until the attempts have ended (repStop): they send their last
		// output as they end.
		go a.streams.run(repCtx)
	}
	tidied := make(chan struct{})
	go func() {
		defer close(tidied)
		a.tidy()
	}()
	var loops sync.WaitGroup
	loops.Go(func() { a.heartbeats(ctx) })
	loops.Go(func() { a.leases(ctx) })
	<-ctx.Done()
	loops.Wait()

	// Before any attempt stops: the server hands the worker no new task
	// from now on, so the tasks it requeues as their attempts end here go
	// to other workers, not back to this one. The time it takes comes out
	// of the delivery of the last reports.
	noticeStart := time.Now()
	a.sayStopping(context.WithoutCancel(ctx))
	spent := time.Since(noticeStart)
	a.shutdown()
	close(a.leftovers) // every attempt ended: nothing more comes
	<-tidied
	repStop()
	<-repDone
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportFlushTime(a.cfg.Grace)-spent)
	defer cancel()
	if err := a.report.flush(flushCtx); err != nil {
		return fmt.Errorf("agent: shutting down: %w", err)
	}
	// Every report is in: tell the server the worker is gone, so it hands
	// it nothing while waiting for a heartbeat timeout. A server that does
	// not answer declares the worker lost later, as before.
	if err := a.c.Report(flushCtx, a.reg.Name, api.Reports{Leaving: true}); err != nil {
		a.log.Warn("could not tell the server the worker stopped; it will be declared lost after the heartbeat timeout", "err", err)
	}
	a.log.Info("worker stopped")
	return nil
}

// stoppingNoticeTime bounds the notice that the worker stops, sent before
// its attempts are stopped: a server that does not answer holds back the
// SIGTERM to the tasks no longer than this.
const stoppingNoticeTime = time.Second

// sayStopping tells the server the worker begins to shut down and takes no
// new task (api.Reports Stopping). A server that does not answer, or does
// not know the notice, still learns it from the reports of the stopped
// attempts and from the leaving at the end.
func (a *Agent) sayStopping(ctx context.Context) {
	nctx, cancel := context.WithTimeout(ctx, stoppingNoticeTime)
	defer cancel()
	if err := a.c.Report(nctx, a.reg.Name, api.Reports{Stopping: true}); err != nil {
		a.log.Warn("could not tell the server the worker is shutting down", "err", err)
	}
}

// ShutdownTime is the longest Run takes to return once its context ends,
// for an agent whose Config.Grace is grace (zero: DefaultGrace): its
// running tasks get grace between SIGTERM and SIGKILL, then it delivers the
// reports it holds and tells the server it leaves, for up to
// max(grace, 3s). Whatever stops the agent must wait longer (Kubernetes'
// terminationGracePeriodSeconds, systemd's TimeoutStopSec), or the last
// reports are lost and the server learns how those tasks ended only when
// it declares the worker lost.
func ShutdownTime(grace time.Duration) time.Duration {
	if grace == 0 {
		grace = DefaultGrace
	}
	return grace + reportFlushTime(grace)
}

// reportFlushTime bounds the delivery of the last reports at shutdown.
func reportFlushTime(grace time.Duration) time.Duration { return max(grace, 3*time.Second) }

// takeStateDir locks the state directory, kills what the agent's previous
// run left running, and has the runner record the groups of the tasks it
// starts. It runs before the first registration: the server requeues what
// the previous run held, and the retries must not run beside its orphans.
func (a *Agent) takeStateDir() (*stateDir, error) {
	sd, err := openStateDir(a.cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	killed, err := sd.killLeftovers()
	for _, g := range killed {
		a.log.Warn("killed a task the agent's previous run left running", append(attemptAttrs(api.Attempt{Job: g.Job, Task: g.Task, Attempt: g.Attempt}),
			"processGroup", g.PGID)...)
	}
	if err != nil {
		sd.close()
		return nil, fmt.Errorf("agent: tasks left by the previous run: %w", err)
	}
	a.run.groups = sd.groups
	return sd, nil
}

// running lists the attempts the worker holds (running or queued for a
// slot) and those whose reports the server has not taken yet, sorted, for
// a registration.
func (a *Agent) running() []api.Attempt {
	held := a.report.held()
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]api.Attempt, 0, len(a.attempts)+len(held))
	for k := range a.attempts {
		out = append(out, k)
	}
	for _, k := range held {
		if _, dup := a.attempts[k]; !dup {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Job != y.Job {
			return x.Job < y.Job
		}
		if x.Task != y.Task {
			return x.Task < y.Task
		}
		return x.Attempt < y.Attempt
	})
	return out
}

// register registers the worker, retrying with backoff until the server
// takes it or ctx ends. On the first registration (first=true) an answer
// retrying cannot fix ends it with an error; later, the agent keeps its
// tasks running and keeps trying.
func (a *Agent) register(ctx context.Context, first bool) error {
	bo := a.backoff()
	for tries := 0; ; tries++ {
		reg := a.reg
		reg.Running = a.running()
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		_, err := a.c.Register(rctx, reg)
		cancel()
		if err == nil {
			server := a.c.BaseURL()
			a.regServer.Store(&server)
			a.gen.Add(1)
			a.log.Info("registered", "server", a.c.BaseURL(), "running", len(reg.Running),
				"cpu", fmt.Sprintf("%dm", a.reg.Resources.CPU), "memoryMiB", int64(a.reg.Resources.Memory),
				"gpus", a.reg.Resources.GPUs, "slots", a.reg.Slots)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if refusesField(err, "unconfined") && a.reg.Unconfined != "" {
			// A server older than the field: it learns nothing of it,
			// the agent's log says it.
			a.log.Warn("the server does not know unconfined workers; registering without saying so", "err", err)
			a.reg.Unconfined = ""
			continue
		}
		if refusesPrefetch(err) && a.reg.Prefetch > 0 {
			// A server older than prefetching knows no such field: run
			// without it rather than not at all.
			a.log.Warn("the server does not know prefetching; registering without it", "prefetch", a.reg.Prefetch, "err", err)
			a.reg.Prefetch = 0
			continue
		}
		if refusesField(err, "gpuDevices") && len(a.reg.GPUDevices) > 0 {
			// A server older than GPU devices: it hands out GPU counts,
			// and tasks get no devices of their own.
			a.log.Warn("the server does not know GPU devices; registering without them: tasks will see every GPU", "err", err)
			a.reg.GPUDevices = nil
			continue
		}
		if first && !client.Retryable(err) {
			return fmt.Errorf("agent: registering worker %q with %s: %w", a.reg.Name, a.c.BaseURL(), err)
		}
		d := retryIn(&bo, err)
		level := slog.LevelDebug
		if tries == 0 {
			level = slog.LevelWarn
		}
		a.log.Log(ctx, level, "could not register; retrying with backoff", "in", d, "err", err)
		if !sleep(ctx, d) {
			return ctx.Err()
		}
	}
}

// refusesPrefetch reports whether a registration was refused for its
// prefetch field (a server that predates it names it as unknown).
func refusesPrefetch(err error) bool { return refusesField(err, "prefetch") }

// refusesField reports whether a request was refused for its field
// (a server that predates it names it as unknown).
func refusesField(err error, field string) bool {
	var ce *client.Error
	return errors.As(err, &ce) && ce.Status == 400 && ce.Field == field
}

// generation returns the number of successful registrations so far.
func (a *Agent) generation() uint64 { return a.gen.Load() }

// reregister registers again after the server said it does not know the
// worker (it restarted, or dropped the worker as dead). seen is the
// generation under which the failing request was made: if someone
// registered since, there is nothing to do.
func (a *Agent) reregister(ctx context.Context, seen uint64) {
	a.regMu.Lock()
	defer a.regMu.Unlock()
	if gen := a.generation(); gen != seen {
		return
	}
	a.log.Warn("the server does not know this worker; registering again")
	_ = a.register(ctx, false)
}

// followServer registers again, at once, when the client has moved to
// another server of the cluster since the last registration (the leader
// changed): the new leader learns what the worker runs now, and keeps
// those tasks, instead of waiting for a heartbeat to find the worker
// unknown. The registration carries the running attempts, as after a
// server restart.
func (a *Agent) followServer(ctx context.Context) {
	reg := a.regServer.Load()
	if reg == nil || *reg == a.c.BaseURL() {
		return
	}
	gen := a.generation()
	a.regMu.Lock()
	defer a.regMu.Unlock()
	if a.generation() != gen {
		return // registered meanwhile
	}
	a.log.Info("the server changed; registering there", "from", *reg, "to", a.c.BaseURL())
	_ = a.register(ctx, false)
}

// heartbeats tells the server the worker is alive every HeartbeatEvery.
// With several servers it is also the check that the server answers:
// every serverCheckEvery at least, within ServerTimeout; when it does not,
// the client moves to the next server, and the agent ends what it has out
// to the one it left and registers with the next.
func (a *Agent) heartbeats(ctx context.Context) {
	every, timeout := a.cfg.HeartbeatEvery, requestTimeout
	if a.several() {
		every, timeout = min(every, serverCheckEvery), a.cfg.ServerTimeout
	}
	t := time.NewTicker(every)
	defer t.Stop()
	down := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		gen := a.generation()
		server := a.c.BaseURL()
		rctx, cancel := context.WithTimeout(ctx, timeout)
		err := a.c.HeartbeatCache(rctx, a.reg.Name, a.cfg.Cache)
		cancel()
		if err != nil && a.c.BaseURL() != server && ctx.Err() == nil {
			a.log.Warn("the server failed or did not answer in time; leaving it for the next", "server", server, "next", a.c.BaseURL(), "err", err)
			a.leftServer()
		}
		a.followServer(ctx)
		switch {
		case err == nil:
			if down {
				a.log.Info("server reachable again")
			}
			down = false
		case ctx.Err() != nil:
			return
		case client.IsNotFound(err):
			a.reregister(ctx, gen)
		case !down:
			a.log.Warn("heartbeat failed; tasks keep running", "err", err)
			down = true
		}
	}
}

// leases keeps a lease request open with the server, so that assignments
// and stop orders arrive as soon as they are decided. It polls even with
// every slot busy: a stop order (a preemption) is exactly what a full
// worker waits for. How many assignments it gets is the server's call,
// which knows the worker's slots; the agent starts at most Slots at once
// and queues the rest (e.g. the one that preempts a task still in its
// grace period).
func (a *Agent) leases(ctx context.Context) {
	bo := a.backoff()
	// A server that answers at once with nothing (not long-polling) is
	// asked again no more than this often.
	minGap := min(time.Second, a.cfg.LeaseWait)
	failing := false
	for ctx.Err() == nil {
		// After a lease from a new server is applied, not before: the
		// registration then lists what it gave.
		a.followServer(ctx)
		start := time.Now()
		gen := a.generation()
		// What it holds confirms that the previous answer arrived: the
		// server requeues what it sent and the worker never got.
		holds := a.running()
		server := a.c.BaseURL()
		pctx, cancel := a.onServer(ctx, 0)
		l, err := a.c.Lease(pctx, a.reg.Name, api.LeaseRequest{Wait: model.Duration(a.cfg.LeaseWait), Running: &holds})
		cancel()
		a.stats.leases.Add(1)
		switch {
		case err == nil:
			bo.reset()
			failing = false
		case ctx.Err() != nil:
			return
		case client.IsNotFound(err):
			a.reregister(ctx, gen)
			continue
		case a.c.BaseURL() != server:
			// The client left a server that did not answer for another
			// of the cluster: try that one now, not after the backoff.
			a.log.Warn("lease failed; trying the next server", "server", a.c.BaseURL(), "err", err)
			continue
		default:
			d := retryIn(&bo, err)
			level := slog.LevelDebug
			if !failing {
				level = slog.LevelWarn // once per outage, not once per retry
			}
			a.log.Log(ctx, level, "lease failed; retrying with backoff", "in", d, "err", err)
			failing = true
			sleep(ctx, d)
			continue
		}
		if len(l.Assignments) == 0 && len(l.Stops) == 0 {
			sleep(ctx, minGap-time.Since(start))
			continue
		}
		a.apply(l)
	}
}

// apply carries out a lease: stop orders first, so a slot they free can
// go to an assignment of the same lease.
func (a *Agent) apply(l api.Lease) {
	for _, s := range l.Stops {
		a.stop(s)
	}
	now := time.Now()
	for _, as := range l.Assignments {
		a.accept(as, now)
	}
}

// accept takes an assignment that arrived at now: it starts at once if a
// slot is free and waits in the local queue otherwise.
func (a *Agent) accept(as api.Assignment, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, dup := a.attempts[as.Attempt]; dup {
		a.log.Debug("assignment already running here", attemptAttrs(as.Attempt)...)
		return
	}
	if a.closing {
		for _, m := range membersOf(as) {
			rep := reportOf(m)
			rep.Error = "the worker is shutting down"
			a.report.add(rep)
		}
		return
	}
	at := a.newUnitLocked(as) // one attempt, or a merged batch (batch.go)
	for _, m := range unitOf(at) {
		m.accepted = now
		a.stats.accepted.Add(1)
	}
	a.queue = append(a.queue, at)
	a.startQueuedLocked()
}

// startQueuedLocked gives free slots to queued attempts, oldest first.
func (a *Agent) startQueuedLocked() {
	for !a.closing && a.busy < a.cfg.Slots && len(a.queue) > 0 {
		at := a.queue[0]
		a.queue = a.queue[1:]
		at.started, at.slotted = true, time.Now()
		for _, m := range at.batch {
			m.started, m.slotted = true, at.slotted // the batch holds the slot from now
		}
		a.busy++
		a.wg.Go(func() { a.execute(at) })
	}
}

// execute runs one attempt and queues its report. The report is queued
// before the attempt leaves the running set, so a registration made in
// between lists it as running and the server waits for the report.
func (a *Agent) execute(at *attempt) {
	if at.batch != nil {
		a.runBatch(at.batch)
		return
	}
	rep, left := a.runLogged(at)
	a.queueReport(at, rep)
	a.leftovers <- left
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.attempts, at.as.Attempt)
	a.busy--
	a.startQueuedLocked()
}

// queueReport queues the report of an attempt that ran, and counts its
// times.
func (a *Agent) queueReport(at *attempt, rep api.Report) {
	a.report.add(rep)
	if !at.began.IsZero() {
		a.stats.ran(at, time.Now())
	}
}

// tidy cleans what attempts left, one after another, until the agent
// closes the channel. Once an attempt's report is queued, its directory
// is no longer needed: the report need not wait for its removal, and
// removals made one at a time do not contend with each other (nor with
// the next attempts' directories) for the lock of the directory they are
// in, which on a busy worker costs more than the removals themselves.
func (a *Agent) tidy() {
	for left := range a.leftovers {
		a.run.clean(left)
	}
}

// runLogged runs one attempt, logging its start and end.
func (a *Agent) runLogged(at *attempt) (api.Report, leftover) {
	log := a.log.With(attemptAttrs(at.as.Attempt)...)
	if at.batchHead != "" {
		log = log.With("batch", at.batchHead)
	}
	log.Info("task started")
	rep, left := a.run.run(at)
	log.Info("task ended", "exitCode", rep.ExitCode, "error", rep.Error, "stopped", rep.Stopped)
	return rep, left
}

// stop carries out a stop order. An attempt still queued here ends without
// running; one that is not here (it already ended, its report is on the
// way) needs nothing. A member of a merged batch that has not run yet
// keeps its place: it is reported as stopped when the batch reaches it.
func (a *Agent) stop(s api.StopOrder) {
	cause := "stopped by the server"
	if s.Reason.Code != "" {
		cause += ": " + s.Reason.Code
	}
	if s.Reason.Message != "" {
		cause += ": " + s.Reason.Message
	}
	a.mu.Lock()
	at, ok := a.attempts[s.Attempt]
	// A batch member is terminated even before it runs: that records the
	// cause, and the batch reports it when its turn comes.
	terminate := ok && (at.started || at.batchHead != "")
	if ok && !terminate {
		delete(a.attempts, s.Attempt)
		for i, q := range a.queue {
			if q == at {
				a.queue = append(a.queue[:i], a.queue[i+1:]...)
				break
			}
		}
		rep := reportOf(at.as)
		rep.Stopped, rep.Error = true, cause+" before it started"
		a.report.add(rep)
	}
	a.mu.Unlock()
	switch {
	case !ok:
		a.log.Debug("stop order for an attempt not running here", attemptAttrs(s.Attempt)...)
	case terminate:
		grace := time.Duration(s.Grace)
		if grace <= 0 {
			grace = a.cfg.Grace
		}
		a.log.Info("stopping task", append(attemptAttrs(s.Attempt), "reason", s.Reason.Code, "grace", grace)...)
		at.terminate(cause, true, grace)
	}
}

// shutdown ends every attempt: queued ones are reported as not run,
// running ones get SIGTERM and Grace before SIGKILL. It returns when all
// processes ended and their reports are queued.
func (a *Agent) shutdown() {
	a.mu.Lock()
	a.closing = true
	queued := a.queue
	a.queue = nil
	var started []*attempt
	for k, at := range a.attempts {
		if at.started {
			started = append(started, at)
		} else {
			delete(a.attempts, k)
		}
	}
	a.mu.Unlock()
	for _, at := range queued {
		for _, m := range unitOf(at) {
			rep := reportOf(m.as)
			rep.Stopped, rep.Error = true, "the worker shut down before the attempt started"
			a.report.add(rep)
		}
	}
	if len(started) > 0 {
		a.log.Info("shutting down: stopping running tasks", "tasks", len(started), "grace", a.cfg.Grace)
	}
	for _, at := range started {
		at.terminate("the worker shut down", true, a.cfg.Grace)
	}
	a.wg.Wait()
}

// sendReports is the reporter's delivery: one POST of a batch. A server
// that forgot the worker gets a registration first (the batch is retried
// after it); a batch refused for its content is dropped.
func (a *Agent) sendReports(ctx context.Context, b []api.Report) error {
	if a.noUsage.Load() {
		b = withoutUsage(b)
	}
	gen := a.generation()
	rctx, cancel := a.onServer(ctx, requestTimeout)
	err := a.c.Report(rctx, a.reg.Name, api.Reports{Reports: b})
	cancel()
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return err
	case client.IsNotFound(err):
		a.reregister(ctx, gen)
		return err
	case refusesUsage(err) && !a.noUsage.Load():
		// A server older than the usage fields: the batch goes again
		// without them, and so do the next.
		a.log.Warn("the server does not know the attempts' CPU time and peak memory; reporting without them", "err", err)
		a.noUsage.Store(true)
		return err
	case client.IsInvalid(err), client.IsTooLarge(err), client.IsForbidden(err):
		// Forbidden: a report the server will never take (a secret it
		// does not know); sent alone, the others of the batch go through.
		return fmt.Errorf("%w: %w", errRejected, err)
	default:
		return err
	}
}

// refusesUsage reports whether reports were refused for their usage
// fields (a server that predates them names one as unknown).
func refusesUsage(err error) bool {
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != 400 {
		return false
	}
	for _, f := range []string{"cpuSeconds", "peakMemory"} {
		if ce.Field == f || strings.HasSuffix(ce.Field, "."+f) {
			return true
		}
	}
	return false
}

// withoutUsage is b without the usage fields.
func withoutUsage(b []api.Report) []api.Report {
	out := make([]api.Report, len(b))
	for i, r := range b {
		r.CPUSeconds, r.PeakMemory = 0, 0
		out[i] = r
	}
	return out
}

// sendOutput delivers chunks of running attempts' output (stream.go).
func (a *Agent) sendOutput(ctx context.Context, chunks []api.OutputChunk) error {
	rctx, cancel := a.onServer(ctx, requestTimeout)
	defer cancel()
	return a.c.Output(rctx, a.reg.Name, api.OutputChunks{Chunks: chunks})
}

// attemptAttrs are the log attributes naming an attempt.
func attemptAttrs(x api.Attempt) []any {
	return []any{"job", x.Job, "task", x.Task, "attempt", x.Attempt}
}

// several reports whether the agent was given several servers (the
// replicas of a cluster).
func (a *Agent) several() bool { return len(a.c.Servers()) > 1 }

// onServer returns a context for a request to the server the agent uses
// now: it ends with ctx, after timeout (0: none of its own), or when the
// agent leaves that server (leftServer).
func (a *Agent) onServer(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	a.awayMu.Lock()
	away := a.away
	a.awayMu.Unlock()
	var rctx context.Context
	var cancel context.CancelFunc
	if timeout > 0 {
		rctx, cancel = context.WithTimeout(ctx, timeout)
	} else {
		rctx, cancel = context.WithCancel(ctx)
	}
	stop := context.AfterFunc(away, cancel)
	return rctx, func() { stop(); cancel() }
}

// leftServer ends the requests out to the server the agent left: a lease
// long poll or a report held by a frozen server would wait for their
// deadlines, while the next server can take them now. Each is sent again
// there (the worker protocol's requests may be sent twice).
func (a *Agent) leftServer() {
	a.awayMu.Lock()
	defer a.awayMu.Unlock()
	a.leave()
	a.away, a.leave = context.WithCancel(context.Background())
}

// electionPause is the wait before asking again when no server of a
// round led (an election under way): a standby leads within the leader
// timeout, and the worker should reach it soon after, not after a
// backoff grown meanwhile.
const electionPause = 200 * time.Millisecond

// retryIn is the wait before retrying a request that failed with err: a
// short one while an election is under way, else the backoff's next.
func retryIn(bo *backoff, err error) time.Duration {
	if client.IsNotLeader(err) {
		return electionPause/2 + rand.N(electionPause/2+1)
	}
	return bo.after(err)
}
