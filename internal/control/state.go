package control

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control/hook"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// liveJob is an unfinished job as the loop tracks it: its stored record, its
// spec (to build leases) and its tasks' records.
type liveJob struct {
	rec   store.Job
	spec  spec.Job
	model model.Job
	tasks map[string]*store.Task
	// entry maps an expanded task name to the spec entry it came from.
	entry map[string]*spec.Task
	// refs caches, per spec entry, the tasks whose results it references.
	refs map[*spec.Task][]string
}

// references lists the tasks whose results entry references in its run,
// command or env, computed once per entry.
func (lj *liveJob) references(entry *spec.Task) []string {
	if refs, ok := lj.refs[entry]; ok {
		return refs
	}
	refs := spec.References(entry.Run)
	for _, arg := range entry.Command {
		refs = append(refs, spec.References(arg)...)
	}
	for _, v := range entry.Env {
		refs = append(refs, spec.References(v)...)
	}
	if lj.refs == nil {
		lj.refs = map[*spec.Task][]string{}
	}
	lj.refs[entry] = refs
	return refs
}

// liveWorker is a registered worker as the loop tracks it.
type liveWorker struct {
	rec store.Worker
	reg api.Register
	// recovered is set for a worker rebuilt from the store at start-up
	// that has not registered again since: the engine holds it disabled
	// (it keeps its running tasks but takes no new ones) until it does,
	// because only its registration says what it still runs. The time is
	// when the wait began, for the heartbeat timeout.
	recovered time.Time
	// leaving is set once the worker said it shuts down (a Stopping
	// notice, or a report of an attempt it stopped itself): the engine
	// holds it draining, whatever its state, until it leaves or
	// registers again.
	leaving bool
}

// workerLost is the stored state of a worker declared lost: it is no
// longer in the engine, and registering again brings it back as new.
const workerLost = "lost"

// mailbox holds what the loop decided for one worker until the worker's
// lease request takes it. It is guarded by Controller.mu.
type mailbox struct {
	assign   []api.Assignment
	stops    []api.StopOrder
	wake     chan struct{} // buffered 1: "something arrived"
	lastSeen time.Time
	// handed lists the attempts of lease answers not yet confirmed by the
	// worker's next lease request (api.LeaseRequest.Running); nil while
	// the worker does not send that list.
	handed []api.Attempt
}

func newMailbox(now time.Time) *mailbox {
	return &mailbox{wake: make(chan struct{}, 1), lastSeen: now}
}

// txn collects the changes of one loop round: records to upsert, events to
// append, and what to hand to workers once the commit succeeded.
type txn struct {
	c       *Controller
	now     time.Time
	changed bool // the engine saw an event: run a cycle
	batch   store.Batch

	jobs     []*store.Job
	created  map[*store.Job]bool // jobs first stored in this round
	tasks    []*store.Task
	touched  map[any]bool
	assign   map[string][]api.Assignment
	stops    map[string][]api.StopOrder
	finished []string
	newBoxes map[string]*mailbox
	// measured holds what reports of this round measured, until the
	// attempts' accounting records are written (accounting.go).
	measured map[*store.Task]measured
}

func (t *txn) touchJob(j *store.Job) {
	if t.touched == nil {
		t.touched = map[any]bool{}
	}
	if !t.touched[j] {
		t.touched[j] = true
		t.jobs = append(t.jobs, j)
	}
}

func (t *txn) touchTask(r *store.Task) {
	if t.touched == nil {
		t.touched = map[any]bool{}
	}
	if !t.touched[r] {
		t.touched[r] = true
		t.tasks = append(t.tasks, r)
	}
}

// flush copies the touched records into the batch, once, in touch order.
func (t *txn) flush() {
	for _, j := range t.jobs {
		rec := *j
		if !t.created[j] {
			rec.Spec = nil // the store keeps the spec it has
		}
		t.batch.Jobs = append(t.batch.Jobs, rec)
	}
	for _, r := range t.tasks {
		t.batch.Tasks = append(t.batch.Tasks, *r)
		if t.endedNow(r) {
			t.recordAttempt(r)
		}
		if r.State != string(model.TaskRunning) {
			t.c.unindexRunning(r)
		}
	}
	t.jobs, t.tasks, t.touched = nil, nil, nil
}

