// Package engine is Allot's scheduler: a pure, deterministic state machine.
// It takes events (a job submitted, a task finished, a worker joined) through
// Apply and, on Cycle(now), returns Decisions: tasks to start and where, tasks
// to stop and why, and a reason for every task still pending. It reads no
// clock, does no I/O and starts no goroutines; randomness comes from the seed
// in its Config. The server and the simulator drive the same code.
package engine

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// Config configures an engine.
type Config struct {
	// Seed feeds every random choice (variant selection, jitter), so a run
	// can be replayed.
	Seed      uint64
	Queues    []QueueConfig
	Placement PlacementConfig
	// LazyPending leaves Decisions.Pending empty; Pending builds the list on
	// demand. Listing every waiting job costs time in proportion to the
	// backlog on every cycle, which neither a simulator replaying a trace
	// nor a server needs: the reasons themselves are kept either way
	// (TaskReason, Pending, PendingOf for one job), and so are the counts
	// of waiting tasks by reason (PendingSummary).
	LazyPending bool
	// Admission holds the endpoints jobs are admitted against and the
	// throttling settings (seed 000); start from admit.Defaults(). Its
	// zero value has no endpoints and admits every job at once.
	Admission admit.Config
}

// QueueConfig is one queue: where jobs wait, under one policy, for workers of
// one pool.
type QueueConfig struct {
	Name string
	// Priority orders queues whose pools overlap: a higher priority queue
	// takes free slots first.
	Priority int
	// Pool selects the workers this queue may use; empty selects all.
	Pool   model.Selector
	Policy policy.Config
}

// Engine is the scheduler state. It is not safe for concurrent use: one
// goroutine (the control loop, or the simulator) owns it.
type Engine struct {
	fleet    *place.Fleet
	queues   []*queue
	queueBy  map[string]*queue
	jobs     map[string]*job
	active   []*job // unfinished jobs in submission order; ended ones dropped each cycle
	tasks    []*task
	rng      *rand.Rand
	seq      uint64
	startSeq uint64
	cycle    uint64
	now      time.Time
	ended    []TaskEnd
	stops    []Stop
	jobsDone []JobEnd
	// onWorker heads the list of running tasks of each worker (linked
	// through the tasks), by place.Worker.Idx, so removing a worker does
	// not walk every task and starting a task allocates nothing.
	onWorker []*task
	// pendingHint is the number of Pending entries of the last cycle.
	pendingHint int
	lazyPending bool
	// endedSinceCompact counts jobs that ended since the active list was
	// last compacted.
	endedSinceCompact int
	// adm is the admission stage: endpoints, throttling, dead letters.
	adm admission
	// affinity holds, per job, the workers that ran its tasks, under
	// policies that ask for intrinsic affinity (affinity.go).
	affinity map[*job]*place.Affinity
	// pend counts the waiting tasks as jobs change (pendcount.go).
	pend pendingTally
	// reservations are the capacity held for waiting gangs in the
	// current cycle (gang.go).
	reservations []*reservation
	// held lists the held jobs (hold.go).
	held map[*job]struct{}
	// dependents lists, by job ID, the jobs waiting for that job
	// (jobdeps.go); startedJobs the jobs whose first task started since the
	// last cycle and that other jobs wait for.
	dependents  map[string][]jobWait
	startedJobs []*job
	// gpus holds, by place.Worker.Idx, which task holds each GPU device
	// of the worker (devices.go); nil for a worker without GPUs.
	gpus []*gpuBook
	// gpuSlab is the block the device lists of starting tasks are cut
	// from (devices.go).
	gpuSlab []int
}

