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

// Sentinel errors. Implementations wrap them with context, so callers test
// them with errors.Is.
var (
	// ErrNotFound means the job or key asked for is not stored.
	ErrNotFound = errors.New("not found")
	// ErrDuplicate means CreateJob was given an ID that is already stored.
	ErrDuplicate = errors.New("already exists")
	// ErrInvalid means a write was refused because one of its rows breaks a
	// rule of the store (see Batch): a task of a job that is not stored, an
	// empty ID, name or key, an event without a kind, JSON that does not
	// parse, or a time the store cannot represent. The whole write is
	// refused, never a part of it.
	ErrInvalid = errors.New("invalid")
	// ErrFenced means another server took over as leader: this one must
	// stop writing.
	ErrFenced = errors.New("fenced: another leader holds a newer epoch")
	// ErrUnavailable means a write failed for a cause outside it: the disk
	// is full, the file system is read-only or failing. Nothing of the
	// write was applied, and the same write may succeed later. Errors that
	// wrap it are usually an *UnavailableError, which names the cause.
	ErrUnavailable = errors.New("store unavailable")
	// ErrDamaged means the database file is damaged: its integrity check
	// failed, or it is not a database at all. Only a backup (or a salvage
	// of the file) brings it back.
	ErrDamaged = errors.New("database damaged")
)

// UnavailableError is a write the store could not make, with its cause in a
// few words for the operator ("disk full", "read-only file system", "I/O
// error"). It wraps ErrUnavailable and the error that caused it.
type UnavailableError struct {
	Cause string
	Err   error
}

func (e *UnavailableError) Error() string { return e.Cause + ": " + e.Err.Error() }

// Unwrap lets errors.Is find ErrUnavailable and the underlying error.
func (e *UnavailableError) Unwrap() []error { return []error{ErrUnavailable, e.Err} }

// Cause returns the cause an error of the store names: the Cause of an
// *UnavailableError in its chain, else its message.
func Cause(err error) string {
	var ue *UnavailableError
	if errors.As(err, &ue) {
		return ue.Cause
	}
	return err.Error()
}

// Job states that end a job. A job in any other state is unfinished: the
// engine is rebuilt from those after a restart (Store.Unfinished).
const (
	JobSucceeded = "succeeded"
	JobFailed    = "failed"
	JobCancelled = "cancelled"
)

// JobEnded reports whether a job in the given state has ended, so it is no
// longer part of the scheduling state.
func JobEnded(state string) bool {
	return state == JobSucceeded || state == JobFailed || state == JobCancelled
}

// Job is a stored job. Spec holds the submitted job document (JSON, as
// normalised by the API), so the job can be rebuilt exactly after a restart.
type Job struct {
	ID        string `json:"id"`
	Seq       int64  `json:"seq"` // submission order, assigned by the store
	Queue     string `json:"queue"`
	Share     string `json:"share,omitempty"`
	Requestor string `json:"requestor,omitempty"`
	// Submitter is who submitted the job: the name of the token used
	// (package auth), empty when authentication was off.
	Submitter string          `json:"submitter,omitempty"`
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
	// CPUSeconds and PeakMemory (bytes) are what the last ended attempt
	// used, as its worker measured them; 0 when not measured.
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
	PeakMemory int64   `json:"peakMemory,omitempty"`

	// SecretHash is the SHA-256 digest of the secret the server issued
	// with the current attempt's lease entry: a report for the attempt
	// must carry that secret. Only the digest is stored, so a copy of
	// the database does not let anyone report for a running attempt; nil
	// for an attempt started before attempts had secrets.
	SecretHash []byte `json:"-"`
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

// Token is an API token as stored. The secret itself is never stored: Hash
// is its SHA-256 digest (package auth makes and checks both), so a copy of
// the database does not let anyone call the API. Queues, Shares and Workers
// are the token's scope; nil and empty read back as nil. Tokens are written
// outside Commit, directly, because they are not scheduling state: the
// control loop never reads them.
type Token struct {
	ID      string   `json:"id"`
	Hash    []byte   `json:"-"`
	Name    string   `json:"name,omitempty"`
	Role    string   `json:"role"`
	Queues  []string `json:"queues,omitempty"`
	Shares  []string `json:"shares,omitempty"`
	Workers []string `json:"workers,omitempty"`
	// Limits bound what a submitter's jobs may ask of the scheduler; the
	// zero value is the most restrictive (see TokenLimits).
	Limits  TokenLimits `json:"limits,omitzero"`
	Created time.Time   `json:"created"`
	Expires time.Time   `json:"expires,omitempty"` // zero: never
	Revoked time.Time   `json:"revoked,omitempty"` // zero: not revoked
	// Unreadable says why a stored token's row could not be read back
	// (its scope or limits); empty for a sound row. Such a token is
	// listed, so that a damaged row neither stops a start nor makes the
	// store look empty to the first admin token's bootstrap, but it has no
	// scope and authorises nothing. Never written.
	Unreadable string `json:"-"`
}

// TokenLimits are what a submitter token lets its jobs ask of the
// scheduler beyond a queue and share: the attributes the priority, sla and
// classload policies divide the workers by, and the Unix user a task runs
// as. Package auth decides what they allow (docs/security.md); the store
// keeps them as one JSON document, so a new limit needs no new column. The
// zero value allows the least: priority at most 0, not urgent, no SLA
// group, no user, and no requestor but the token's own name.
type TokenLimits struct {
	MaxPriority int  `json:"maxPriority,omitempty"`
	Urgent      bool `json:"urgent,omitempty"`
	// Requestors, SLAGroups and Users hold exact names, or prefixes
	// written with a trailing "*" ("*" alone: any).
	Requestors []string `json:"requestors,omitempty"`
	SLAGroups  []string `json:"slaGroups,omitempty"`
	Users      []string `json:"users,omitempty"`
}

// IsZero reports whether l is the zero value (all defaults).
func (l TokenLimits) IsZero() bool {
	return l.MaxPriority == 0 && !l.Urgent && len(l.Requestors) == 0 && len(l.SLAGroups) == 0 && len(l.Users) == 0
}

// Batch is a set of changes committed in one transaction: upserts of jobs,
// tasks and workers (matched by ID, by job and name, by name), events to
// append, and key/value state (policy usage, queue settings).
//
// The rules every implementation keeps, so the control loop can rely on them
// (storetest checks each one):
//   - An upsert replaces every field of the stored row, except that a nil
//     Job.Spec or Worker.Spec keeps the stored document: the loop updates a
//     job's state without resending a spec that may be megabytes long. Job.Seq
//     is assigned by the store when the job is first stored and never changed.
//   - A task's job must be stored already or be upserted in the same batch.
//   - Events are appended in slice order and get increasing IDs; Event.ID is
//     ignored on the way in.
//   - A nil KV value deletes the key; any other value (even empty) is stored.
//   - Times are stored as UTC nanoseconds and read back exactly, in UTC; the
//     zero time stays zero. Times before 1678 or after 2262 are ErrInvalid.
//   - JSON fields (Spec, Result, Data) must be valid JSON or nil, and are
//     read back byte for byte; nil or empty reads back as nil. Task.Output is
//     stored as bytes, so any process output round-trips, and so is
//     Task.SecretHash (nil or empty reads back as nil).
//   - Empty Job.ID, Task.Job, Task.Name, Worker.Name, Event.Kind or KV key is
//     ErrInvalid, and so is a task of a job that is not stored.
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
	States []string // any of these states
	Queue  string
	Share  string
	// Queues and Shares, when not empty, keep only jobs whose queue (or
	// share) is one of them, on top of Queue and Share: the API lists a
	// submitter's jobs with the queues and shares its token allows.
	Queues []string
	Shares []string
	// AfterSeq pages through jobs in submission order: pass the Seq of the
	// last job of the previous page.
	AfterSeq int64
	Limit    int // at most this many; 0 or less: all
	// Newest lists the most recently submitted jobs first, as people
	// reading a list want; AfterSeq then pages backwards (jobs submitted
	// before it), and 0 starts at the newest.
	Newest bool
}

