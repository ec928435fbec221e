// Package model holds Allot's domain types: workers, jobs, tasks and the
// resources they offer and ask for. It depends on the standard library only,
// so every other package, the pure engine included, can share these types.
package model

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Resources is a quantity of compute. CPU is in thousandths of a core so that
// fractional requests stay exact integers; memory is in mebibytes. GPUMemoryMB
// is per GPU: a task asking for 2 GPUs with 40960 MB needs two devices that
// each have at least 40 GiB, which is how GPU hardware is bought and reported.
type Resources struct {
	MilliCPU    int64 `json:"milliCPU,omitempty"`
	MemoryMB    int64 `json:"memoryMB,omitempty"`
	GPUs        int64 `json:"gpus,omitempty"`
	GPUMemoryMB int64 `json:"gpuMemoryMB,omitempty"`
}

// IsZero reports whether r asks for nothing.
func (r Resources) IsZero() bool { return r == Resources{} }

// Add returns r + o. GPU memory is per device, so it is not summed.
func (r Resources) Add(o Resources) Resources {
	return Resources{MilliCPU: r.MilliCPU + o.MilliCPU, MemoryMB: r.MemoryMB + o.MemoryMB,
		GPUs: r.GPUs + o.GPUs, GPUMemoryMB: r.GPUMemoryMB}
}

// Sub returns r − o (GPU memory per device is kept).
func (r Resources) Sub(o Resources) Resources {
	return Resources{MilliCPU: r.MilliCPU - o.MilliCPU, MemoryMB: r.MemoryMB - o.MemoryMB,
		GPUs: r.GPUs - o.GPUs, GPUMemoryMB: r.GPUMemoryMB}
}

// Shortfall names the first dimension in which have cannot hold want, or ""
// when it fits. The order (GPUs, GPU memory, memory, CPU) puts the scarcest
// hardware first, which is what a user wants to read in a pending reason.
func (want Resources) Shortfall(have Resources) string {
	switch {
	case want.GPUs > have.GPUs:
		return "gpus"
	case want.GPUs > 0 && want.GPUMemoryMB > have.GPUMemoryMB:
		return "gpu_memory"
	case want.MemoryMB > have.MemoryMB:
		return "memory"
	case want.MilliCPU > have.MilliCPU:
		return "cpu"
	}
	return ""
}

// FitsIn reports whether want fits in have.
func (want Resources) FitsIn(have Resources) bool { return want.Shortfall(have) == "" }