// New builds an engine from cfg.
func New(cfg Config) (*Engine, error) {
	fleet, err := place.NewFleetConfig(cfg.Placement)
	if err != nil {
		return nil, model.FieldErrorsOf("placement", err)
	}
	e := &Engine{
		fleet:       fleet,
		queueBy:     map[string]*queue{},
		jobs:        map[string]*job{},
		rng:         rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		lazyPending: cfg.LazyPending,
	}
	if len(cfg.Queues) == 0 {
		return nil, model.Invalid("queues", "at least one queue is required")
	}
	if err := e.initAdmission(cfg); err != nil {
		return nil, err
	}
	for i, qc := range cfg.Queues {
		if qc.Name == "" {
			return nil, model.Invalid(fmt.Sprintf("queues[%d].name", i), "required")
		}
		if _, dup := e.queueBy[qc.Name]; dup {
			return nil, model.Invalid(fmt.Sprintf("queues[%d].name", i), "queue %q is defined twice", qc.Name)
		}
		q := &queue{name: qc.Name, priority: qc.Priority, pool: qc.Pool, groups: map[string]*group{}}
		if err := e.setPolicy(q, qc.Policy, time.Time{}); err != nil {
			// Policy errors name a field of the policy block.
			return nil, model.FieldErrorOf(fmt.Sprintf("queues[%d].policy", i), err)
		}
		e.queues = append(e.queues, q)
		e.queueBy[q.name] = q
	}
	sort.SliceStable(e.queues, func(i, j int) bool {
		if e.queues[i].priority != e.queues[j].priority {
			return e.queues[i].priority > e.queues[j].priority
		}
		return e.queues[i].name < e.queues[j].name
	})
	return e, nil
}

// Now returns the latest time the engine has seen.
func (e *Engine) Now() time.Time { return e.now }

func (e *Engine) advance(t time.Time) time.Time {
	if t.IsZero() || t.Before(e.now) {
		return e.now
	}
	e.now = t
	return t
}

// Apply applies one event. A rejected event changes nothing.
func (e *Engine) Apply(ev Event) error {
	switch ev := ev.(type) {
	case SubmitJob:
		return e.submit(ev.Job, ev.Others)
	case CancelJob:
		return e.cancel(ev.Job, e.advance(ev.At))
	case CancelTask:
		return e.cancelTask(ev, e.advance(ev.At))
	case RequeueTasks:
		return e.requeue(ev, e.advance(ev.At))
	case FinishTask:
		return e.finishBatch(ev, e.advance(ev.At))
	case RestoreRunning:
		return e.restore(ev)
	case RestoreTask:
		return e.restoreTask(ev)
	case AddWorker:
		if !knownWorkerState(ev.Worker.State) && ev.Worker.State != "" {
			return fmt.Errorf("worker %q: state: %w worker state %q", ev.Worker.Name, ErrInvalid, ev.Worker.State)
		}
		if err := checkGPUDevices(&ev.Worker, ev.GPUDevices); err != nil {
			return err
		}
		w, err := e.fleet.Add(ev.Worker)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrDuplicate, err)
		}
		w.IdleSince = e.advance(ev.At)
		for len(e.onWorker) <= w.Idx {
			e.onWorker = append(e.onWorker, nil)
		}
		e.addGPUBook(w, ev.GPUDevices)
		return nil
	case RemoveWorker:
		return e.removeWorker(ev, e.advance(ev.At))
	case SetWorkerState:
		w, ok := e.fleet.Worker(ev.Name)
		if !ok {
			return fmt.Errorf("%w %q", ErrUnknownWorker, ev.Name)
		}
		if !knownWorkerState(ev.State) {
			return fmt.Errorf("worker %q: state: %w worker state %q", ev.Name, ErrInvalid, ev.State)
		}
		e.advance(ev.At)
		if ev.NoToggle {
			e.fleet.SetState(w, ev.State)
			return nil
		}
		e.setWorkerState(w, ev.State, e.now)
		return nil
	case SetPolicy:
		q, ok := e.queueBy[ev.Queue]
		if !ok {
			return fmt.Errorf("%w %q", ErrUnknownQueue, ev.Queue)
		}
		return e.setPolicy(q, ev.Policy, e.advance(ev.At))
	case SetHistory:
		q, ok := e.queueBy[ev.Queue]
		if !ok {
			return fmt.Errorf("%w %q", ErrUnknownQueue, ev.Queue)
		}
		at := e.advance(ev.At)
		if !ev.At.IsZero() {
			// History stored before a restart is as of then: the
			// policy ages it from then (fairshare decays it).
			at = ev.At
		}
		if h, ok := q.pol.(policy.HistoryTaker); ok {
			h.SetHistory(ev.History, at)
		}
		return nil
	case ForgetJob:
		return e.forget(ev.Job)
	case SetJobPriority:
		j, ok := e.jobs[ev.Job]
		if !ok {
			return fmt.Errorf("%w %q", ErrUnknownJob, ev.Job)
		}
		j.spec.Priority, j.spec.Urgent = ev.Priority, ev.Urgent
		if j.heapPos >= 0 {
			j.g.jobs.fix(j.heapPos)
		}
		return nil
	}
	if handled, err := e.applyPlacement(ev); handled {
		return err
	}
	if handled, err := e.applyAdmission(ev); handled {
		return err
	}
	if handled, err := e.applyHold(ev); handled {
		return err
	}
	return fmt.Errorf("%w event %T", ErrInvalid, ev)
}

