package engine

import (
	"time"

	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// task is the engine's record of one task. Tasks are numbered densely in
// submission order (id), which the policies see as RunningTask.ID.
type task struct {
	id       int
	job      *job
	idx      int // position in the job's spec
	spec     *model.Task
	shape    *place.Shape
	state    model.TaskState
	unmet    int   // dependencies not yet succeeded
	children []int // indexes (in the job) of tasks that need this one
	fails    int   // failed attempts
	attempt  int   // attempts started
	worker   *place.Worker
	// prevOnWorker and nextOnWorker link the tasks running on worker.
	prevOnWorker, nextOnWorker *task
	started                    time.Time
	startSeq                   uint64
	heapPos                    int // in job.ready
	runPos                     int // in group.running
	// lastWorker is the worker of the latest attempt (stage stickiness
	// pins a child there); batch is the merged batch t heads or rides in.
	lastWorker *place.Worker
	batch      *batch
	// readyAt is when the task last became ready: the affinity wait
	// counts from it.
	readyAt time.Time
	// gang is the gang the task belongs to, or nil (gang.go).
	gang *gang
}

// job is the engine's record of one job.
type job struct {
	// The fields up to reason are the ones a cycle reads for every job
	// (explain, usable, the job heap); they come first so that they share
	// the job's first cache lines.
	ready       taskHeap
	g           *group
	running     int
	left        int // tasks not yet in an end state
	reasonCycle uint64
	maxSlots    int // spec.MaxSlots
	seq         uint64
	heapPos     int    // in group.jobs, -1 when absent
	id          string // spec.ID
	done        bool
	parked      bool
	failed      bool
	admitted    bool
	// started is set once a task of the job started (or is restored as
	// having run): it meets the after dependencies of other jobs.
	started bool
	// reason explains this job's ready tasks when set in cycle reasonCycle
	// (a placement failure or a slot limit); otherwise the group's applies.
	reason model.Reason

	spec        *model.Job
	q           *queue
	tasks       []*task
	byName      map[string]*task
	admitReason model.Reason
	capped      model.Reason // the max_slots reason, formatted once
	// waitingJobs counts the dependencies on other jobs not met yet; the
	// job is held before admission while it is above 0 (jobdeps.go).
	waitingJobs int
	// blockedFrom indexes the first task that may still be blocked: tasks
	// before it have left the blocked state, which they never re-enter.
	blockedFrom int
	blockedMemo struct {
		task   *task
		unmet  int
		reason model.Reason
	}
	// hash is the hash of the job's ID (placement jitter), 0 until needed.
	hash uint64
	// tally is the job's share of the engine's counts of waiting tasks
	// (pendcount.go).
	tally jobTally
	// held names who holds the job, "" when it is not held; heldVariant
	// keeps the variant of a held endpoint job out of admission (hold.go).
	held, heldVariant string
}

// group is one group of a queue: the jobs a policy treats as one unit.
type group struct {
	key     string
	q       *queue
	jobs    jobHeap // jobs with ready tasks
	members []*job  // active jobs in submission order (ended ones removed lazily)
	running []*task
	waiting int
	// limited counts the group's jobs that have a slot limit; without any,
	// the tasks it could use are simply its waiting tasks.
	limited int
	view    int // index in the current cycle's View
	// reason explains the waiting tasks of the group as of cycle
	// reasonCycle; poolFull says it is the pool-full reason, which a job's
	// own placement diagnosis may refine.
	reason      model.Reason
	reasonCycle uint64
	poolFull    bool
	// notReached caches the not_reached reason for policy notReachedBy.
	notReached   model.Reason
	notReachedBy string
	starts       int
	stops        int
	// target is the policy's target slot count of the last cycle, -1 for
	// none; Explain reports it.
	target int
	// byHead counts the group's ready tasks by the shape of their job's
	// head task: in a full pool, that shape's placement diagnosis
	// explains them (pendcount.go).
	byHead headCounts
	// tallyPos is g's index in the engine's list of groups with ready
	// tasks, while it has some.
	tallyPos int
}

// queue is a configured queue with its policy and groups.
type queue struct {
	name     string
	priority int
	pool     model.Selector
	pol      policy.Policy
	// dominant is pol when it measures dominant shares (usage: dominant),
	// nil under slots: the engine then tells it what tasks hold.
	dominant policy.DominantPolicy
	jobOrder policy.JobOrder
	tskOrder policy.TaskOrder
	groups   map[string]*group
	// full caches the pool-full reason for a pool of fullSlots slots.
	full      model.Reason
	fullSlots int
	// res is the capacity held this cycle for the queue's first waiting
	// gang; reserved is that gang, held for again next cycle (gang.go).
	res      *reservation
	reserved *gang
}

func (q *queue) group(key string) *group {
	g, ok := q.groups[key]
	if !ok {
		g = &group{key: key, q: q, target: -1}
		g.jobs.order = q.jobOrder
		q.groups[key] = g
	}
	return g
}

// oldest returns the group's oldest active job, dropping ended ones.
func (g *group) oldest() *job {
	for len(g.members) > 0 && g.members[0].done {
		g.members = g.members[1:]
	}
	if len(g.members) == 0 {
		return nil
	}
	return g.members[0]
}

// push makes j's ready tasks visible to the group.
func (g *group) push(j *job) {
	if j.heapPos < 0 && !j.parked && j.held == "" && j.ready.Len() > 0 {
		g.jobs.push(j)
	}
}

func (g *group) addRunning(t *task) {
	t.runPos = len(g.running)
	g.running = append(g.running, t)
}

func (g *group) removeRunning(t *task) {
	last := g.running[len(g.running)-1]
	g.running[t.runPos] = last
	last.runPos = t.runPos
	g.running = g.running[:len(g.running)-1]
	t.runPos = -1
}

// The two heaps below are written out for their element types rather than
// driven through container/heap: placing a task pops a task heap and often
// fixes a job heap, and direct calls with an inlined comparison are several
// times cheaper than heap.Interface's dynamic calls. They deliberately do not
// implement heap.Interface: taskHeap keeps its head's shape beside the items,
// which container/heap would not update.

// taskHeap orders a job's ready tasks.
type taskHeap struct {
	items []*task
	order policy.TaskOrder
	// head is the shape of items[0], or nil: explaining why a job waits
	// looks at it for every job each cycle, and reading it here saves
	// loading the task.
	head *place.Shape
}

func (h *taskHeap) setHead() {
	if len(h.items) > 0 {
		h.head = h.items[0].shape
	} else {
		h.head = nil
	}
}

func (h *taskHeap) less(a, b *task) bool {
	if h.order == policy.ByLongestFirst && a.spec.Duration != b.spec.Duration {
		return a.spec.Duration > b.spec.Duration
	}
	return a.idx < b.idx
}

func (h *taskHeap) Len() int { return len(h.items) }

// push adds t.
func (h *taskHeap) push(t *task) {
	h.items = append(h.items, t)
	h.up(len(h.items)-1, t)
	h.setHead()
}

// remove takes out the task at position i and returns it.
func (h *taskHeap) remove(i int) *task {
	t := h.items[i]
	n := len(h.items) - 1
	last := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	if i < n {
		if !h.down(i, last) {
			h.up(i, last)
		}
	}
	t.heapPos = -1
	h.setHead()
	return t
}

// pop takes out the first task.
func (h *taskHeap) pop() *task { return h.remove(0) }

// init restores the order after items or order changed wholesale.
func (h *taskHeap) init() {
	for i, t := range h.items {
		t.heapPos = i
	}
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i, h.items[i])
	}
	h.setHead()
}

