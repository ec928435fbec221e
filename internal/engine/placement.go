package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/allot-sched/allot/internal/engine/elastic"
	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// This file joins placement (package place, seed 002) to the engine: the
// request a ready task makes, merged batches, stage stickiness, the cache
// hints workers report, and what the elastic coordinator reads.

// PlacementConfig configures how tasks find workers: the dispatcher mode,
// the selection strategy and the adaptive dispatcher's settings, with the
// elastic coordinator's settings carried along for the control loop. See
// docs/placement.md.
type PlacementConfig = place.Config

// UpdateWorkerCache replaces the cache hints a worker reports: the models
// and datasets it holds, each with the time it last reported it (a zero
// time stands for At). An empty map clears them. Context reuse prefers
// workers whose hint of a task's model or dataset is fresher than the cache
// TTL.
type UpdateWorkerCache struct {
	Name   string
	Cached map[string]time.Time
	At     time.Time
}

func (UpdateWorkerCache) event() {}

// Deferral records a ready task held back this cycle although it might have
// run elsewhere: it waits for the worker that ran its StickTo parent (stage
// stickiness). The control plane counts these as requeues with the reason.
type Deferral struct {
	Job    string       `json:"job"`
	Task   string       `json:"task"`
	Worker string       `json:"worker"`
	Reason model.Reason `json:"reason"`
}

// batch is a merged batch: tasks of one job stage sharing a model that run
// together on one worker slot. The head holds the slot; the members ride
// along and end with it unless reported on their own.
type batch struct {
	head    *task
	members []*task
}

// member reports whether t rides in another task's batch.
func (t *task) member() bool { return t.batch != nil && t.batch.head != t }

// applyPlacement applies the placement events; handled is false for other
// events.
func (e *Engine) applyPlacement(ev Event) (handled bool, err error) {
	switch ev := ev.(type) {
	case UpdateWorkerCache:
		w, ok := e.fleet.Worker(ev.Name)
		if !ok {
			return true, fmt.Errorf("%w %q", ErrUnknownWorker, ev.Name)
		}
		at := e.advance(ev.At)
		cached := make(map[string]time.Time, len(ev.Cached))
		for name, t := range ev.Cached {
			if name == "" {
				return true, fmt.Errorf("worker %q: cached: %w: an empty name", ev.Name, ErrInvalid)
			}
			if t.IsZero() {
				t = at
			}
			cached[name] = t
		}
		e.fleet.SetCached(w, cached)
		return true, nil
	}
	return false, nil
}

// request fills r with the placement request of ready task t.
func (e *Engine) request(r *place.Request, t *task) {
	j := t.job
	if j.hash == 0 {
		j.hash = place.TaskHash(j.id, "") | 1
	}
	spec := t.spec
	*r = place.Request{Shape: t.shape, Job: j.id, Task: spec.Name, Category: spec.Category,
		Model: spec.Model, Dataset: spec.Dataset, Now: e.now,
		// The task's identity for the jitter: its job and its position
		// there, as stable as its name and cheaper to hash.
		Hash: j.hash ^ uint64(t.idx+1)*0x9e3779b97f4a7c15}
	switch e.fleet.Mode() {
	case place.FixedPipeline:
		r.Type = taskType(spec)
	case place.Adaptive:
		if spec.StickTo != "" && e.fleet.Sticky() {
			if p := j.byName[spec.StickTo]; p != nil && p.lastWorker != nil {
				r.Sticky, r.StickTo = p.lastWorker, p.spec.Name
			}
		}
	}
}

// taskType is a task's type in the fixed-pipeline mode: its stage (the
// job-spec entry it came from), qualified by its model when it names one,
// so that "train" of two different models are two types.
func taskType(t *model.Task) string {
	if t.Model == "" {
		return t.StageName()
	}
	return t.StageName() + "@" + t.Model
}

// placed tells placement that t now runs on w (bindings, the round-robin
// turn); start and restore call it.
func (e *Engine) placed(t *task, w *place.Worker) {
	if e.fleet.Mode() == place.Adaptive {
		return // nothing to remember
	}
	r := place.Request{Job: t.job.id, Task: t.spec.Name, Type: taskType(t.spec)}
	e.fleet.Started(&r, w)
}

