package engine

import (
	"errors"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// Event is something that happened outside the engine. Apply takes events in
// the order they happened; the engine never reads a clock, so each event
// carries its time.
type Event interface{ event() }

// SubmitJob adds a job. The job must already be valid (internal/spec checks
// user input); the engine still refuses what would corrupt its state.
type SubmitJob struct {
	Job model.Job
	// Others describes the jobs Job depends on (Job.DependsOn) that the
	// engine does not hold: ended and forgotten, or on the dead-letter
	// list. A dependency on a job neither held nor described is refused.
	Others []OtherJob
}

// CancelJob cancels a job: waiting tasks end as cancelled and running ones
// are stopped.
type CancelJob struct {
	Job string
	At  time.Time
}

// FinishTask reports how a running task's attempt ended.
type FinishTask struct {
	Job, Task string
	Outcome   model.Outcome
	At        time.Time
	Message   string
	// Code is the reason code of a Requeued outcome, for counters and
	// events by reason (worker_stopped, lease_lost); empty means
	// worker_lost.
	Code string
}

// RestoreRunning marks a task as already running, as after a server restart
// or at time zero of a plan scenario. With an empty Worker, the engine picks a
// worker that fits, the way it would place the task.
type RestoreRunning struct {
	Job, Task string
	Worker    string
	Started   time.Time
	// Attempt and Fails restore the task's counters (a server restart);
	// zero keeps the engine's own.
	Attempt, Fails int
	// Batch names the head of the merged batch the task rode in. The head
	// must be restored first, running on Worker; the task joins its batch
	// and holds no slot of its own.
	Batch string
	// GPUs lists the GPU devices the task was given when it started
	// (Start.GPUs, as recorded): it gets them back when each is still free
	// on the worker, and the lowest free ones otherwise.
	GPUs []int
}

// RestoreTask restores a task that is not running to the state a store
// recorded: an end state (succeeded, failed, cancelled), or waiting with its
// attempt counters. It records nothing in Decisions: the change is old news.
type RestoreTask struct {
	Job, Task      string
	State          model.TaskState
	Attempt, Fails int
}

func (RestoreTask) event() {}

// AddWorker registers a worker.
type AddWorker struct {
	Worker model.Worker
	At     time.Time
	// GPUDevices lists the worker's GPUs, one per Worker.Capacity.GPUs,
	// which the engine hands to tasks (Start.GPUs); empty stands for
	// devices 0 to GPUs-1. It is not part of model.Worker, which placement
	// keeps for every worker and reads on every placement: only the engine's
	// device book (devices.go) needs it.
	GPUDevices []model.GPUDevice
}

// RemoveWorker unregisters a worker; its running tasks are requeued with the
// worker_lost reason, which does not count as a failed attempt.
type RemoveWorker struct {
	Name   string
	At     time.Time
	Reason model.Reason
}

// SetWorkerState drains, disables or readies a worker.
type SetWorkerState struct {
	Name  string
	State model.WorkerState
	At    time.Time
	// NoToggle marks a change the server makes on its own rather than an
	// operator's or the elastic coordinator's toggle: a worker held back
	// while it shuts down, or given back its state when it registers
	// again after a restart. It leaves StateSince, from which the elastic
	// coordinator counts its toggle cooldown, as it was.
	NoToggle bool
}

// SetPolicy replaces a queue's policy at run time.
type SetPolicy struct {
	Queue  string
	Policy policy.Config
	At     time.Time
}

// SetJobPriority changes a job's priority at run time.
type SetJobPriority struct {
	Job      string
	Priority int
	Urgent   bool
}

func (SubmitJob) event()      {}
func (CancelJob) event()      {}
func (FinishTask) event()     {}
func (RestoreRunning) event() {}
func (AddWorker) event()      {}
func (RemoveWorker) event()   {}
func (SetWorkerState) event() {}
func (SetPolicy) event()      {}
func (SetJobPriority) event() {}

// Errors Apply returns. Callers that replay reports (a worker reconnecting)
// match ErrNotRunning to ignore a duplicate completion.
var (
	ErrUnknownJob    = errors.New("unknown job")
	ErrUnknownTask   = errors.New("unknown task")
	ErrUnknownQueue  = errors.New("unknown queue")
	ErrUnknownWorker = errors.New("unknown worker")
	ErrDuplicate     = errors.New("already exists")
	ErrNotRunning    = errors.New("task is not running")
	ErrInvalid       = errors.New("invalid")
)

// SetHistory hands a queue's policy the history it depends on (usage per
// group, how long a rebalance threshold has been exceeded). Policies without
// history ignore it.
type SetHistory struct {
	Queue   string
	History policy.History
	At      time.Time
}

func (SetHistory) event() {}

// ForgetJob drops an ended job from the engine's state once the caller has
// recorded its end (the server, after its commit; the simulator, at once), so
// a long-running engine holds only live jobs. Until then TaskState and
// TaskReason still answer for the job's tasks.
type ForgetJob struct {
	Job string
}

func (ForgetJob) event() {}