// knownWorkerState reports whether s is a state placement understands; any
// other value would leave a worker counted as ready but taking nothing.
func knownWorkerState(s model.WorkerState) bool {
	return s == model.WorkerReady || s == model.WorkerDraining || s == model.WorkerDisabled
}

// setPolicy installs a policy on q and regroups q's jobs under it. The new
// policy is told about the tasks already running, at time at.
func (e *Engine) setPolicy(q *queue, cfg policy.Config, at time.Time) error {
	pol, err := policy.New(cfg)
	if err != nil {
		return err
	}
	q.pol = pol
	q.dominant = nil
	if d, ok := pol.(policy.DominantPolicy); ok && policy.Usage(cfg.Usage) == policy.UsageDominant {
		q.dominant = d
	}
	q.jobOrder, q.tskOrder = pol.Order()
	old := q.groups
	q.groups = map[string]*group{}
	if len(old) == 0 {
		return nil
	}
	for _, j := range e.active {
		if j.q != q || j.done {
			continue
		}
		g := q.group(pol.GroupOf(j.spec))
		j.g = g
		j.heapPos = -1
		j.ready.order = q.tskOrder
		j.ready.init()
		g.members = append(g.members, j)
		if j.maxSlots > 0 {
			g.limited++
		}
		for _, t := range j.tasks {
			switch t.state {
			case model.TaskRunning:
				g.addRunning(t)
				pol.Account(g.key, 1, at)
				if q.dominant != nil {
					q.dominant.AccountAmounts(g.key, model.AmountsOf(t.spec.Resources), e.capacity(q), at)
				}
			case model.TaskReady:
				if j.admitted {
					g.waiting++
				}
			}
		}
		g.push(j)
		e.tally(j)
	}
	return nil
}