// EventFilter selects events.
type EventFilter struct {
	// AfterID resumes a stream: pass the ID of the last event seen.
	AfterID int64
	Job     string
	Limit   int // at most this many; 0 or less: all
}

// Store is the persistence interface. Every method is safe for concurrent
// use; Commit and CreateJob are called by the one control loop.
type Store interface {
	// CreateJob stores a new job with its tasks and events atomically and
	// returns it with Seq assigned (and times in UTC). ErrDuplicate when
	// the ID exists, and then nothing is written. Each task's Job must be
	// j.ID or empty (then j.ID is used); two tasks with one name are
	// ErrInvalid.
	CreateJob(ctx context.Context, j Job, tasks []Task, events []Event) (Job, error)
	// Commit applies a batch in one transaction: all or nothing. When it
	// returns nil the batch is durable (it survives a crash of the process
	// or of the machine). The rules are on Batch.
	Commit(ctx context.Context, b Batch) error
	// Job returns a job and its tasks in spec order, read from one
	// snapshot. ErrNotFound.
	Job(ctx context.Context, id string) (Job, []Task, error)
	// JobHeader returns a job without its tasks: what a caller needs to
	// decide who may see it (queue, share) costs one row, whatever the
	// job's size. ErrNotFound.
	JobHeader(ctx context.Context, id string) (Job, error)
	// Jobs lists jobs in submission order.
	Jobs(ctx context.Context, f JobFilter) ([]Job, error)
	// Unfinished returns every job that has not ended (see JobEnded), in
	// submission order, and the tasks of each by job ID in spec order: what
	// the engine is rebuilt from after a restart. Jobs and tasks come from
	// one consistent snapshot.
	Unfinished(ctx context.Context) ([]Job, map[string][]Task, error)
	// Events lists events in ID order.
	Events(ctx context.Context, f EventFilter) ([]Event, error)
	// Workers lists registered workers by name.
	Workers(ctx context.Context) ([]Worker, error)
	// KV returns a stored state value. ErrNotFound.
	KV(ctx context.Context, key string) ([]byte, error)
	// PutToken stores a new API token. ErrDuplicate when its ID or its
	// hash is stored already, and then nothing is written; ErrInvalid for
	// an empty ID, hash or role, or a time the store cannot represent.
	PutToken(ctx context.Context, t Token) error
	// TokenByHash returns the token whose secret hashes to hash, revoked
	// and expired ones included (the caller decides). ErrNotFound.
	TokenByHash(ctx context.Context, hash []byte) (Token, error)
	// Tokens lists every token, revoked ones included, oldest first (by
	// Created, then ID).
	Tokens(ctx context.Context) ([]Token, error)
	// RevokeToken marks a token revoked at the given time and returns it.
	// Revoking a revoked token keeps the first time. ErrNotFound.
	RevokeToken(ctx context.Context, id string, at time.Time) (Token, error)
	// Close releases the store. Calls after Close return an error.
	Close() error
}
