package api

import (
	"encoding/json"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// The JSON bodies of the API. Clients (the CLI, the worker agent, any
// language) see exactly these; docs/api.md and the OpenAPI document describe
// them.

// ErrorBody is every error answer: {"error": {...}}.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Error is a machine-readable code, a message for people and, for bad input,
// the offending field (and line, for documents).
type Error struct {
	Code    string              `json:"code"`
	Message string              `json:"message"`
	Field   string              `json:"field,omitempty"`
	Line    int                 `json:"line,omitempty"`
	Details []*model.FieldError `json:"details,omitempty"`
	// Leader is set on a not_leader answer: the API URL of the replica
	// that leads, where the request should go; empty while no leader is
	// known (an election is under way). The LeaderHeader carries it too.
	Leader string `json:"leader,omitempty"`
	// Duplicate is set on a conflict answer to a submission whose job ID
	// is taken by a job the same caller submitted with the same spec: the
	// earlier submission was stored, so a caller that sent it again
	// because the first answer was lost has succeeded (docs/ha.md).
	Duplicate *Duplicate `json:"duplicate,omitempty"`
}

// Duplicate names the job an identical earlier submission stored, and
// its state ("dead_lettered" for a job on the dead-letter list).
type Duplicate struct {
	ID    string `json:"id"`
	State string `json:"state"`
}

// Error codes.
const (
	CodeInvalid      = "invalid"
	CodeNotFound     = "not_found"
	CodeConflict     = "conflict"
	CodeTooLarge     = "too_large"
	CodeUnauthorized = "unauthorized"
	CodeForbidden    = "forbidden"
	CodeUnavailable  = "unavailable"
	// CodeOverloaded (503, with Retry-After) is a request the server did
	// not handle because it is at a connection limit: sending it again
	// later is safe, whatever it is.
	CodeOverloaded = "overloaded"
	// CodeUnsupportedMediaType (415) is a body of a media type the route
	// does not read (its Content-Type, or none); field is Content-Type.
	CodeUnsupportedMediaType = "unsupported_media_type"
	// CodeTimeout (408) is a request whose body arrived too slowly.
	CodeTimeout = "timeout"
	// CodeStoreUnavailable: the server cannot write its store (disk full,
	// read-only or failing file system); the change was not applied, and
	// the same request may be sent again later.
	CodeStoreUnavailable = "store_unavailable"
	// CodeHeld (503): the change was taken before the store refused
	// writes and is held until it is stored; the server answers before
	// the client's connection gives up, with the outcome unknown. Sending
	// the same request again (a job with the same id) tells it.
	CodeHeld = "held"
	// CodeNotLeader (503) is a request made to a replica that does not
	// lead: it was not handled, and goes to the leader the answer names
	// (Error.Leader, LeaderHeader), or to another replica when none is
	// known yet. Sending it again there is safe, whatever it is.
	CodeNotLeader = "not_leader"
	// CodeTooManyTasks (429) is a job whose tasks would take the tasks of
	// unfinished jobs past a bound of the server, its submitter's or its
	// own (server.limits.maxLiveTasksPerSubmitter, maxLiveTasks): the
	// message names which and the count. Nothing was stored; the same
	// job is accepted once enough jobs have ended.
	CodeTooManyTasks = "too_many_tasks"
	CodeInternal     = "internal"
)

// Job is a job as the API shows it.
type Job struct {
	ID        string `json:"id"`
	Queue     string `json:"queue"`
	Share     string `json:"share,omitempty"`
	Requestor string `json:"requestor,omitempty"`
	// Submitter is the name of the token that submitted the job (its ID
	// when it has no name); empty when authentication was off.
	Submitter string         `json:"submitter,omitempty"`
	Priority  int            `json:"priority"`
	Urgent    bool           `json:"urgent,omitempty"`
	State     string         `json:"state"`
	Submitted time.Time      `json:"submitted"`
	Ended     *time.Time     `json:"ended,omitempty"`
	Counts    map[string]int `json:"counts"` // tasks per state
	Tasks     []Task         `json:"tasks,omitempty"`
	Spec      *model.JobSpec `json:"spec,omitempty"`
	// Admission is set for a job with an endpoint or a dead-lettered job
	// (docs/endpoints.md).
	Admission *Admission `json:"admission,omitempty"`
	// HeldBy names who holds the job (allot hold): it starts no task until
	// released. Empty when it is not held.
	HeldBy string `json:"heldBy,omitempty"`
	// Warnings, in a submission's answer only, are what the job will
	// likely meet though it was accepted: tasks no registered worker can
	// ever run (code unrunnable), as Slurm's "Requested node
	// configuration is not available".
	Warnings []Warning `json:"warnings,omitempty"`
	// DependsOn lists the jobs this one depends on (its spec's
	// dependsOn), each with whether it is met, so that a client shows
	// what a waiting job waits for without reading the other jobs.
	DependsOn []JobDependency `json:"dependsOn,omitempty"`
}

// JobDependency is a job's dependency on another job as the API shows it.
type JobDependency struct {
	Job  string               `json:"job"`
	Type model.DependencyType `json:"type"`
	// State is waiting (not met yet) or met while the job has not ended;
	// empty once it ended (its tasks' reasons say how a dependency that
	// could not be met ended it).
	State string `json:"state,omitempty"`
}

// Task is a task as the API shows it.
type Task struct {
	Name     string          `json:"name"`
	State    string          `json:"state"`
	Needs    []string        `json:"needs,omitempty"`
	Attempt  int             `json:"attempt"`
	Fails    int             `json:"fails,omitempty"`
	Worker   string          `json:"worker,omitempty"`
	Started  *time.Time      `json:"started,omitempty"`
	Ended    *time.Time      `json:"ended,omitempty"`
	ExitCode *int            `json:"exitCode,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	// Reason is why the task waits (while pending) or why it ended the way
	// it did.
	Reason *model.Reason `json:"reason,omitempty"`
	// CPUSeconds and PeakMemory (bytes) are what the worker measured of
	// the current attempt once it ended (AttemptUsage).
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
	PeakMemory int64   `json:"peakMemory,omitempty"`
	// Attempts lists the task's ended attempts, oldest first, with what
	// each used (allot get).
	Attempts []AttemptUsage `json:"attempts,omitempty"`
	// GPUs lists the indices of the GPU devices the task holds on its
	// worker while it runs (its latest attempt's, once it ended).
	GPUs []int `json:"gpus,omitempty"`
}

// JobList is the answer of GET /v1/jobs.
type JobList struct {
	Jobs []Job `json:"jobs"`
	// Next is the cursor of the next page, 0 on the last.
	Next int64 `json:"next,omitempty"`
}

// Logs is the output of a job's tasks: of each task's current attempt,
// or of the one task and attempt asked for (LogQuery).
type Logs struct {
	Job   string    `json:"job"`
	Tasks []TaskLog `json:"tasks"`
}

// Warning is something an accepted request will likely meet.
type Warning struct {
	// Code is stable for scripts: unrunnable.
	Code    string `json:"code"`
	Message string `json:"message"`
	// Tasks names the tasks it is about (the first few, then "N more").
	Tasks []string `json:"tasks,omitempty"`
}

// WarningUnrunnable is the code of a warning that no registered worker
// can ever run some of a job's tasks.
const WarningUnrunnable = "unrunnable"

// TaskLog is one attempt's output, as much of it as is kept: the server
// keeps up to a limit per attempt (server.maxOutput, 8 MiB by default) and
// drops the oldest output beyond it.
type TaskLog struct {
	Task    string `json:"task"`
	Attempt int    `json:"attempt"`
	Output  string `json:"output"`
	// Offset is where Output starts in the attempt's whole output, and
	// Total where it ends: Offset bytes before it were not kept (over the
	// limit) or were read already (LogQuery.Offset).
	Offset int64 `json:"offset"`
	Total  int64 `json:"total"`
	// Dropped is how many bytes of the output are not kept at all.
	Dropped int64 `json:"dropped,omitempty"`
	// Running is set while the attempt runs: more output may come.
	Running bool `json:"running,omitempty"`
	// ExitCode is how the attempt exited, however it ended (a cancelled
	// or timed-out attempt too); nil until its worker reported it.
	ExitCode *int `json:"exitCode,omitempty"`
}

// LogQuery selects the output GET /v1/jobs/{id}/logs returns: one task
// (empty: every task), one attempt (0: the current one), from a byte
// offset on (to follow a running attempt).
type LogQuery struct {
	Task    string
	Attempt int
	Offset  int64
}

// Worker is a worker as the API shows it.
type Worker struct {
	Name      string             `json:"name"`
	State     string             `json:"state"`
	Resources model.ResourceSpec `json:"resources"`
	Labels    map[string]string  `json:"labels,omitempty"`
	Slots     int                `json:"slots"`
	// Prefetch is how many tasks beyond Slots the worker takes ahead
	// (Register.Prefetch); Running counts them.
	Prefetch    int       `json:"prefetch,omitempty"`
	Running     int       `json:"running"`
	CostPerHour float64   `json:"costPerHour"`
	LastSeen    time.Time `json:"lastSeen"`
	// DisabledBy says who disabled a disabled worker: "elastic" (the
	// elastic coordinator) or "manual" (an operator).
	DisabledBy string `json:"disabledBy,omitempty"`
	// Cache lists the worker's fresh cache hints (context reuse).
	Cache []CacheHint `json:"cache,omitempty"`
	// Unconfined says why the worker runs its tasks without cgroups
	// (Register.Unconfined); empty when it confines them.
	Unconfined string `json:"unconfined,omitempty"`
}

// Queue is a queue and its policy as the API shows them.
type Queue struct {
	Name     string            `json:"name"`
	Priority int               `json:"priority"`
	Pool     map[string]string `json:"pool,omitempty"`
	Policy   json.RawMessage   `json:"policy"`
	Running  int               `json:"running"`
	Waiting  int               `json:"waiting"`
	// Status is what the policy reports about its groups: for fairshare,
	// each share's usage, weight factor and entitled fraction.
	Status any `json:"status,omitempty"`
}

// PriorityChange is the body of POST /v1/jobs/{id}/priority.
type PriorityChange struct {
	Priority int  `json:"priority"`
	Urgent   bool `json:"urgent,omitempty"`
}

// Register is the body a worker sends to POST /v1/workers.
type Register struct {
	Name      string             `json:"name"`
	Resources model.ResourceSpec `json:"resources"`
	// GPUDevices lists the worker's GPUs (index, UUID, memory) as
	// nvidia-smi reported them, one per resources.gpus; empty stands for
	// devices 0 to gpus-1 (GPUs declared with --gpus). The server hands
	// tasks these devices, never one to two tasks at once.
	GPUDevices []model.GPUDevice `json:"gpuDevices,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Slots      int               `json:"slots,omitempty" zero:"must be at least 1|leave slots out for one; to keep a worker from taking tasks, drain or disable it"`
	// Prefetch is how many tasks beyond its slots the worker takes ahead
	// and queues, so that a slot that frees starts the next one at once
	// instead of waiting for the server's round trip (report, durable
	// commit, lease answer). The server counts them as running: they
	// start (durably) when handed out, hold their share and resources,
	// and are stopped as running tasks are. At most the worker's slots;
	// 0, the default, takes only what the slots run.
	Prefetch    int      `json:"prefetch,omitempty"`
	CostPerHour *float64 `json:"costPerHour,omitempty"`
	Cached      []string `json:"cached,omitempty"`
	// Cache lists models and datasets the worker holds, with their kind
	// and when it last used each (cache hints for context reuse).
	Cache []CacheHint `json:"cache,omitempty"`
	// Running lists the attempts the worker still runs, when it registers
	// again after a restart of the server or of its own connection.
	Running []Attempt `json:"running,omitempty"`
	// Unconfined, when set, says why the worker runs its tasks without a
	// cgroup (not root, no delegation, no hierarchy mounted): then it
	// does not hold them to their CPU, memory and pids limits, and it
	// cannot kill what a task detached. Empty: each attempt runs in a
	// cgroup of its own (docs/agent.md#enforced-resources).
	Unconfined string `json:"unconfined,omitempty"`
}

// Attempt names one attempt of a task.
type Attempt struct {
	Job     string `json:"job"`
	Task    string `json:"task"`
	Attempt int    `json:"attempt"`
}

// LeaseRequest is the body of POST /v1/workers/{name}/lease.
type LeaseRequest struct {
	// Wait is how long the server may hold the request when it has nothing
	// for the worker (long poll), at most MaxLeaseWait.
	Wait model.Duration `json:"wait,omitempty"`
	// Running, when set, lists every attempt the worker holds: running,
	// queued for a slot, or with a report not yet delivered. It confirms
	// that the previous lease answer arrived: an attempt that answer
	// carried and the list lacks was lost on the way (a connection cut
	// while the answer was written), and the server requeues it rather
	// than wait forever for a report. Nil skips the check.
	Running *[]Attempt `json:"running,omitempty"`
}

// MaxLeaseWait bounds a long poll.
const MaxLeaseWait = 60 * time.Second

// Lease is the answer to a lease request: tasks to start and attempts to
// stop, in one batch.
type Lease struct {
	Assignments []Assignment `json:"assignments"`
	Stops       []StopOrder  `json:"stops"`
}

// Assignment tells a worker to run an attempt of a task. Result references
// are already substituted.
type Assignment struct {
	Attempt
	Run     string            `json:"run,omitempty"`
	Command []string          `json:"command,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	WorkDir string            `json:"workdir,omitempty"`
	Timeout model.Duration    `json:"timeout,omitempty"`
	// Resources are what the task asked for: the worker holds the attempt
	// to them (a cgroup with a CPU quota, memory and pids limits) where
	// it can.
	Resources model.ResourceSpec `json:"resources,omitzero"`
	// User is the Unix user the job asks its tasks to run as (the job's
	// user field); the worker runs the attempt as that user only if its
	// --allow-user list allows it, and fails the attempt otherwise.
	User string `json:"user,omitempty"`
	// Secret is this attempt's own secret: every report of the attempt
	// must carry it (Report.Secret). The worker keeps it in memory only
	// and never hands it to the task; a report without it is refused.
	Secret string `json:"secret,omitempty"`
	// Batch, when set, makes the assignment a merged batch (tasks of one
	// job stage sharing a model, docs/placement.md#task-merging): the
	// worker runs these assignments one after another, in this order, in
	// one slot, and reports each. Batch[0] is the head, whose attempt is
	// the one above; the head's report is the batch's and comes last. The
	// top-level run is then a script that fails with a message saying the
	// agent is too old to run batches: an agent that ignores this field
	// refuses the batch visibly instead of running its head alone.
	Batch []Assignment `json:"batch,omitempty"`
	// GPUs lists the GPU devices of the worker the attempt holds, lowest
	// index first (with the UUIDs the worker registered, if any); the
	// worker shows the task these devices only (CUDA_VISIBLE_DEVICES,
	// NVIDIA_VISIBLE_DEVICES). Empty for a task that asks for no GPU.
	GPUs []model.GPUDevice `json:"gpus,omitempty"`
	// TaskIndex and TaskCount place the task in the entry of the job spec
	// it was expanded from (a count of N gives tasks 0..N-1; a task
	// without count is 0 of 1): the worker passes them to the task as
	// ALLOT_TASK_INDEX and ALLOT_TASK_COUNT. TaskCount 0 (an older
	// server) passes neither.
	TaskIndex int `json:"taskIndex"`
	TaskCount int `json:"taskCount,omitempty"`
}

// StopOrder tells a worker to stop an attempt: SIGTERM, then SIGKILL after
// Grace.
type StopOrder struct {
	Attempt
	Reason model.Reason   `json:"reason"`
	Grace  model.Duration `json:"grace"`
}

// Reports is the body of POST /v1/workers/{name}/reports: many results in one
// request.
type Reports struct {
	Reports []Report `json:"reports"`
	// Leaving says the worker is shutting down: once these reports are
	// applied it runs nothing, so the server takes it out of the fleet at
	// once (worker_stopped) instead of waiting for the heartbeat timeout
	// to declare it lost. It joins as new when it registers again.
	Leaving bool `json:"leaving,omitempty"`
	// Stopping says the worker begins to shut down: it takes no new task
	// from now on (the server holds it draining, without changing the
	// state an operator gave it), while the attempts it still runs end and
	// are reported; a request with Leaving follows. Applied before the
	// reports of the same request.
	Stopping bool `json:"stopping,omitempty"`
}

// Report is how one attempt ended on the worker.
type Report struct {
	Attempt
	ExitCode int `json:"exitCode"`
	// Error says why the attempt could not run or was killed (timeout,
	// start failure); empty for a normal exit.
	Error string `json:"error,omitempty"`
	// Stopped is set when the worker stopped the attempt on a StopOrder.
	Stopped bool            `json:"stopped,omitempty"`
	Output  string          `json:"output,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	// Secret is the attempt's secret, as its assignment carried it. A
	// report without it is refused (403) and changes nothing.
	Secret string `json:"secret,omitempty"`
	// CPUSeconds is the CPU time (user and system) the attempt's
	// processes used, in seconds; PeakMemory is the most memory they held
	// at once, in bytes. From the attempt's cgroup, which counts every
	// process of the task; on a worker without cgroups, from the
	// process's own resource usage (its waited-for children included,
	// not what it detached). 0: not measured (it did not start).
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
	PeakMemory int64   `json:"peakMemory,omitempty"`
}

// Event is one entry of the event log.
type Event struct {
	ID      int64           `json:"id"`
	At      time.Time       `json:"at"`
	Kind    string          `json:"kind"`
	Job     string          `json:"job,omitempty"`
	Task    string          `json:"task,omitempty"`
	Worker  string          `json:"worker,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	Message string          `json:"message,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}