// submit adds a job after checking what the engine relies on.
func (e *Engine) submit(spec model.Job, others []OtherJob) error {
	if _, dup := e.jobs[spec.ID]; dup {
		return fmt.Errorf("job %q: %w", spec.ID, ErrDuplicate)
	}
	if _, dead := e.adm.dead[spec.ID]; dead {
		// Its ID stays taken until it is redriven.
		return fmt.Errorf("job %q: %w (on the dead-letter list)", spec.ID, ErrDuplicate)
	}
	q, ok := e.queueBy[spec.Queue]
	if !ok {
		return fmt.Errorf("job %q: queue: %w %q", spec.ID, ErrUnknownQueue, spec.Queue)
	}
	if len(spec.Tasks) == 0 {
		return fmt.Errorf("job %q: tasks: %w: a job needs at least one task", spec.ID, ErrInvalid)
	}
	if err := e.checkAdmission(&spec); err != nil {
		return err
	}
	sel, ok := q.pool.Merge(spec.Selector)
	if !ok {
		return fmt.Errorf("job %q: selector: %w: contradicts the pool of queue %q", spec.ID, ErrInvalid, q.name)
	}
	js := spec
	js.Tasks = append([]model.Task(nil), spec.Tasks...)
	j := &job{id: js.ID, maxSlots: js.MaxSlots, spec: &js, q: q, byName: make(map[string]*task, len(js.Tasks)), heapPos: -1, left: len(js.Tasks)}
	j.ready.order = q.tskOrder
	// One allocation for all of the job's tasks: fewer, denser objects for
	// the garbage collector and the cycle to walk.
	records := make([]task, len(js.Tasks))
	j.tasks = make([]*task, len(js.Tasks))
	needs := false
	for i := range js.Tasks {
		ts := &js.Tasks[i]
		if _, dup := j.byName[ts.Name]; dup {
			return fmt.Errorf("job %q: tasks[%d].name: %w: task %q is defined twice", spec.ID, i, ErrInvalid, ts.Name)
		}
		t := &records[i]
		*t = task{idx: i, job: j, spec: ts, state: model.TaskBlocked, heapPos: -1, runPos: -1}
		j.tasks[i] = t
		j.byName[ts.Name] = t
		needs = needs || len(ts.Needs) > 0
	}
	for i, t := range j.tasks {
		for k, need := range t.spec.Needs {
			p, ok := j.byName[need]
			if !ok {
				return fmt.Errorf("job %q: tasks[%d].needs[%d]: %w: no task %q in this job", spec.ID, i, k, ErrInvalid, need)
			}
			p.children = append(p.children, i)
			t.unmet++
		}
	}
	if needs {
		if cyc := findCycle(j); cyc != "" {
			return fmt.Errorf("job %q: needs: %w: dependency cycle %s", spec.ID, ErrInvalid, cyc)
		}
	}
	if err := formGangs(j); err != nil {
		return err
	}
	deps, err := e.checkDependencies(&js, others)
	if err != nil {
		return err
	}
	// Committed from here on: the job is valid.
	e.seq++
	j.seq = e.seq
	var shape *place.Shape
	for _, t := range j.tasks {
		t.id = len(e.tasks)
		e.tasks = append(e.tasks, t)
		// Tasks of a job mostly ask for the same resources; reuse the
		// previous task's shape rather than interning it again.
		if shape == nil || shape.Req != t.spec.Resources {
			shape = e.fleet.Shape(t.spec.Resources, sel)
		}
		t.shape = shape
	}
	e.jobs[js.ID] = j
	e.active = append(e.active, j)
	j.g = q.group(q.pol.GroupOf(j.spec))
	j.g.members = append(j.g.members, j)
	if j.maxSlots > 0 {
		j.g.limited++
	}
	e.advance(js.Submitted)
	if e.holdForDependencies(j, deps) {
		e.enqueue(j)
	}
	e.tally(j)
	return nil
}

// admit lets a job's tasks become ready. Jobs without an endpoint are
// admitted at once.
func (e *Engine) admit(j *job) {
	j.admitted = true
	for _, t := range j.tasks {
		if t.state == model.TaskBlocked && t.unmet == 0 {
			e.queueReady(t)
		}
	}
	e.tally(j) // once for all the tasks made ready
}

// makeReady makes a task ready to run.
func (e *Engine) makeReady(t *task) {
	e.queueReady(t)
	e.tally(t.job)
}

// queueReady is makeReady without the count of waiting tasks, which the
// caller brings up to date.
func (e *Engine) queueReady(t *task) {
	t.state = model.TaskReady
	t.readyAt = e.now
	j := t.job
	j.ready.push(t)
	j.g.waiting++
	j.g.push(j)
}

// findCycle returns a dependency cycle of j as "a → b → a" (each task
// followed by one that needs it), or "". It is a depth-first search with
// colours on an explicit stack: linear in tasks and dependencies, and a
// chain of 100,000 tasks does not nest 100,000 calls.
func findCycle(j *job) string {
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(j.tasks))
	type frame struct{ task, next int } // next: the index of the child to visit next
	var stack []frame
	for root := range j.tasks {
		if color[root] != white {
			continue
		}
		color[root] = grey
		stack = append(stack[:0], frame{task: root})
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			children := j.tasks[top.task].children
			if top.next == len(children) {
				color[top.task] = black
				stack = stack[:len(stack)-1]
				continue
			}
			c := children[top.next]
			top.next++
			switch color[c] {
			case grey:
				start := 0
				for k, f := range stack {
					if f.task == c {
						start = k
					}
				}
				var path strings.Builder
				for _, f := range stack[start:] {
					path.WriteString(j.tasks[f.task].spec.Name + " → ")
				}
				return path.String() + j.tasks[c].spec.Name
			case white:
				color[c] = grey
				stack = append(stack, frame{task: c})
			}
		}
	}
	return ""
}