// String formats r for messages, e.g. "2 CPU, 4096 MB, 1 GPU × 24576 MB".
func (r Resources) String() string {
	var parts []string
	if r.MilliCPU != 0 {
		parts = append(parts, fmt.Sprintf("%g CPU", float64(r.MilliCPU)/1000))
	}
	if r.MemoryMB != 0 {
		parts = append(parts, fmt.Sprintf("%d MB", r.MemoryMB))
	}
	if r.GPUs != 0 {
		g := fmt.Sprintf("%d GPU", r.GPUs)
		if r.GPUMemoryMB != 0 {
			g += fmt.Sprintf(" × %d MB", r.GPUMemoryMB)
		}
		parts = append(parts, g)
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// Labels are key/value attributes of a worker; a Selector matches them.
type Labels map[string]string

// Selector requires each of its keys to carry the given value. An empty
// selector matches every worker.
type Selector map[string]string

// Matches reports whether l carries every key and value of s.
func (s Selector) Matches(l Labels) bool {
	for k, v := range s {
		if l[k] != v {
			return false
		}
	}
	return true
}

// Merge returns the conjunction of s and o; on a key both name with different
// values, ok is false because no worker can match.
func (s Selector) Merge(o Selector) (m Selector, ok bool) {
	if len(o) == 0 {
		return s, true
	}
	if len(s) == 0 {
		return o, true
	}
	m = make(Selector, len(s)+len(o))
	for k, v := range s {
		m[k] = v
	}
	for k, v := range o {
		if w, dup := m[k]; dup && w != v {
			return nil, false
		}
		m[k] = v
	}
	return m, true
}

// String renders s as sorted "k=v" pairs, which also serves as a stable key.
func (s Selector) String() string { return sortedPairs(s) }

// String renders l as sorted "k=v" pairs.
func (l Labels) String() string { return sortedPairs(l) }

func sortedPairs(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(m[k])
	}
	return b.String()
}

// WorkerState says whether a worker takes new tasks.
type WorkerState string

const (
	// WorkerReady takes new tasks.
	WorkerReady WorkerState = "ready"
	// WorkerDraining finishes what it runs and takes nothing new.
	WorkerDraining WorkerState = "draining"
	// WorkerDisabled was switched off (by an operator or the elastic
	// coordinator); it takes nothing new and is left out of cost figures.
	WorkerDisabled WorkerState = "disabled"
)

// Worker is a machine or process that runs tasks, Slots at a time.
type Worker struct {
	Name        string      `json:"name"`
	Capacity    Resources   `json:"capacity"`
	Labels      Labels      `json:"labels,omitempty"`
	Slots       int         `json:"slots"`
	CostPerHour float64     `json:"costPerHour"`
	State       WorkerState `json:"state"`
	// Cached lists models and datasets the worker holds, with the time it
	// last reported each; placement prefers fresh hints (context reuse).
	Cached map[string]time.Time `json:"cached,omitempty"`
}

// Category tells placement how to weigh throughput against cost.
type Category string

// Task categories of seed 002.
const (
	CategoryInference Category = "inference"
	CategoryTraining  Category = "training"
	CategoryOther     Category = "other"
)

// Task is the unit that runs on one worker slot.
type Task struct {
	Name      string    `json:"name"`
	Resources Resources `json:"resources"`
	// Needs names tasks of the same job that must succeed first.
	Needs []string `json:"needs,omitempty"`
	// Duration is the expected run time: the simulator runs the task for this
	// long, and classload starts longer tasks first.
	Duration    time.Duration `json:"duration,omitempty"`
	Category    Category      `json:"category,omitempty"`
	MaxAttempts int           `json:"maxAttempts,omitempty"`
	// Model and Dataset name the context the task loads; placement prefers a
	// worker that has it cached.
	Model   string `json:"model,omitempty"`
	Dataset string `json:"dataset,omitempty"`
	// Fails makes the simulator report this many failed attempts before the
	// task succeeds (used to exercise retries and failure cascades).
	Fails int `json:"fails,omitempty"`
	// Stage is the name of the job-spec entry the task was expanded from
	// (shard for shard-007); empty means the task's own name. Placement
	// groups tasks by stage: merged batches and fixed-pipeline task types.
	Stage string `json:"stage,omitempty"`
	// StickTo names the task of the same job whose checkpoint or adapter
	// this task loads. With stage stickiness on, the task runs on the
	// worker that ran that task while the worker lives, sparing a download.
	StickTo string `json:"stickTo,omitempty"`
	// Gang names the gang the task belongs to: the tasks of one job with
	// the same non-empty Gang start together, at least GangMin of them in
	// one cycle, or not at all, and a preemption stops them together
	// (docs/jobs.md#gangs). Every member carries the same GangMin.
	Gang    string `json:"gang,omitempty"`
	GangMin int    `json:"gangMin,omitempty"`
}

// Job is what a user submits: tasks, and the attributes policies divide
// capacity by.
type Job struct {
	ID        string    `json:"id"`
	Queue     string    `json:"queue"`
	Requestor string    `json:"requestor,omitempty"`
	Share     string    `json:"share,omitempty"`
	Priority  int       `json:"priority,omitempty"`
	Urgent    bool      `json:"urgent,omitempty"`
	SLAGroup  string    `json:"slaGroup,omitempty"`
	Endpoint  string    `json:"endpoint,omitempty"`
	Variant   string    `json:"variant,omitempty"`
	Load      int       `json:"load,omitempty"`
	Selector  Selector  `json:"selector,omitempty"`
	MaxSlots  int       `json:"maxSlots,omitempty"`
	Submitted time.Time `json:"submitted"`
	Tasks     []Task    `json:"tasks"`
	// DependsOn lists the other jobs this job waits for (Slurm's
	// --dependency): its tasks start only once each is met.
	DependsOn []JobDependency `json:"dependsOn,omitempty"`

	// Regions, or else Image with RegionSize, TileSize and TileOverlap,
	// estimate the job's load when Load is 0 (internal/engine/admit).
	// RegionSize and TileSize 0 take the defaults; TileOverlap is taken
	// as written (the job spec fills its default).
	Regions     int       `json:"regions,omitempty"`
	Image       ImageSize `json:"image,omitzero"`
	RegionSize  int       `json:"regionSize,omitempty"`
	TileSize    int       `json:"tileSize,omitempty"`
	TileOverlap int       `json:"tileOverlap,omitempty"`
	// Inputs are what the job reads (image URLs); the control plane checks
	// them at submission and dead-letters a job whose input is
	// inaccessible.
	Inputs []string `json:"inputs,omitempty"`

	// User is the Unix user the job's tasks run as on a worker that
	// allows it; the engine does not read it.
	User string `json:"user,omitempty"`
}

// Outcome is how a task attempt ended.
type Outcome string

// Attempt outcomes.
const (
	Succeeded Outcome = "succeeded"
	Failed    Outcome = "failed"
	// Requeued ends an attempt through no fault of the task (its worker was
	// lost); it does not count against the task's attempts.
	Requeued Outcome = "requeued"
)

// TaskState is where a task is in its life.
type TaskState string

// Task states.
const (
	TaskBlocked   TaskState = "blocked" // waiting on dependencies or admission
	TaskReady     TaskState = "ready"
	TaskRunning   TaskState = "running"
	TaskSucceeded TaskState = "succeeded"
	TaskFailed    TaskState = "failed"
	TaskCancelled TaskState = "cancelled"
)

// Terminal reports whether s is an end state.
func (s TaskState) Terminal() bool {
	return s == TaskSucceeded || s == TaskFailed || s == TaskCancelled
}

// Reason says why something did not happen: a task still pending, a job
// throttled, a task stopped. Code is stable and machine-readable; Message is
// for people and carries the figures behind the decision.
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Reason codes. They are part of the API: scripts and dashboards match them.
const (
	ReasonWaitingDependency = "waiting_dependency"
	ReasonNotAdmitted       = "not_admitted"
	ReasonThrottled         = "throttled"
	ReasonNoFreeSlot        = "no_free_slot"
	ReasonUnschedulable     = "unschedulable"
	ReasonWorkersDisabled   = "workers_unavailable"
	ReasonPolicyLimit       = "policy_limit"
	ReasonSuspended         = "suspended"
	ReasonNotReached        = "not_reached"
	ReasonMaxSlots          = "max_slots"
	ReasonStickyWorkerBusy  = "sticky_worker_busy"
	ReasonPreempted         = "preempted"
	ReasonRebalanced        = "rebalanced"
	ReasonCancelled         = "cancelled"
	ReasonWorkerLost        = "worker_lost"
	ReasonDependencyFailure = "dependency_failure"
	ReasonFailed            = "failed"
	ReasonRetry             = "retry"
	// ReasonInputInaccessible dead-letters a job whose declared input
	// could not be read (invalid URL, missing credentials, corrupt file).
	ReasonInputInaccessible = "input_inaccessible"
	// ReasonAffinityWait says a task passes over free workers that never
	// ran its job, for at most the policy's affinity wait, hoping one that
	// did (and holds the job's data) frees up.
	ReasonAffinityWait = "affinity_wait"
	// ReasonWorkerStopped requeues an attempt its worker stopped on its
	// own, shutting down: not the task's failure.
	ReasonWorkerStopped = "worker_stopped"
	// ReasonLeaseLost requeues an attempt its worker never received or no
	// longer runs: the lease answer was lost, or the worker restarted.
	ReasonLeaseLost = "lease_lost"
	// ReasonQuarantined fails a job whose stored record could not be read
	// back at a start: the server sets it aside instead of refusing to
	// start.
	ReasonQuarantined = "quarantined"
	// ReasonRequeued makes a task run again at a user's request (allot
	// requeue): a running attempt is stopped, an ended task waits again.
	ReasonRequeued = "requeued"
	// ReasonGangWaiting says a gang's tasks wait until enough of them can
	// start at once (docs/jobs.md#gangs).
	ReasonGangWaiting = "gang_waiting"
	// ReasonGangReserved says a task waits because the free capacity it
	// could use is held for a waiting gang that would otherwise starve,
	// and the task would still run when the gang is expected to start.
	ReasonGangReserved = "gang_reserved"
	// ReasonGangStopped stops the running tasks of a gang that lost a
	// member, so that it never runs below its minimum.
	ReasonGangStopped = "gang_stopped"
)

// Because formats a Reason.
func Because(code, format string, args ...any) Reason {
	return Reason{Code: code, Message: fmt.Sprintf(format, args...)}
}

// MaxNameLen bounds the names of queues, jobs, tasks, workers, endpoints and
// variants.
const MaxNameLen = 128

// ValidName reports whether s is a usable name: 1 to MaxNameLen ASCII
// letters, digits, '-', '_' or '.', starting with a letter or a digit, so
// names are safe in URLs, file names, command lines and logs: "." and ".."
// would be taken for path steps, "-x" for a flag.
func ValidName(s string) bool {
	if s == "" || len(s) > MaxNameLen || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// NameRule says what ValidName accepts, for error messages.
var NameRule = fmt.Sprintf("use letters, digits, '-', '_' and '.', starting with a letter or a digit, at most %d characters", MaxNameLen)