// up moves t, destined for position i, towards the root.
func (h *taskHeap) up(i int, t *task) {
	for i > 0 {
		p := (i - 1) / 2
		parent := h.items[p]
		if !h.less(t, parent) {
			break
		}
		h.items[i] = parent
		parent.heapPos = i
		i = p
	}
	h.items[i] = t
	t.heapPos = i
}

// down moves t, destined for position i, towards the leaves and reports
// whether it moved.
func (h *taskHeap) down(i0 int, t *task) bool {
	i, n := i0, len(h.items)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h.less(h.items[r], h.items[c]) {
			c = r
		}
		child := h.items[c]
		if !h.less(child, t) {
			break
		}
		h.items[i] = child
		child.heapPos = i
		i = c
	}
	h.items[i] = t
	t.heapPos = i
	return i > i0
}

// jobHeap orders the jobs of a group that have ready tasks.
type jobHeap struct {
	items []*job
	order policy.JobOrder
}

func (h *jobHeap) less(a, b *job) bool {
	switch h.order {
	case policy.ByFewestRunning:
		if a.running != b.running {
			return a.running < b.running
		}
	default:
		if a.spec.Priority != b.spec.Priority {
			return a.spec.Priority > b.spec.Priority
		}
	}
	return a.seq < b.seq
}

func (h *jobHeap) Len() int { return len(h.items) }

// push adds j.
func (h *jobHeap) push(j *job) {
	h.items = append(h.items, j)
	h.up(len(h.items)-1, j)
}

// remove takes out the job at position i.
func (h *jobHeap) remove(i int) {
	j := h.items[i]
	n := len(h.items) - 1
	last := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	if i < n {
		if !h.down(i, last) {
			h.up(i, last)
		}
	}
	j.heapPos = -1
}

// fix restores the order after the job at position i changed.
func (h *jobHeap) fix(i int) {
	j := h.items[i]
	if !h.down(i, j) {
		h.up(i, j)
	}
}

func (h *jobHeap) up(i int, j *job) {
	for i > 0 {
		p := (i - 1) / 2
		parent := h.items[p]
		if !h.less(j, parent) {
			break
		}
		h.items[i] = parent
		parent.heapPos = i
		i = p
	}
	h.items[i] = j
	j.heapPos = i
}

func (h *jobHeap) down(i0 int, j *job) bool {
	i, n := i0, len(h.items)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h.less(h.items[r], h.items[c]) {
			c = r
		}
		child := h.items[c]
		if !h.less(child, j) {
			break
		}
		h.items[i] = child
		child.heapPos = i
		i = c
	}
	h.items[i] = j
	j.heapPos = i
	return i > i0
}
