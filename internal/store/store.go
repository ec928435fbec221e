// Package store persists what the control plane must not lose: jobs and
// their tasks, workers, events and policy usage. The control loop is the only
// writer; it groups many state changes into one Commit (group commit), so a
// busy server makes few, large transactions. Implementations: sqlite (the
// embedded default) and postgres (HA); storetest is the suite both must pass.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Sentinel errors. Implementations wrap them with context.
var (
	ErrNotFound  = errors.New("not found")
	ErrDuplicate = errors.New("already exists")
	// ErrFenced means another server took over as leader: this one must
	// stop writing.
	ErrFenced = errors.New("fenced: another leader holds a newer epoch")
)

// Job is a stored job. Spec holds the submitted job document (JSON, as
// normalised by the API), so the job can be rebuilt exactly after a restart.
type Job struct {
	ID        string          `json:"id"`
	Seq       int64           `json:"seq"` // submission order, assigned by the store
	Queue     string          `json:"queue"`
	Share     string          `json:"share,omitempty"`
	Requestor string          `json:"requestor,omitempty"`
	State     string          `json:"state"` // pending, running, succeeded, failed, cancelled
	Priority  int             `json:"priority"`
	Urgent    bool            `json:"urgent,omitempty"`
	Submitted time.Time       `json:"submitted"`
	Ended     time.Time       `json:"ended,omitempty"`
	Spec      json.RawMessage `json:"spec"`
}

// Task is a stored task.
type Task struct {
	Job      string          `json:"job"`
	Name     string          `json:"name"`
	Index    int             `json:"index"` // position in the job spec
	State    string          `json:"state"` // blocked, ready, running, succeeded, failed, cancelled
	Attempt  int             `json:"attempt"`
	Fails    int             `json:"fails"`
	Worker   string          `json:"worker,omitempty"`
	Started  time.Time       `json:"started,omitempty"`
	Ended    time.Time       `json:"ended,omitempty"`
	ExitCode *int            `json:"exitCode,omitempty"`
	Output   string          `json:"output,omitempty"` // tail of stdout and stderr
	Result   json.RawMessage `json:"result,omitempty"` // small JSON the task published
	Reason   string          `json:"reason,omitempty"` // reason code of the last transition
	Message  string          `json:"message,omitempty"`
}

// Worker is a registered worker. Spec holds its registration (resources,
// labels, slots, cost) as JSON.
type Worker struct {
	Name       string          `json:"name"`
	State      string          `json:"state"` // ready, draining, disabled, lost
	Registered time.Time       `json:"registered"`
	LastSeen   time.Time       `json:"lastSeen"`
	Spec       json.RawMessage `json:"spec"`
}

// Event is one entry of the durable event log. IDs grow with time, so a
// client resumes a stream from the last ID it saw.
type Event struct {
	ID      int64           `json:"id"`
	At      time.Time       `json:"at"`
	Kind    string          `json:"kind"` // job_submitted, task_started, task_requeued, ...
	Job     string          `json:"job,omitempty"`
	Task    string          `json:"task,omitempty"`
	Worker  string          `json:"worker,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	Message string          `json:"message,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Batch is a set of changes committed in one transaction: upserts of jobs,
// tasks and workers (matched by ID, by job and name, by name), events to
// append, and key/value state (policy usage, queue settings).
type Batch struct {
	Jobs    []Job
	Tasks   []Task
	Workers []Worker
	Events  []Event
	KV      map[string][]byte
}

// Empty reports whether b changes nothing.
func (b *Batch) Empty() bool {
	return len(b.Jobs) == 0 && len(b.Tasks) == 0 && len(b.Workers) == 0 && len(b.Events) == 0 && len(b.KV) == 0
}

// JobFilter selects jobs; zero fields match everything.
type JobFilter struct {
	States []string
	Queue  string
	Share  string
	// AfterSeq pages through jobs in submission order.
	AfterSeq int64
	Limit    int
}

// EventFilter selects events.
type EventFilter struct {
	AfterID int64
	Job     string
	Limit   int
}

// Store is the persistence interface. Every method is safe for concurrent
// use; Commit and CreateJob are called by the one control loop.
type Store interface {
	// CreateJob stores a new job with its tasks and events atomically and
	// returns it with Seq assigned. ErrDuplicate when the ID exists.
	CreateJob(ctx context.Context, j Job, tasks []Task, events []Event) (Job, error)
	// Commit applies a batch in one transaction: all or nothing.
	Commit(ctx context.Context, b Batch) error
	// Job returns a job and its tasks in spec order. ErrNotFound.
	Job(ctx context.Context, id string) (Job, []Task, error)
	// Jobs lists jobs in submission order.
	Jobs(ctx context.Context, f JobFilter) ([]Job, error)
	// Unfinished returns every job that has not ended, with its tasks, in
	// submission order: what the engine is rebuilt from after a restart.
	Unfinished(ctx context.Context) ([]Job, map[string][]Task, error)
	// Events lists events in ID order.
	Events(ctx context.Context, f EventFilter) ([]Event, error)
	// Workers lists registered workers by name.
	Workers(ctx context.Context) ([]Worker, error)
	// KV returns a stored state value. ErrNotFound.
	KV(ctx context.Context, key string) ([]byte, error)
	Close() error
}