// merge starts, as members of t's batch on t's worker, the next ready tasks
// of t's job that share its stage, model and requirements, up to the
// configured batch size and the job's slot limit. t has just started.
func (e *Engine) merge(t *task, info place.Info, now time.Time, d *Decisions) {
	limit := e.fleet.MergeMax()
	if limit < 2 || t.spec.Model == "" || t.gang != nil {
		return // a gang's tasks each hold a slot
	}
	j := t.job
	head := len(d.Starts) - 1
	info.Via = place.ViaMerged
	for n := 1; n < limit && j.ready.Len() > 0; n++ {
		m := j.ready.items[0]
		if m.shape != t.shape || m.spec.Model != t.spec.Model || m.spec.StageName() != t.spec.StageName() ||
			m.spec.StickTo != "" && e.fleet.Sticky() || j.maxSlots > 0 && j.running >= j.maxSlots {
			break
		}
		j.ready.pop()
		j.g.waiting--
		e.occupyMember(m, t, now)
		j.g.starts++
		d.Starts = append(d.Starts, Start{Job: j.id, Task: m.spec.Name, Worker: t.worker.Spec.Name, Attempt: m.attempt,
			Batch: t.spec.Name, GPUs: d.Starts[head].GPUs, Placement: info})
	}
	if t.batch != nil {
		d.Starts[head].Batch = t.spec.Name
	}
}

// occupyMember runs m in head's batch: it is running on head's worker but
// holds no slot of its own, so the fleet and the policy see the batch as
// the one task it occupies a slot as.
func (e *Engine) occupyMember(m, head *task, now time.Time) {
	e.startOn(m, head.worker, now)
	if head.batch == nil {
		head.batch = &batch{head: head}
	}
	head.batch.members = append(head.batch.members, m)
	m.batch = head.batch
}

// releaseMember takes batch member t off its worker; it held no slot.
func (e *Engine) releaseMember(t *task) {
	j := t.job
	e.offWorker(t)
	b := t.batch
	if i := slices.Index(b.members, t); i >= 0 {
		b.members = slices.Delete(b.members, i, i+1)
	}
	t.batch = nil
	j.running--
	if j.heapPos >= 0 && j.q.jobOrder == policy.ByFewestRunning {
		j.g.jobs.fix(j.heapPos)
	}
	t.worker = nil
	e.tally(j)
}

// runningMembers returns the members still riding in head's batch.
func runningMembers(head *task) []*task {
	if head.batch == nil || head.batch.head != head {
		return nil
	}
	return slices.Clone(head.batch.members)
}

// finishBatch applies a worker's report; a report on the head of a merged
// batch ends the members still running with the same outcome, each naming
// the head as its parent.
func (e *Engine) finishBatch(ev FinishTask, now time.Time) error {
	t, err := e.lookup(ev.Job, ev.Task)
	if err != nil {
		return err
	}
	var members []*task
	if t.state == model.TaskRunning {
		members = runningMembers(t)
	}
	if err := e.finish(ev, now); err != nil {
		return err
	}
	if members != nil {
		t.batch = nil
	}
	for _, m := range members {
		if m.state == model.TaskRunning && m.batch != nil && m.batch.head == t {
			e.endMember(m, t, ev, now)
		}
	}
	return nil
}

