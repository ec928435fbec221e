package engine

import (
	"container/heap"
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
	started  time.Time
	startSeq uint64
	heapPos  int // in job.ready
	runPos   int // in group.running
}

// job is the engine's record of one job.
type job struct {
	spec     *model.Job
	seq      uint64
	q        *queue
	g        *group
	tasks    []*task
	byName   map[string]*task
	ready    taskHeap
	running  int
	left     int // tasks not yet in an end state
	failed   bool
	admitted bool
	done     bool
	heapPos  int // in group.jobs, -1 when absent
	parked   bool
	// reason explains this job's ready tasks when set in cycle reasonCycle
	// (a placement failure or a slot limit); otherwise the group's applies.
	reason      model.Reason
	reasonCycle uint64
	admitReason model.Reason
}

// group is one group of a queue: the jobs a policy treats as one unit.
type group struct {
	key     string
	q       *queue
	jobs    jobHeap // jobs with ready tasks
	members []*job  // active jobs in submission order (ended ones removed lazily)
	running []*task
	waiting int
	view    int // index in the current cycle's View
	reason  model.Reason
	starts  int
	stops   int
}

// queue is a configured queue with its policy and groups.
type queue struct {
	name     string
	priority int
	pool     model.Selector
	pol      policy.Policy
	jobOrder policy.JobOrder
	tskOrder policy.TaskOrder
	groups   map[string]*group
}

func (q *queue) group(key string) *group {
	g, ok := q.groups[key]
	if !ok {
		g = &group{key: key, q: q}
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
	if j.heapPos < 0 && !j.parked && j.ready.Len() > 0 {
		heap.Push(&g.jobs, j)
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

// taskHeap orders a job's ready tasks.
type taskHeap struct {
	items []*task
	order policy.TaskOrder
}

func (h *taskHeap) Len() int { return len(h.items) }
func (h *taskHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if h.order == policy.ByLongestFirst && a.spec.Duration != b.spec.Duration {
		return a.spec.Duration > b.spec.Duration
	}
	return a.idx < b.idx
}
func (h *taskHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].heapPos = i
	h.items[j].heapPos = j
}
func (h *taskHeap) Push(x any) {
	t := x.(*task)
	t.heapPos = len(h.items)
	h.items = append(h.items, t)
}
func (h *taskHeap) Pop() any {
	n := len(h.items) - 1
	t := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	t.heapPos = -1
	return t
}

// jobHeap orders the jobs of a group that have ready tasks.
type jobHeap struct {
	items []*job
	order policy.JobOrder
}

func (h *jobHeap) Len() int { return len(h.items) }
func (h *jobHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
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
func (h *jobHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].heapPos = i
	h.items[j].heapPos = j
}
func (h *jobHeap) Push(x any) {
	j := x.(*job)
	j.heapPos = len(h.items)
	h.items = append(h.items, j)
}
func (h *jobHeap) Pop() any {
	n := len(h.items) - 1
	j := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	j.heapPos = -1
	return j
}
