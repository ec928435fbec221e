package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/allot-sched/allot/internal/agent"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/postgres"
)

// benchConfig is what `allot bench` runs.
type benchConfig struct {
	Tasks      int `json:"tasks"`
	Slots      int `json:"slots"`
	Workers    int `json:"workers"`
	JobSize    int `json:"jobSize"`
	Submitters int `json:"submitters"`
	// Bulk is how many jobs each submission carries: 1 sends one job per
	// POST /v1/jobs, more sends them as one NDJSON POST /v1/jobs/bulk.
	Bulk int `json:"bulk"`
	// Backlog pending jobs that no worker can run are submitted before
	// the throughput phase, so that it runs against a server that holds
	// them.
	Backlog int `json:"backlog"`
	// LatencyJobs single-task jobs are submitted one every LatencyEvery
	// while the slots are idle, to measure submit-to-start without a queue.
	LatencyJobs  int           `json:"latencyJobs"`
	LatencyEvery time.Duration `json:"latencyEvery"`
	Auth         bool          `json:"auth"`
	Timeout      time.Duration `json:"-"`
	// Store is the PostgreSQL URL to measure on (a new schema of it, which
	// the run drops at its end); empty for SQLite in the data directory.
	Store string `json:"-"`
	// Exec, when set, is the command every task runs (no shell), on real
	// agents instead of no-op workers (bench_exec.go).
	Exec []string `json:"exec,omitempty"`
	// Prefetch is what each real agent takes beyond its slots
	// (agent.Config.Prefetch).
	Prefetch int `json:"prefetch,omitempty"`
	// Cgroups is how the real agents confine attempts
	// (agent.Config.Cgroups).
	Cgroups string `json:"cgroups,omitempty"`
}

// benchResult is what `allot bench` prints; -o json prints it as is.
type benchResult struct {
	Config     benchConfig      `json:"config"`
	Machine    benchMachine     `json:"machine"`
	Throughput benchThroughput  `json:"throughput"`
	Latency    benchLatency     `json:"latency"`
	Totals     map[string]int64 `json:"totals"`
	// Agents is where the real agents' time went (--exec only).
	Agents *benchAgentFigures `json:"agents,omitempty"`
}

type benchMachine struct {
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	Store     string `json:"store"`
}

type benchThroughput struct {
	Seconds       float64 `json:"seconds"`        // first submission to last completion
	SubmitSeconds float64 `json:"submitSeconds"`  // first submission to last acknowledgement
	TasksPerSec   float64 `json:"tasksPerSecond"` // completed
	JobsPerSec    float64 `json:"jobsPerSecond"`  // completed
	// CPUPerTask is the CPU time the whole process (server, workers and
	// submitters: they share the machine's cores) used in the phase,
	// per task, in microseconds; 0 where it is not measured.
	CPUPerTask float64 `json:"cpuPerTaskUs"`
	// PeakMemory is the process's resident high-water mark at the end of
	// the phase, in bytes; 0 where it is not measured.
	PeakMemory int64 `json:"peakMemoryBytes,omitempty"`
	// Submit is how long a submission took, from sending POST /v1/jobs
	// to its answer (the job is durable then).
	Submit benchPercentiles `json:"submit"`
	// Wait is submit-to-start with a queue: most tasks wait for a slot.
	Wait benchPercentiles `json:"wait"`
}

type benchLatency struct {
	Jobs int `json:"jobs"`
	// SubmitToStart runs from the client sending the job to the worker
	// receiving its task: the API, the loop's commit and the lease.
	SubmitToStart benchPercentiles `json:"submitToStart"`
}

type benchPercentiles struct {
	P50 float64 `json:"p50Ms"`
	P95 float64 `json:"p95Ms"`
	P99 float64 `json:"p99Ms"`
	Max float64 `json:"maxMs"`
}