func (e *Engine) lookup(jobID, taskName string) (*task, error) {
	j, ok := e.jobs[jobID]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownJob, jobID)
	}
	t, ok := j.byName[taskName]
	if !ok {
		return nil, fmt.Errorf("job %q: %w %q", jobID, ErrUnknownTask, taskName)
	}
	return t, nil
}

// finish applies a worker's report about a running task.
func (e *Engine) finish(ev FinishTask, now time.Time) error {
	t, err := e.lookup(ev.Job, ev.Task)
	if err != nil {
		return err
	}
	if t.state != model.TaskRunning {
		return fmt.Errorf("job %q task %q: %w (state %s)", ev.Job, ev.Task, ErrNotRunning, t.state)
	}
	worker := t.worker.Spec.Name
	e.release(t, now)
	switch ev.Outcome {
	case model.Succeeded:
		e.end(t, model.TaskSucceeded, model.Reason{}, worker)
		for _, c := range t.children {
			child := t.job.tasks[c]
			child.unmet--
			if child.unmet == 0 && child.state == model.TaskBlocked {
				e.makeReady(child)
			}
		}
	case model.Failed:
		t.fails++
		max := t.spec.MaxAttempts
		if max < 1 {
			max = 1
		}
		msg := ev.Message
		if msg == "" {
			msg = "the task reported a failure"
		}
		if t.fails < max {
			e.makeReady(t)
			e.ended = append(e.ended, TaskEnd{Job: ev.Job, Task: ev.Task, Worker: worker, State: model.TaskReady,
				Reason: model.Because(model.ReasonRetry, "attempt %d of %d failed: %s; retrying", t.fails, max, msg)})
			e.gangLost(t, now, &e.stops)
			return nil
		}
		e.end(t, model.TaskFailed, model.Because(model.ReasonFailed, "attempt %d of %d failed: %s", t.fails, max, msg), worker)
		e.cascade(t)
		e.gangFailed(t, now)
	case model.Requeued:
		e.makeReady(t)
		r := model.Because(requeueCode(ev), "requeued: %s", ev.Message)
		e.ended = append(e.ended, TaskEnd{Job: ev.Job, Task: ev.Task, Worker: worker, State: model.TaskReady, Reason: r})
		e.gangLost(t, now, &e.stops)
	default:
		return fmt.Errorf("%w outcome %q", ErrInvalid, ev.Outcome)
	}
	return nil
}

// cascade fails every task that depends, directly or not, on the failed task
// t, naming the parent that failed.
func (e *Engine) cascade(t *task) {
	// Depth first, on an explicit stack: a chain of 100,000 tasks must not
	// nest 100,000 calls.
	type frame struct {
		t    *task
		next int
	}
	stack := []frame{{t: t}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next == len(top.t.children) {
			stack = stack[:len(stack)-1]
			continue
		}
		parent := top.t
		child := parent.job.tasks[parent.children[top.next]]
		top.next++
		if child.state.Terminal() {
			continue
		}
		e.dropWaiting(child)
		e.end(child, model.TaskFailed, model.Because(model.ReasonDependencyFailure,
			"dependency %q failed", parent.spec.Name), "")
		stack = append(stack, frame{t: child})
	}
}

// dropWaiting takes a ready task out of the queues.
func (e *Engine) dropWaiting(t *task) {
	if t.state != model.TaskReady {
		return
	}
	j := t.job
	j.ready.remove(t.heapPos)
	j.g.waiting--
	if j.ready.Len() == 0 && j.heapPos >= 0 {
		j.g.jobs.remove(j.heapPos)
	}
	e.tally(j)
}