func (t *txn) event(kind, job, task, worker string, r model.Reason, data any) {
	e := store.Event{At: t.now, Kind: kind, Job: job, Task: task, Worker: worker, Reason: r.Code, Message: r.Message}
	switch d := data.(type) {
	case nil:
	case json.RawMessage:
		e.Data = d
	default:
		if b, err := json.Marshal(data); err == nil {
			e.Data = b
		}
	}
	t.batch.Events = append(t.batch.Events, e)
}

// attemptData is the data of task_started and task_succeeded events,
// written without a trip through encoding/json: there is one per task
// start and end.
func attemptData(n int) json.RawMessage {
	b := make([]byte, 0, 16)
	b = append(b, `{"attempt":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '}')
}

func (t *txn) kv(key string, value []byte) {
	if t.batch.KV == nil {
		t.batch.KV = map[string][]byte{}
	}
	t.batch.KV[key] = value
}

// The round as the loop's features see it (hook.Round, features.go).

// Now is the round's time.
func (t *txn) Now() time.Time { return t.now }

// Events lists the events the round appends so far.
func (t *txn) Events() []store.Event { return t.batch.Events }

// Event appends an event to the round's log.
func (t *txn) Event(kind, job, task, worker string, r model.Reason) {
	t.event(kind, job, task, worker, r, nil)
}

// KV writes a key in the round's transaction.
func (t *txn) KV(key string, value []byte) { t.kv(key, value) }

// Queues lists the queues with the policy in force.
func (t *txn) Queues() []engine.QueueConfig { return t.c.engCfg.Queues }

// Engine reads the engine.
func (t *txn) Engine() hook.Engine { return t.c.eng }

// JobTasks is how many tasks an unfinished job has.
func (t *txn) JobTasks(job string) int {
	if lj := t.c.jobs[job]; lj != nil {
		return len(lj.tasks)
	}
	return 0
}

// BusyWorkers is how many workers run a task: exact once the round's
// records are flushed.
func (t *txn) BusyWorkers() int { return len(t.c.running) }

// Event kinds of the event log.
const (
	EventJobSubmitted     = hook.EventJobSubmitted
	EventJobEnded         = "job_ended"
	EventTaskStarted      = hook.EventTaskStarted
	EventTaskSucceeded    = "task_succeeded"
	EventTaskFailed       = "task_failed"
	EventTaskRetry        = "task_retry"
	EventTaskRequeued     = "task_requeued"
	EventTaskPreempted    = "task_preempted"
	EventTaskCancelled    = "task_cancelled"
	EventTaskDeferred     = hook.EventTaskDeferred
	EventWorkerRegistered = "worker_registered"
	EventWorkerLost       = "worker_lost"
	EventWorkerState      = "worker_state"
	EventPolicyChanged    = "policy_changed"
	EventPriorityChanged  = "priority_changed"
	// EventRowQuarantined says a stored row could not be read back at a
	// start and was set aside; its reason is the kind of row: job,
	// worker or setting.
	EventRowQuarantined = "row_quarantined"
	// Admission against endpoint capacity (docs/endpoints.md).
	EventJobAdmitted       = "job_admitted"
	EventJobThrottled      = "job_throttled"
	EventJobDeadLettered   = "job_dead_lettered"
	EventJobRedriven       = "job_redriven"
	EventEndpointChanged   = "endpoint_changed"
	EventEndpointRemoved   = "endpoint_removed"
	EventThrottlingChanged = "throttling_changed"
)

// EventReportRefused records a worker's report refused because it did not
// carry the secret of the attempt it named (secret.go): a forgery, or a
// broken agent.
const EventReportRefused = "report_refused"
