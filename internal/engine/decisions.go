package engine

import (
	"time"

	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/model"
)

// Decisions is what one cycle decided, plus every state change the engine
// made on its own since the previous cycle (retries, failure cascades,
// requeues, finished jobs). Lists are in a stable order, so the same input
// gives byte-identical output.
type Decisions struct {
	Now    time.Time `json:"now"`
	Starts []Start   `json:"starts"`
	Stops  []Stop    `json:"stops"`
	// Admitted and Throttled are the admission verdicts of this cycle.
	// Admitted lists the endpoint jobs admitted, in decision order;
	// Throttled the endpoint jobs held back for the first time (a job
	// waiting for capacity is not listed again on later cycles; Pending
	// keeps its current reason).
	Admitted  []string   `json:"admitted,omitempty"`
	Throttled []Throttle `json:"throttled,omitempty"`
	// DeadLettered lists jobs put on the dead-letter list since the last
	// cycle (DeadLetter events).
	DeadLettered []string `json:"deadLettered,omitempty"`
	// Ended lists tasks whose attempt or life ended since the last cycle:
	// from worker reports (retried or failed), cascades, cancels and lost
	// workers.
	Ended []TaskEnd `json:"ended,omitempty"`
	// Deferred lists ready tasks held back this cycle for the worker of
	// their StickTo parent (sticky_worker_busy), for requeue counters.
	Deferred []Deferral `json:"deferred,omitempty"`
	// JobsDone lists jobs that reached an end state.
	JobsDone []JobEnd `json:"jobsDone,omitempty"`
	// Pending gives, per job, why its waiting tasks are not running.
	Pending []Pending `json:"pending"`
	// Groups summarises each active group of each queue.
	Groups []GroupSummary `json:"groups"`
}

// Start runs a task on a worker.
type Start struct {
	Job     string `json:"job"`
	Task    string `json:"task"`
	Worker  string `json:"worker"`
	Attempt int    `json:"attempt"`
	// Batch names the head task of the merged batch the task belongs to
	// (the head included), or is empty. A batch is tasks of one job stage
	// sharing a model, dispatched together to one worker slot: the head
	// comes first in Starts and its members follow.
	Batch string `json:"batch,omitempty"`
	// GPUs lists the GPU devices the task holds on the worker (the device
	// indices the worker registered), lowest first; a batch member shares
	// its head's. Empty for a task that asks for no GPU.
	GPUs []int `json:"gpus,omitempty"`
	// Placement says how the worker was chosen: mode, strategy, the
	// candidate pool size, reuse hits, λ and the winning score.
	Placement place.Info `json:"placement,omitzero"`
}

// Stop ends a running task early; the task is requeued unless the reason is
// a cancel.
type Stop struct {
	Job    string       `json:"job"`
	Task   string       `json:"task"`
	Worker string       `json:"worker"`
	Reason model.Reason `json:"reason"`
}

// Throttle says a job was held back at admission.
type Throttle struct {
	Job    string       `json:"job"`
	Reason model.Reason `json:"reason"`
}

// TaskEnd records a task leaving the running or waiting state.
type TaskEnd struct {
	Job    string          `json:"job"`
	Task   string          `json:"task"`
	Worker string          `json:"worker,omitempty"`
	State  model.TaskState `json:"state"` // ready again (retry, requeue) or terminal
	Reason model.Reason    `json:"reason"`
	// Parent names the head of the merged batch a member ended with.
	Parent string `json:"parent,omitempty"`
}

// JobEnd records a job reaching an end state.
type JobEnd struct {
	Job   string          `json:"job"`
	State model.TaskState `json:"state"`
}

// Pending explains why Tasks waiting tasks of a job are not running.
type Pending struct {
	Job    string       `json:"job"`
	Tasks  int          `json:"tasks"`
	Reason model.Reason `json:"reason"`
}

// GroupSummary is one group's state after the cycle.
type GroupSummary struct {
	Queue   string `json:"queue"`
	Group   string `json:"group"`
	Running int    `json:"running"`
	Waiting int    `json:"waiting"`
	// Target is the policy's target slot count, -1 when it sets none.
	Target int `json:"target"`
	Starts int `json:"starts"`
	Stops  int `json:"stops"`
}