// end moves t to a terminal state and closes the job when it was the last.
func (e *Engine) end(t *task, s model.TaskState, r model.Reason, worker string) {
	t.state = s
	j := t.job
	j.left--
	if s != model.TaskSucceeded {
		j.failed = j.failed || s == model.TaskFailed
		e.ended = append(e.ended, TaskEnd{Job: j.spec.ID, Task: t.spec.Name, Worker: worker, State: s, Reason: r})
	}
	if j.left == 0 {
		j.done = true
		e.endedSinceCompact++
		e.releaseAdmission(j)
		e.fleet.JobEnded(j.id)
		state := model.TaskSucceeded
		for _, t := range j.tasks {
			if t.state == model.TaskCancelled {
				state = model.TaskCancelled
			}
		}
		if j.failed {
			state = model.TaskFailed
		}
		e.jobsDone = append(e.jobsDone, JobEnd{Job: j.spec.ID, State: state})
		e.jobEnded(j)
	}
	e.tally(j)
}

// release frees the slot of a running task.
func (e *Engine) release(t *task, now time.Time) {
	e.dropGPUs(t)
	if t.member() {
		e.releaseMember(t)
		return
	}
	j := t.job
	e.fleet.Release(t.worker, t.spec.Resources)
	if t.worker.Running == 0 {
		t.worker.IdleSince = now
	}
	e.offWorker(t)
	j.g.removeRunning(t)
	j.running--
	if j.heapPos >= 0 && j.q.jobOrder == policy.ByFewestRunning {
		j.g.jobs.fix(j.heapPos)
	}
	j.q.pol.Account(j.g.key, -1, now)
	if d := j.q.dominant; d != nil {
		d.AccountAmounts(j.g.key, model.Amounts{}.Sub(model.AmountsOf(t.spec.Resources)), e.capacity(j.q), now)
	}
	t.worker = nil
	e.tally(j)
}

// occupy runs t on w from now.
func (e *Engine) occupy(t *task, w *place.Worker, now time.Time) {
	j := t.job
	e.startOn(t, w, now)
	e.fleet.Occupy(w, t.spec.Resources)
	j.g.addRunning(t)
	j.q.pol.Account(j.g.key, 1, now)
	if d := j.q.dominant; d != nil {
		d.AccountAmounts(j.g.key, model.AmountsOf(t.spec.Resources), e.capacity(j.q), now)
	}
}

// capacity is q's pool as a policy that measures dominant shares sees it:
// its ready workers' slots and resources.
func (e *Engine) capacity(q *queue) policy.Capacity {
	slots, _ := e.fleet.PoolSlots(q.pool)
	return policy.Capacity{Slots: slots, Amounts: e.fleet.PoolAmounts(q.pool)}
}

// startOn marks t running on w: a new attempt, its start, and its place in
// w's list of tasks. Slots, policy usage and batches are the callers'.
func (e *Engine) startOn(t *task, w *place.Worker, now time.Time) {
	t.state = model.TaskRunning
	t.worker, t.lastWorker = w, w
	t.started = now
	t.attempt++
	e.startSeq++
	t.startSeq = e.startSeq
	if j := t.job; !j.started {
		j.started = true
		if len(e.dependents[j.id]) > 0 {
			e.startedJobs = append(e.startedJobs, j)
		}
	}
	for len(e.onWorker) <= w.Idx {
		e.onWorker = append(e.onWorker, nil)
	}
	if first := e.onWorker[w.Idx]; first != nil {
		first.prevOnWorker = t
		t.nextOnWorker = first
	}
	e.onWorker[w.Idx] = t
	t.job.running++
	e.tally(t.job)
}

// offWorker takes t out of its worker's list of tasks.
func (e *Engine) offWorker(t *task) {
	if t.prevOnWorker != nil {
		t.prevOnWorker.nextOnWorker = t.nextOnWorker
	} else {
		e.onWorker[t.worker.Idx] = t.nextOnWorker
	}
	if t.nextOnWorker != nil {
		t.nextOnWorker.prevOnWorker = t.prevOnWorker
	}
	t.prevOnWorker, t.nextOnWorker = nil, nil
}