func newBenchCmd() *cobra.Command {
	cfg := benchConfig{}
	var output, dataDir, cpuProfile, execCmd string
	var noAuth bool
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the control plane end to end: throughput and submit-to-start latency",
		Long: `bench starts a server in this process on an embedded, durable store in a
temporary directory (or --data-dir), and --workers no-op workers that talk to
it over loopback HTTP exactly as agents do: each keeps a lease request open
and reports every task it gets as succeeded, all in one request.

--store postgres://... (env ALLOT_STORE) measures on PostgreSQL instead: the
server keeps its state in a new schema of that database, which the run drops
at its end, so a run starts empty and leaves the database as it was.

It then runs two phases:
  throughput  --tasks no-op tasks in jobs of --job-size, submitted by
              --submitters clients at once, each sending one job per
              POST /v1/jobs (or --bulk jobs per POST /v1/jobs/bulk) and the
              next once it is answered; prints tasks
              (and jobs) completed per second (first submission to last
              completion), how long a submission took, and how long tasks
              waited
  latency     --latency-jobs single-task jobs, one every --latency-every, while
              every slot is free; prints submit-to-start percentiles, from the
              client sending the job to the worker receiving its task

With --exec, the workers are real agents (the code of allot worker, in this
process, each with its state directory and an Info-level log in the data
directory) and every task runs the command given, as a process: --exec true
measures how many short processes --workers agents with --slots slots start
and report per second, and prints where a task's time went on the agents.

With --backlog N, N one-task jobs that no worker can run (they wait in a queue
"backlog" whose pool has no bench worker) are submitted in bulk first, so that
the throughput phase runs against a server holding N pending jobs.

Two shapes matter: the default, big jobs from a few clients, and many small
jobs from many clients, which is how most batch users submit:
  allot bench --tasks 20000 --job-size 1 --submitters 64

Authentication is on, as in production: the clients use the admin token the
server creates in its data directory. --no-auth measures without it.`,
		Example: `  allot bench
  allot bench --tasks 20000 --job-size 1 --submitters 64
  allot bench --tasks 20000 --job-size 1 --submitters 64 --backlog 100000
  allot bench --tasks 100000 --job-size 1 --submitters 64 --bulk 100
  allot bench --tasks 100000 --slots 100 --job-size 1000 -o json
  allot bench --tasks 20000 --cpuprofile bench.pprof
  allot bench --store 'postgres://allot@127.0.0.1:5432/allot?sslmode=disable'
  allot bench --exec true --workers 1 --slots 16 --tasks 20000 --latency-jobs 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("-o: unknown output %q (known: table, json)", output)
			}
			for _, f := range []struct {
				name string
				v    int
			}{{"--tasks", cfg.Tasks}, {"--slots", cfg.Slots}, {"--workers", cfg.Workers}, {"--job-size", cfg.JobSize}, {"--submitters", cfg.Submitters}, {"--bulk", cfg.Bulk}} {
				if f.v < 1 {
					return fmt.Errorf("%s: must be at least 1", f.name)
				}
			}
			if cfg.Backlog < 0 {
				return fmt.Errorf("--backlog: must not be negative")
			}
			if cfg.Bulk > api.MaxBulkJobs {
				return fmt.Errorf("--bulk: at most %d jobs per request", api.MaxBulkJobs)
			}
			if cfg.JobSize > spec.MaxTasksPerJob {
				return fmt.Errorf("--job-size: at most %d tasks per job", spec.MaxTasksPerJob)
			}
			if cfg.Bulk*cfg.JobSize > spec.MaxTasksPerJob {
				return fmt.Errorf("--bulk: %d jobs of %d tasks is more than the %d tasks one bulk request may create", cfg.Bulk, cfg.JobSize, spec.MaxTasksPerJob)
			}
			if cfg.Workers > cfg.Slots {
				return fmt.Errorf("--workers: %d workers cannot share %d slots", cfg.Workers, cfg.Slots)
			}
			cfg.Auth = !noAuth
			var scfg spec.ServerConfig
			storeField, err := applyStore(&scfg, cmd.Flags().Changed("store"), cfg.Store, os.LookupEnv)
			if err != nil {
				return err
			}
			cfg.Store = scfg.Server.Store
			cfg.Exec = strings.Fields(execCmd)
			if cfg.Prefetch != 0 && (len(cfg.Exec) == 0 || cfg.Prefetch < 0 || cfg.Prefetch > cfg.Slots/cfg.Workers) {
				return fmt.Errorf("--prefetch: only with --exec, from 0 to the slots of each agent (%d)", cfg.Slots/cfg.Workers)
			}
			if cmd.Flags().Changed("cgroups") && len(cfg.Exec) == 0 {
				return fmt.Errorf("--cgroups: only with --exec (the no-op workers run no process)")
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			if dataDir == "" {
				dir, err := os.MkdirTemp("", "allot-bench-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				dataDir = dir
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), cfg.Timeout)
			defer cancel()
			if cfg.Store != "" {
				schemaURL, drop, err := postgres.TempSchema(ctx, cfg.Store, "allot_bench")
				if err != nil {
					return fmt.Errorf("%s: %w", storeField, err)
				}
				defer func() {
					if err := drop(context.WithoutCancel(ctx)); err != nil {
						fmt.Fprintf(cmd.ErrOrStderr(), "allot bench: dropping the bench's schema: %v\n", err)
					}
				}()
				cfg.Store = schemaURL
			}
			res, err := runBench(ctx, cfg, dataDir, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			printBench(out, res)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Tasks, "tasks", 100_000, "no-op tasks of the throughput phase")
	f.IntVar(&cfg.Slots, "slots", 100, "worker slots in all, shared evenly by --workers")
	f.IntVar(&cfg.Workers, "workers", 10, "in-process workers")
	f.IntVar(&cfg.JobSize, "job-size", 1000, "tasks per job in the throughput phase")
	f.IntVar(&cfg.Submitters, "submitters", 4, "clients submitting jobs at once in the throughput phase")
	f.IntVar(&cfg.Bulk, "bulk", 1, "jobs per request in the throughput phase (more than 1: NDJSON to POST /v1/jobs/bulk)")
	f.IntVar(&cfg.Backlog, "backlog", 0, "pending jobs no worker can run, submitted before the throughput phase")
	f.IntVar(&cfg.LatencyJobs, "latency-jobs", 200, "single-task jobs of the latency phase (0: skip it)")
	f.DurationVar(&cfg.LatencyEvery, "latency-every", 20*time.Millisecond, "interval between submissions in the latency phase")
	f.DurationVar(&cfg.Timeout, "timeout", 10*time.Minute, "give up after this long")
	f.BoolVar(&noAuth, "no-auth", false, "run the server without authentication")
	f.StringVar(&dataDir, "data-dir", "", "directory of the embedded database (default: a temporary directory, removed at exit)")
	f.StringVar(&cfg.Store, "store", "", "PostgreSQL URL to measure on, in a new schema dropped at exit (env ALLOT_STORE)")
	f.StringVar(&execCmd, "exec", "", "run every task as this command (split on spaces, no shell) on --workers real agents, not no-op workers")
	f.IntVar(&cfg.Prefetch, "prefetch", 0, "with --exec: tasks each agent takes beyond its slots (allot worker --prefetch)")
	f.StringVar(&cfg.Cgroups, "cgroups", agent.CgroupsAuto, "with --exec: how the agents confine attempts (allot worker --cgroups): auto, v1, v2 or off")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (server and workers) to this file")
	f.StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

// benchRun is the state shared by the workers, the submitters and the
// progress display.
type benchRun struct {
	cfg  benchConfig
	c    *client.Client
	done atomic.Int64 // tasks reported and acknowledged

	mu        sync.Mutex
	submitted map[string]time.Time // job → when its submission was sent
	answered  map[string]time.Time // job → when its submission was answered
	received  map[string][]time.Time
}

func runBench(ctx context.Context, cfg benchConfig, dataDir string, progress io.Writer) (*benchResult, error) {
	level := slog.LevelWarn
	if os.Getenv("ALLOT_DEBUG") != "" {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	srvCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	var scfg spec.ServerConfig
	scfg.Server.Listen, scfg.Server.DataDir, scfg.Server.Store = "127.0.0.1:0", dataDir, cfg.Store
	// Every worker and submitter of the bench connects from this machine:
	// one address, which must not be held to one client's share.
	scfg.Server.Limits.MaxConnectionsPerAddress = math.MaxInt32
	// The bench is the server's only load: what it submits may all be
	// live at once, from one submitter.
	if n := cfg.Tasks + cfg.Backlog; n > spec.DefaultMaxLiveTasksPerSubmitter {
		scfg.Server.Limits.MaxLiveTasks = max(n, spec.DefaultMaxLiveTasks)
		scfg.Server.Limits.MaxLiveTasksPerSubmitter = n
	}
	if cfg.Backlog > 0 {
		// The backlog waits in a queue of its own whose pool no bench
		// worker is in: pending, as jobs wait behind a busy cluster,
		// without standing in front of the measured jobs.
		scfg.Queues = []spec.Queue{{Name: spec.DefaultQueue}, {Name: benchBacklogQueue, Pool: map[string]string{"bench": "backlog"}}}
	}
	srv, err := startServerWith(srvCtx, scfg, log, serverOptions{auth: cfg.Auth})
	if err != nil {
		stopServer()
		return nil, err
	}
	defer func() {
		stopServer()
		_ = srv.Wait()
	}()
	token := ""
	if cfg.Auth {
		raw, err := os.ReadFile(filepath.Join(dataDir, auth.AdminTokenFile))
		if err != nil {
			return nil, fmt.Errorf("reading the admin token: %w", err)
		}
		token = strings.TrimSpace(string(raw))
	}
	// One connection per worker and submitter, kept alive: the default
	// keeps only two idle connections per host.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = cfg.Workers + cfg.Submitters + 4
	c, err := client.New(srv.URL, client.WithToken(token), client.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		return nil, err
	}
	b := &benchRun{cfg: cfg, c: c, submitted: map[string]time.Time{}, answered: map[string]time.Time{}, received: map[string][]time.Time{}}

	// The backlog goes in before the workers register: it takes a while,
	// and idle workers need not wait through it.
	if cfg.Backlog > 0 {
		if err := b.submitBacklog(ctx, cfg.Backlog, progress); err != nil {
			return nil, fmt.Errorf("backlog: %w", err)
		}
	}

	wctx, stopWorkers := context.WithCancel(ctx)
	var workers sync.WaitGroup
	werr := make(chan error, cfg.Workers)
	var agents *benchAgents
	if len(cfg.Exec) > 0 {
		if agents, err = b.startAgents(ctx, srv.URL, dataDir, werr); err != nil {
			stopWorkers()
			return nil, err
		}
		defer agents.close()
	}
	noops := cfg.Workers
	if agents != nil {
		noops = 0
	}
	for i := range noops {
		slots := cfg.Slots / cfg.Workers
		if i < cfg.Slots%cfg.Workers {
			slots++
		}
		name := fmt.Sprintf("bench-%03d", i)
		if _, err := c.Register(ctx, api.Register{Name: name, Resources: spec.Resources{CPU: 1000 * spec.CPU(slots), Memory: 1024 * spec.Memory(slots)}, Slots: slots}); err != nil {
			stopWorkers()
			return nil, fmt.Errorf("registering %s: %w", name, err)
		}
		workers.Go(func() {
			if err := b.work(wctx, name); err != nil {
				werr <- err
			}
		})
	}
	defer func() {
		stopWorkers()
		workers.Wait()
	}()

	res := &benchResult{Config: cfg, Totals: map[string]int64{},
		Machine: benchMachine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH,
			Store: "SQLite (WAL, synchronous=FULL) in " + dataDir}}
	if cfg.Store != "" {
		res.Machine.Store = "PostgreSQL at " + postgres.Redact(cfg.Store)
	}

	// Throughput: everything at once, from several clients.
	jobs := (cfg.Tasks + cfg.JobSize - 1) / cfg.JobSize
	start, cpu0 := time.Now(), processCPU()
	stopBar := b.progress(progress, "throughput", int64(cfg.Tasks), start)
	var submitted time.Duration
	err = b.submitAll(ctx, jobs, func(i int) (string, int) {
		return fmt.Sprintf("bench-t-%06d", i), min(cfg.JobSize, cfg.Tasks-i*cfg.JobSize)
	}, cfg.Submitters, cfg.Bulk)
	submitted = time.Since(start)
	if err == nil {
		err = b.waitDone(ctx, int64(cfg.Tasks), werr)
	}
	elapsed, cpu := time.Since(start), processCPU()-cpu0
	stopBar()
	if err != nil {
		return nil, fmt.Errorf("throughput phase: %w", err)
	}
	res.Throughput = benchThroughput{Seconds: elapsed.Seconds(), SubmitSeconds: submitted.Seconds(),
		TasksPerSec: float64(cfg.Tasks) / elapsed.Seconds(), JobsPerSec: float64(jobs) / elapsed.Seconds(),
		CPUPerTask: round2(float64(cpu) / float64(time.Microsecond) / float64(cfg.Tasks)), PeakMemory: peakMemory(),
		Submit: b.submitPercentiles("bench-t-"), Wait: b.percentiles("bench-t-")}
	if agents != nil {
		res.Agents = agents.figures(agents.stats(), elapsed)
	}

	// Latency: one small job at a time on idle slots.
	if cfg.LatencyJobs > 0 {
		base := b.done.Load()
		start := time.Now()
		stopBar := b.progress(progress, "latency", int64(cfg.LatencyJobs), start)
		tick := time.NewTicker(cfg.LatencyEvery)
		for i := range cfg.LatencyJobs {
			if err := b.submit(ctx, benchJob{fmt.Sprintf("bench-l-%06d", i), 1}); err != nil {
				tick.Stop()
				stopBar()
				return nil, fmt.Errorf("latency phase: %w", err)
			}
			<-tick.C
		}
		tick.Stop()
		err := b.waitDone(ctx, base+int64(cfg.LatencyJobs), werr)
		stopBar()
		if err != nil {
			return nil, fmt.Errorf("latency phase: %w", err)
		}
		res.Latency = benchLatency{Jobs: cfg.LatencyJobs, SubmitToStart: b.percentiles("bench-l-")}
	}

	// Every acknowledged report must have ended its task: a job the
	// server does not count as succeeded means a report was ignored. (The
	// backlog's jobs are pending by design.)
	unfinished := "pending,running,failed,cancelled"
	if cfg.Backlog > 0 {
		unfinished = "running,failed,cancelled"
	}
	left, err := c.Jobs(ctx, client.JobFilter{State: unfinished, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(left.Jobs) > 0 {
		return nil, fmt.Errorf("job %s is %s after every task was reported succeeded", left.Jobs[0].ID, left.Jobs[0].State)
	}
	res.Totals["tasks"] = b.done.Load()
	res.Totals["jobs"] = int64(jobs + cfg.LatencyJobs)
	res.Totals["backlog"] = int64(cfg.Backlog)
	return res, nil
}

// work is one no-op worker: lease, report every assignment as succeeded in
// one request, and again.
func (b *benchRun) work(ctx context.Context, name string) error {
	fails := 0
	// It reports everything it gets before asking again, so it holds
	// nothing when it asks; saying so lets the server check, as it does
	// for agents, that the previous answer arrived.
	holds := []api.Attempt{}
	for ctx.Err() == nil {
		l, err := b.c.Lease(ctx, name, api.LeaseRequest{Wait: spec.Duration(30 * time.Second), Running: &holds})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if fails++; fails > 50 {
				return fmt.Errorf("worker %s: lease: %w", name, err)
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if len(l.Assignments) == 0 {
			continue
		}
		now := time.Now()
		reports := make([]api.Report, len(l.Assignments))
		for i, a := range l.Assignments {
			reports[i] = api.Report{Attempt: a.Attempt, Secret: a.Secret}
		}
		b.mu.Lock()
		for _, a := range l.Assignments {
			b.received[a.Job] = append(b.received[a.Job], now)
		}
		b.mu.Unlock()
		for {
			err := b.c.Report(ctx, name, api.Reports{Reports: reports})
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return nil
			}
			if fails++; fails > 50 {
				return fmt.Errorf("worker %s: report: %w", name, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		fails = 0
		b.done.Add(int64(len(reports)))
	}
	return nil
}

// benchJob is one job of the throughput or latency phase: its ID and its
// number of no-op tasks.
type benchJob struct {
	id    string
	tasks int
}

// submit sends jobs, one alone by POST /v1/jobs and more in one NDJSON
// POST /v1/jobs/bulk, and notes when each was sent and answered.
func (b *benchRun) submit(ctx context.Context, jobs ...benchJob) error {
	var body bytes.Buffer
	for _, j := range jobs {
		doc, _ := json.Marshal(spec.Job{ID: j.id, Tasks: []spec.Task{b.task(j.tasks)}})
		body.Write(doc)
		body.WriteByte('\n')
	}
	sent := time.Now()
	b.mu.Lock()
	for _, j := range jobs {
		b.submitted[j.id] = sent
	}
	b.mu.Unlock()
	if len(jobs) == 1 {
		if _, err := b.c.SubmitJob(ctx, body.Bytes(), "application/json"); err != nil {
			return err
		}
	} else {
		res, err := b.c.SubmitJobs(ctx, body.Bytes(), "application/x-ndjson")
		if err != nil {
			return err
		}
		for _, r := range res.Results {
			if r.Status != api.BulkCreated {
				return fmt.Errorf("job %s: %s: %v", jobs[r.Index].id, r.Status, r.Error)
			}
		}
	}
	answered := time.Now()
	b.mu.Lock()
	for _, j := range jobs {
		b.answered[j.id] = answered
	}
	b.mu.Unlock()
	return nil
}

// benchBacklogQueue is the queue of the backlog's jobs; no bench worker is
// in its pool.
const benchBacklogQueue = "backlog"

// submitBacklog submits n one-task jobs that no worker can run (their
// queue's pool has no bench worker), in bulk calls.
func (b *benchRun) submitBacklog(ctx context.Context, n int, progress io.Writer) error {
	start := time.Now()
	var body bytes.Buffer
	for i := 0; i < n; i += api.MaxBulkJobs {
		body.Reset()
		for k := i; k < min(n, i+api.MaxBulkJobs); k++ {
			doc, _ := json.Marshal(spec.Job{ID: fmt.Sprintf("bench-b-%06d", k), Queue: benchBacklogQueue,
				Tasks: []spec.Task{{Name: "t", Run: "true"}}})
			body.Write(doc)
			body.WriteByte('\n')
		}
		res, err := b.c.SubmitJobs(ctx, body.Bytes(), "application/x-ndjson")
		if err != nil {
			return err
		}
		for _, r := range res.Results {
			if r.Status != api.BulkCreated {
				return fmt.Errorf("job %d of the backlog: %s: %v", i+r.Index, r.Status, r.Error)
			}
		}
	}
	fmt.Fprintf(progress, "backlog    %d pending jobs that no worker runs, submitted in %.1fs\n", n, time.Since(start).Seconds())
	return nil
}

// submitAll submits jobs 0..n-1 from several clients at once, per jobs in
// each request.
func (b *benchRun) submitAll(ctx context.Context, n int, job func(i int) (string, int), clients, per int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			for {
				first := int(next.Add(int64(per)) - int64(per))
				if first >= n {
					return
				}
				var jobs []benchJob
				for i := first; i < min(n, first+per); i++ {
					id, size := job(i)
					jobs = append(jobs, benchJob{id, size})
				}
				if err := b.submit(ctx, jobs...); err != nil {
					errc <- fmt.Errorf("submitting %s: %w", jobs[0].id, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	return <-errc
}

// waitDone waits until target tasks were reported, a worker failed or ctx
// ended.
func (b *benchRun) waitDone(ctx context.Context, target int64, werr <-chan error) error {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for b.done.Load() < target {
		select {
		case err := <-werr:
			return err
		case <-ctx.Done():
			return fmt.Errorf("%d of %d tasks done: %w", b.done.Load(), target, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// percentiles summarises receive minus submit time over the tasks of the
// jobs whose IDs start with prefix.
func (b *benchRun) percentiles(prefix string) benchPercentiles {
	b.mu.Lock()
	var ds []float64
	for job, times := range b.received {
		if !strings.HasPrefix(job, prefix) {
			continue
		}
		sent := b.submitted[job]
		for _, at := range times {
			ds = append(ds, float64(at.Sub(sent))/float64(time.Millisecond))
		}
	}
	b.mu.Unlock()
	return summarise(ds)
}

// summarise gives the percentiles of durations in milliseconds.
func summarise(ds []float64) benchPercentiles {
	if len(ds) == 0 {
		return benchPercentiles{}
	}
	slices.Sort(ds)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(ds)))) - 1
		return round2(ds[max(0, min(i, len(ds)-1))])
	}
	return benchPercentiles{P50: at(0.50), P95: at(0.95), P99: at(0.99), Max: round2(ds[len(ds)-1])}
}

// submitPercentiles summarises how long the submissions of the jobs whose
// IDs start with prefix took.
func (b *benchRun) submitPercentiles(prefix string) benchPercentiles {
	b.mu.Lock()
	var ds []float64
	for job, at := range b.answered {
		if strings.HasPrefix(job, prefix) {
			ds = append(ds, float64(at.Sub(b.submitted[job]))/float64(time.Millisecond))
		}
	}
	b.mu.Unlock()
	return summarise(ds)
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// progress draws a progress bar of the tasks done in this phase on w until
// the returned function is called: redrawn in place on a terminal, a line
// every few seconds elsewhere.
func (b *benchRun) progress(w io.Writer, phase string, total int64, start time.Time) (stop func()) {
	base := b.done.Load()
	tty := isTerminal(w)
	every := 200 * time.Millisecond
	if !tty {
		every = 2 * time.Second
	}
	draw := func(final bool) {
		done := b.done.Load() - base
		const width = 30
		filled := int(min(done, total) * width / total)
		rate := float64(done) / max(time.Since(start).Seconds(), 1e-9)
		line := fmt.Sprintf("%-10s [%s%s] %d/%d tasks · %.0f/s", phase, strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total, rate)
		switch {
		case tty && final:
			fmt.Fprintf(w, "\r%s\n", line)
		case tty:
			fmt.Fprintf(w, "\r%s", line)
		default:
			fmt.Fprintln(w, line)
		}
	}
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				draw(true)
				return
			case <-t.C:
				draw(false)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			<-finished
		})
	}
}

func printBench(w io.Writer, r *benchResult) {
	c := r.Config
	auth := "on"
	if !c.Auth {
		auth = "off"
	}
	fmt.Fprintf(w, "allot bench: %d CPUs, %s, %s; authentication %s\n", r.Machine.CPUs, r.Machine.GoVersion, r.Machine.Store, auth)
	kind := "no-op"
	if len(c.Exec) > 0 {
		kind = fmt.Sprintf("%q", c.Exec)
	}
	per := "one job per request"
	if c.Bulk > 1 {
		per = fmt.Sprintf("%d jobs per bulk request", c.Bulk)
	}
	fmt.Fprintf(w, "throughput  %d %s tasks in jobs of %d, %d slots on %d workers, %d submitters, %s\n", c.Tasks, kind, c.JobSize, c.Slots, c.Workers, c.Submitters, per)
	if c.Backlog > 0 {
		fmt.Fprintf(w, "            against a backlog of %d pending jobs\n", c.Backlog)
	}
	fmt.Fprintf(w, "            %.0f tasks/s completed: %.2fs from the first submission to the last completion (submissions took %.2fs)\n",
		r.Throughput.TasksPerSec, r.Throughput.Seconds, r.Throughput.SubmitSeconds)
	if c.JobSize > 1 {
		fmt.Fprintf(w, "            %.0f jobs/s completed\n", r.Throughput.JobsPerSec)
	}
	if r.Throughput.CPUPerTask > 0 {
		fmt.Fprintf(w, "            CPU time: %.0fµs per task (server, workers and submitters, on %d CPUs)\n", r.Throughput.CPUPerTask, r.Machine.CPUs)
	}
	if r.Throughput.PeakMemory > 0 {
		fmt.Fprintf(w, "            peak resident memory: %.0f MiB (the whole process)\n", float64(r.Throughput.PeakMemory)/(1<<20))
	}
	sb := r.Throughput.Submit
	fmt.Fprintf(w, "            a submission took: p50 %s, p95 %s, p99 %s, max %s\n", ms(sb.P50), ms(sb.P95), ms(sb.P99), ms(sb.Max))
	fmt.Fprintf(w, "            wait for a slot: p50 %s, p95 %s, p99 %s, max %s\n",
		ms(r.Throughput.Wait.P50), ms(r.Throughput.Wait.P95), ms(r.Throughput.Wait.P99), ms(r.Throughput.Wait.Max))
	if r.Latency.Jobs > 0 {
		fmt.Fprintf(w, "latency     %d single-task jobs, one every %s, on free slots\n", r.Latency.Jobs, c.LatencyEvery)
		l := r.Latency.SubmitToStart
		fmt.Fprintf(w, "            submit to start: p50 %s, p95 %s, p99 %s, max %s\n", ms(l.P50), ms(l.P95), ms(l.P99), ms(l.Max))
	}
	if r.Agents != nil {
		printAgents(w, c, r.Agents)
	}
	fmt.Fprintf(w, "totals      %d jobs, %d tasks\n", r.Totals["jobs"], r.Totals["tasks"])
}

func ms(x float64) string {
	if x >= 1000 {
		return fmt.Sprintf("%.2fs", x/1000)
	}
	return fmt.Sprintf("%.1fms", x)
}