// endMember ends batch member m because its head ended with ev's outcome.
func (e *Engine) endMember(m, head *task, ev FinishTask, now time.Time) {
	j := m.job
	worker := m.worker.Spec.Name
	e.release(m, now)
	parent := head.spec.Name
	msg := ev.Message
	if msg == "" {
		msg = "the task reported a failure"
	}
	te := TaskEnd{Job: j.id, Task: m.spec.Name, Worker: worker, Parent: parent}
	switch ev.Outcome {
	case model.Succeeded:
		e.end(m, model.TaskSucceeded, model.Reason{}, worker)
		te.State = model.TaskSucceeded
		te.Reason = model.Because(model.ReasonBatchDone, "ended with merged batch %q", parent)
		e.ended = append(e.ended, te)
		for _, c := range m.children {
			child := j.tasks[c]
			child.unmet--
			if child.unmet == 0 && child.state == model.TaskBlocked {
				e.makeReady(child)
			}
		}
	case model.Failed:
		m.fails++
		limit := max(1, m.spec.MaxAttempts)
		if m.fails < limit {
			e.makeReady(m)
			te.State = model.TaskReady
			te.Reason = model.Because(model.ReasonRetry, "attempt %d of %d failed: merged batch %q failed: %s; retrying", m.fails, limit, parent, msg)
			e.ended = append(e.ended, te)
			return
		}
		e.end(m, model.TaskFailed, model.Because(model.ReasonBatchFailure, "attempt %d of %d failed: merged batch %q failed: %s", m.fails, limit, parent, msg), worker)
		e.ended[len(e.ended)-1].Parent = parent
		e.cascade(m)
	case model.Requeued:
		e.makeReady(m)
		te.State = model.TaskReady
		te.Reason = model.Because(requeueCode(ev), "requeued with merged batch %q: %s", parent, ev.Message)
		e.ended = append(e.ended, te)
	}
}

// stopMembers stops the members of a batch whose head a policy stopped,
// for the same reason; they wait again.
func (e *Engine) stopMembers(members []*task, r model.Reason, now time.Time, d *Decisions) {
	for _, m := range members {
		if m.state != model.TaskRunning {
			continue
		}
		worker := m.worker.Spec.Name
		e.release(m, now)
		e.makeReady(m)
		m.job.g.stops++
		d.Stops = append(d.Stops, Stop{Job: m.job.id, Task: m.spec.Name, Worker: worker, Reason: r})
	}
}

// setWorkerState changes a worker's state and notes when.
func (e *Engine) setWorkerState(w *place.Worker, s model.WorkerState, at time.Time) {
	if w.Spec.State != s {
		w.StateSince = at
	}
	e.fleet.SetState(w, s)
}

// WorkerStatus is a worker as metrics and the elastic coordinator see it.
type WorkerStatus struct {
	Name        string            `json:"name"`
	State       model.WorkerState `json:"state"`
	Slots       int               `json:"slots"`
	Running     int               `json:"running"`
	CostPerHour float64           `json:"costPerHour"`
	// IdleSince is when the worker last became idle (registration, or the
	// end of its last task); StateSince when its state last changed, zero
	// if never.
	IdleSince  time.Time `json:"idleSince"`
	StateSince time.Time `json:"stateSince,omitzero"`
	// BoundTo is the job the worker is reserved for in the static-worker
	// mode.
	BoundTo string `json:"boundTo,omitempty"`
}

// Workers lists the registered workers in registration order.
func (e *Engine) Workers() []WorkerStatus {
	var out []WorkerStatus
	for _, w := range e.fleet.Workers() {
		if w.Gone() {
			continue
		}
		out = append(out, WorkerStatus{Name: w.Spec.Name, State: w.Spec.State, Slots: w.Spec.Slots, Running: w.Running,
			CostPerHour: w.Spec.CostPerHour, IdleSince: w.IdleSince, StateSince: w.StateSince, BoundTo: w.BoundTo()})
	}
	return out
}

// ElasticWorkers lists the registered workers as the elastic coordinator
// reads them; a state change counts as the last toggle.
func (e *Engine) ElasticWorkers() []elastic.Worker {
	ws := e.Workers()
	out := make([]elastic.Worker, len(ws))
	for i, w := range ws {
		out[i] = elastic.Worker{Name: w.Name, State: w.State, Slots: w.Slots, Running: w.Running,
			IdleSince: w.IdleSince, LastToggle: w.StateSince}
	}
	return out
}

// ReadyTasks is the length of the ready queue: admitted tasks whose
// dependencies succeeded and that do not run, over all queues. The elastic
// coordinator compares it with its thresholds.
func (e *Engine) ReadyTasks() int {
	n := 0
	for _, q := range e.queues {
		for _, g := range q.groups {
			n += g.waiting
		}
	}
	return n
}