func (e *Engine) cancel(jobID string, now time.Time) error {
	j, ok := e.jobs[jobID]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownJob, jobID)
	}
	if j.done {
		return nil
	}
	r := model.Because(model.ReasonCancelled, "job %q was cancelled", jobID)
	for _, t := range j.tasks {
		switch t.state {
		case model.TaskRunning:
			worker := t.worker.Spec.Name
			e.release(t, now)
			e.stops = append(e.stops, Stop{Job: jobID, Task: t.spec.Name, Worker: worker, Reason: r})
			e.end(t, model.TaskCancelled, r, worker)
		case model.TaskReady:
			e.dropWaiting(t)
			e.end(t, model.TaskCancelled, r, "")
		case model.TaskBlocked:
			e.end(t, model.TaskCancelled, r, "")
		}
	}
	return nil
}

func (e *Engine) restore(ev RestoreRunning) error {
	t, err := e.lookup(ev.Job, ev.Task)
	if err != nil {
		return err
	}
	if t.state == model.TaskBlocked && t.unmet == 0 {
		e.admitForRestore(t)
	}
	if t.state != model.TaskReady {
		return fmt.Errorf("job %q task %q: %w: only a ready task can be restored as running (state %s)", ev.Job, ev.Task, ErrInvalid, t.state)
	}
	if ev.Batch != "" && ev.Batch != ev.Task {
		return e.restoreMember(t, ev)
	}
	var w *place.Worker
	if ev.Worker != "" {
		var ok bool
		if w, ok = e.fleet.Worker(ev.Worker); !ok {
			return fmt.Errorf("%w %q", ErrUnknownWorker, ev.Worker)
		}
		if w.FreeSlots() < 1 {
			return fmt.Errorf("job %q task %q: %w: worker %q has no free slot", ev.Job, ev.Task, ErrInvalid, ev.Worker)
		}
	} else {
		var r model.Reason
		if w, r = e.fleet.Place(t.shape); w == nil {
			return fmt.Errorf("job %q task %q: %w: no worker to restore it on: %s", ev.Job, ev.Task, ErrInvalid, r.Message)
		}
	}
	started := ev.Started
	if started.IsZero() {
		started = e.now
	}
	e.dropWaiting(t)
	if t.gang != nil {
		t.gang.launched = true // it ran before the restart
	}
	// Policies are told of the start at the engine's time, so their Account
	// calls stay in time order; the task keeps its true start for victim
	// selection. Usage from before now is History's business.
	e.occupy(t, w, e.now)
	e.takeGPUs(t, w, ev.GPUs)
	e.placed(t, w)
	t.started = started
	if j := t.job; j.heapPos >= 0 && j.q.jobOrder == policy.ByFewestRunning {
		j.g.jobs.fix(j.heapPos) // its running count is the job's rank
	}
	if ev.Attempt > 0 {
		t.attempt = ev.Attempt
	}
	t.fails = max(t.fails, ev.Fails)
	return nil
}

// restoreMember puts t back into the merged batch of its head, which runs
// on ev.Worker.
func (e *Engine) restoreMember(t *task, ev RestoreRunning) error {
	head, err := e.lookup(ev.Job, ev.Batch)
	if err != nil {
		return fmt.Errorf("job %q task %q: batch: %w", ev.Job, ev.Task, err)
	}
	if head.state != model.TaskRunning || head.member() || head.worker == nil || head.worker.Spec.Name != ev.Worker {
		return fmt.Errorf("job %q task %q: %w: its batch's head %q does not run on worker %q", ev.Job, ev.Task, ErrInvalid, ev.Batch, ev.Worker)
	}
	e.dropWaiting(t)
	e.occupyMember(t, head, e.now)
	if j := t.job; j.heapPos >= 0 && j.q.jobOrder == policy.ByFewestRunning {
		j.g.jobs.fix(j.heapPos)
	}
	if !ev.Started.IsZero() {
		t.started = ev.Started
	}
	if ev.Attempt > 0 {
		t.attempt = ev.Attempt
	}
	t.fails = max(t.fails, ev.Fails)
	return nil
}

