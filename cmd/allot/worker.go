package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/agent"
	"github.com/allot-sched/allot/internal/agent/cgroup"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/spec"
)

func newWorkerCmd() *cobra.Command {
	var (
		cfg                    agent.Config
		cpu, memory, gpuMemory string
		labels                 []string
		cost                   float64
		caFile                 string
		cache                  []string
		token                  workerTokenFlags
		pidsLimit              int64
	)
	cmd := &cobra.Command{
		Use:   "worker --server URL",
		Short: "Run a worker agent: register this machine and run the tasks the server assigns",
		Long: `worker registers this machine with an Allot server (its CPUs, memory and GPUs,
detected unless given), long-polls for tasks, runs each as a process, and
reports how it ended. It keeps running tasks while the server is away and
tells it what it still runs when it returns. Given the URLs of a cluster's
replicas (comma-separated), it follows the leader at once when it changes
and registers there with what it runs. Ctrl-C or SIGTERM stops the
running tasks (SIGTERM, then SIGKILL after --grace) and reports them.

The token comes from --token-file (readable by the agent's user only) or
ALLOT_TOKEN; the agent sheds it from its environment and command line at
start, so its tasks cannot read it there. Started as root, it runs tasks
as nobody (--run-as), or as the user a job names if --allow-user allows it.
Tasks die with the agent; a restarted agent kills what they left behind
before it registers (see docs/agent.md).

Each attempt runs in a cgroup of its own (v2, or v1 where the host mounts
its controllers that way): a CPU quota from the task's cpu (and CPUs of its
own when it asks for whole ones), its memory as a limit, and --pids-limit.
The cgroup measures its CPU time and peak memory and kills all of it on a
stop, what it detached included. Where no cgroup can be made (not root, no
delegation) the agent says so at start and runs tasks unconfined, and
allot workers shows it.`,
		Example: `  allot worker --server http://allot:7070 --token-file /etc/allot/worker.token
  ALLOT_TOKEN=$(cat worker.token) allot worker --server http://allot:7070 --slots 4 --label zone=eu-1 --gpus 2 --gpu-memory 80Gi
  allot worker --server http://allot:7070 --token-file worker.token --run-as allot-task --allow-user 'svc-*'
  allot worker --server https://allot-1:7070,https://allot-2:7070,https://allot-3:7070 --token-file worker.token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.Slots < 1 {
				return fmt.Errorf("--slots: must be at least 1, got %d (to keep this worker from taking tasks, drain or disable it)", cfg.Slots)
			}
			if cpu != "" {
				if cfg.Resources.CPU, err = spec.ParseCPU(cpu); err != nil {
					return fmt.Errorf("--cpu: %w", err)
				}
			}
			if memory != "" {
				if cfg.Resources.Memory, err = spec.ParseMemory(memory); err != nil {
					return fmt.Errorf("--memory: %w", err)
				}
			}
			if gpuMemory != "" {
				if cfg.Resources.GPUMemory, err = spec.ParseMemory(gpuMemory); err != nil {
					return fmt.Errorf("--gpu-memory: %w", err)
				}
			}
			if cfg.Labels, err = parseLabels(labels); err != nil {
				return err
			}
			if cfg.Cache, err = parseCacheHints(cache); err != nil {
				return err
			}
			if cmd.Flags().Changed("cost-per-hour") {
				cfg.CostPerHour = &cost
			}
			switch {
			case pidsLimit < 0:
				return fmt.Errorf("--pids-limit: must not be negative (0 for no limit), got %d", pidsLimit)
			case pidsLimit == 0:
				cfg.PidsLimit = -1 // none
			default:
				cfg.PidsLimit = pidsLimit
			}
			if cfg.Server == "" {
				return fmt.Errorf("--server: the URL of the Allot server is required (or set ALLOT_SERVER)")
			}
			if caFile != "" {
				if cfg.RootCAs, err = client.LoadCA(caFile); err != nil {
					return fmt.Errorf("--ca: %w", err)
				}
			}
			// The token once the flags are known good, before anything
			// starts: shedding it starts the process again.
			tok, shown, err := token.read(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if shown {
				if err := scrubToken(tok); err != nil {
					return err
				}
			}
			if err := protectProcess(); err != nil {
				return err
			}
			cfg.Token = tok
			cfg.RunAs = taskRunAs(cfg.RunAs, cmd.Flags().Changed("run-as"), os.Geteuid())
			if cfg.StateDir == "" {
				if cfg.StateDir, err = defaultStateDir(cfg.Name); err != nil {
					return err
				}
			}
			if cfg.StreamEvery == 0 {
				cfg.StreamEvery = -1 // --output-every 0: no streaming
			}
			cfg.Logger = newLogger()
			a, err := agent.New(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return a.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Server, "server", os.Getenv("ALLOT_SERVER"),
		"server URL, or the URLs of a cluster's replicas separated by commas: the worker follows the leader (env ALLOT_SERVER)")
	f.StringVar(&token.file, "token-file", "", "file holding the bearer token with the worker role, readable by the agent's user only (mode 0600); else env ALLOT_TOKEN")
	f.Var(&token.flag, "token", "bearer token with the worker role: visible to every user of the machine while the agent starts, use --token-file")
	f.IntVar(&token.fd, "token-fd", 0, "descriptor to read the token from, then close")
	_ = f.MarkHidden("token-fd") // how the agent hands the token to itself
	f.StringVar(&cfg.RunAs, "run-as", "", "user the tasks run as when their job names none (default: nobody when the agent runs as root, else the agent's user)")
	f.StringArrayVar(&cfg.AllowUsers, "allow-user", nil, "user a job may name to run its tasks as, or a pattern like svc-* (repeatable; root only when named)")
	f.StringVar(&cfg.StateDir, "state-dir", "", "private directory of the agent's state: its lock, and its tasks' process groups (default: /var/lib/allot/worker-NAME for root, else ~/.local/state/allot/worker-NAME)")
	f.StringVar(&caFile, "ca", os.Getenv("ALLOT_CA"), "PEM file of the CA that signed an https server's certificate (env ALLOT_CA)")
	f.StringVar(&cfg.Name, "name", "", "worker name (default: the host name)")
	f.StringVar(&cpu, "cpu", "", "CPUs offered, e.g. 8 or 7500m (default: detected)")
	f.StringVar(&memory, "memory", "", "memory offered, e.g. 30Gi (default: detected from /proc/meminfo)")
	f.IntVar(&cfg.Resources.GPUs, "gpus", 0, "GPUs offered (default: detected with nvidia-smi)")
	f.StringVar(&gpuMemory, "gpu-memory", "", "memory per GPU, e.g. 80Gi (default: detected with nvidia-smi)")
	f.IntVar(&cfg.Slots, "slots", 1, "tasks run at once")
	f.IntVar(&cfg.Prefetch, "prefetch", 0, "tasks taken ahead beyond the slots and queued, so a freed slot starts the next at once (at most --slots; for many short tasks)")
	f.StringArrayVar(&labels, "label", nil, "label KEY=VALUE that queue pools select on (repeatable)")
	f.Float64Var(&cost, "cost-per-hour", spec.DefaultCostPerHour, "cost of this worker per hour, for cost-aware placement")
	f.StringSliceVar(&cfg.Cached, "cached", nil, "models or datasets already on this machine (comma-separated, repeatable)")
	f.StringArrayVar(&cache, "cache", nil, "a model or dataset this machine holds, as model=NAME or dataset=NAME (repeatable); kept fresh by heartbeats")
	f.StringVar(&cfg.WorkDir, "workdir", "", "working directory of tasks that name none (default: a fresh temporary directory per attempt)")
	f.StringVar(&cfg.Cgroups, "cgroups", agent.CgroupsAuto, "how attempts are confined: auto (a cgroup each, on the hierarchy the host gives controllers to), v1, v2, or off (unconfined)")
	f.StringVar(&cfg.CgroupRoot, "cgroup-root", "", "directory to make the attempts' cgroups in (default: under the agent's own cgroup in each mounted hierarchy); with --cgroups v1, a directory of per-controller hierarchies")
	f.Int64Var(&pidsLimit, "pids-limit", cgroup.DefaultPids, "processes and threads each attempt may run at once (its cgroup's pids.max; 0 for no limit)")
	f.DurationVar(&cfg.Grace, "grace", agent.DefaultGrace, "time between SIGTERM and SIGKILL on timeouts and shutdown")
	f.IntVar(&cfg.OutputTailBytes, "output-tail", agent.DefaultOutputTailBytes, "bytes of each task's output kept and reported")
	f.DurationVar(&cfg.StreamEvery, "output-every", agent.DefaultStreamEvery, "how often a running task's new output is sent to the server (allot logs -f); 0 sends none, only the reports' tails")
	f.DurationVar(&cfg.HeartbeatEvery, "heartbeat", agent.DefaultHeartbeatEvery, "interval between heartbeats")
	f.DurationVar(&cfg.ServerTimeout, "server-timeout", agent.DefaultServerTimeout, "with several --server URLs: a server silent this long (frozen, cut off) is left for the next; keep it below the servers' --leader-timeout")
	// --cached came first: registration only, and models only.
	_ = f.MarkDeprecated("cached", "use --cache model=NAME (or dataset=NAME), which heartbeats keep fresh")
	return cmd
}

// rootTaskUser is whom a root agent runs tasks as when neither the job nor
// --run-as names a user: a root agent's tasks must not be root.
const rootTaskUser = "nobody"

// taskRunAs is the run-as user of an agent running as euid, given --run-as
// (set says whether it was given): allot worker and allot dev's local
// workers decide it alike.
func taskRunAs(runAs string, set bool, euid int) string {
	if !set && euid == 0 {
		return rootTaskUser
	}
	return runAs
}

// defaultStateDir is the state directory of the agent named name (the
// host name when empty), private to its user.
func defaultStateDir(name string) (string, error) {
	if name == "" {
		var err error
		if name, err = os.Hostname(); err != nil {
			return "", fmt.Errorf("--state-dir: not given, and the host name for the default is unknown: %w", err)
		}
	}
	base := "worker-" + name
	if os.Geteuid() == 0 {
		return filepath.Join("/var/lib/allot", base), nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "allot", base), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("--state-dir: not given, and no home directory for the default: %w", err)
	}
	return filepath.Join(home, ".local", "state", "allot", base), nil
}

// parseLabels reads KEY=VALUE flags.
func parseLabels(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--label %q: want KEY=VALUE", kv)
		}
		if old, dup := out[k]; dup && old != v {
			return nil, fmt.Errorf("--label %q: %s is already %q", kv, k, old)
		}
		out[k] = v
	}
	return out, nil
}