func (e *Engine) restoreTask(ev RestoreTask) error {
	t, err := e.lookup(ev.Job, ev.Task)
	if err != nil {
		return err
	}
	if t.state != model.TaskReady && t.state != model.TaskBlocked {
		return fmt.Errorf("job %q task %q: %w: only a waiting task can be restored (state %s)", ev.Job, ev.Task, ErrInvalid, t.state)
	}
	t.attempt, t.fails = ev.Attempt, ev.Fails
	if ev.Attempt > 0 && !t.job.started {
		t.job.started = true
		if len(e.dependents[t.job.id]) > 0 {
			e.startedJobs = append(e.startedJobs, t.job)
		}
	}
	switch ev.State {
	case model.TaskReady, model.TaskBlocked, "":
		return nil
	case model.TaskSucceeded, model.TaskFailed, model.TaskCancelled:
	default:
		return fmt.Errorf("job %q task %q: %w state %q", ev.Job, ev.Task, ErrInvalid, ev.State)
	}
	e.dropWaiting(t)
	t.state = ev.State
	j := t.job
	j.left--
	j.failed = j.failed || ev.State == model.TaskFailed
	if j.left == 0 {
		j.done = true
		e.endedSinceCompact++
		e.releaseAdmission(j)
		e.fleet.JobEnded(j.id)
		e.jobEnded(j)
	}
	if ev.State == model.TaskSucceeded {
		for _, c := range t.children {
			child := j.tasks[c]
			child.unmet--
			if child.unmet == 0 && child.state == model.TaskBlocked && j.admitted {
				e.makeReady(child)
			}
		}
	}
	e.tally(j)
	return nil
}

func (e *Engine) removeWorker(ev RemoveWorker, now time.Time) error {
	w, ok := e.fleet.Worker(ev.Name)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownWorker, ev.Name)
	}
	r := ev.Reason
	if r.Code == "" {
		r = model.Because(model.ReasonWorkerLost, "worker %q left", ev.Name)
	}
	// Requeue in a stable order: by task id.
	var victims []*task
	if w.Idx < len(e.onWorker) {
		for t := e.onWorker[w.Idx]; t != nil; t = t.nextOnWorker {
			victims = append(victims, t)
		}
	}
	slices.SortFunc(victims, func(a, b *task) int { return cmp.Compare(a.id, b.id) })
	for _, t := range victims {
		e.release(t, now)
		e.makeReady(t)
		e.ended = append(e.ended, TaskEnd{Job: t.job.spec.ID, Task: t.spec.Name, Worker: ev.Name, State: model.TaskReady, Reason: r})
	}
	for _, t := range victims {
		e.gangLost(t, now, &e.stops)
	}
	e.fleet.Remove(w)
	e.forgetGPUs(w)
	return nil
}

// forget drops an ended job from the lookups, so that a server's engine
// holds only live jobs however long it runs. Task ids are not reused: a
// forgotten task leaves a nil entry behind.
func (e *Engine) forget(id string) error {
	j, ok := e.jobs[id]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownJob, id)
	}
	if !j.done {
		return fmt.Errorf("job %q: %w: only an ended job can be forgotten", id, ErrInvalid)
	}
	delete(e.jobs, j.spec.ID)
	for _, t := range j.tasks {
		e.tasks[t.id] = nil
	}
	return nil
}

// PolicyReport returns what a queue's policy reports about its groups (for
// fairshare: each share's usage, weight factor and entitled fraction), or
// ok=false when the policy reports nothing.
func (e *Engine) PolicyReport(queue string) (any, bool) {
	q, ok := e.queueBy[queue]
	if !ok {
		return nil, false
	}
	r, ok := q.pol.(policy.Reporter)
	if !ok {
		return nil, false
	}
	return r.Report(e.now), true
}

// History returns what a queue's policy remembers (usage, a rebalance
// clock) as of the engine's time, in the form SetHistory takes back; false
// for a policy that remembers nothing. A server stores it so that fairness
// over time survives a restart.
func (e *Engine) History(queue string) (policy.History, bool) {
	q, ok := e.queueBy[queue]
	if !ok {
		return policy.History{}, false
	}
	g, ok := q.pol.(policy.HistoryGiver)
	if !ok {
		return policy.History{}, false
	}
	return g.History(e.now), true
}

// requeueCode is the reason code of a Requeued outcome.
func requeueCode(ev FinishTask) string {
	if ev.Code != "" {
		return ev.Code
	}
	return model.ReasonWorkerLost
}
