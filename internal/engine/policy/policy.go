// Package policy holds the allocation policies: the rules that decide which
// group of a queue gets the next free slot and which running tasks must make
// room. A policy sees a View of its queue, never the engine's state, so each
// policy is plain arithmetic over counts and can be tested on its own.
package policy

import (
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// Policy is one allocation rule. The engine keeps one Policy value per queue
// for the queue's lifetime, so a policy may keep history (usage) between
// cycles; it must stay deterministic: no clock reads, no global randomness.
type Policy interface {
	// Name is the policy's name in configuration ("fifo", "fairshare", ...).
	Name() string
	// GroupOf names the group a job belongs to. Groups are the units the
	// policy divides capacity between.
	GroupOf(j *model.Job) string
	// Order says how jobs inside one group, and tasks inside one job, are
	// ordered.
	Order() (JobOrder, TaskOrder)
	// Account tells the policy that the number of running tasks of group
	// changed by delta at time at. Calls come in time order; policies that
	// keep usage integrate it from these calls.
	Account(group string, delta int, at time.Time)
	// Allocate plans one cycle of the queue.
	Allocate(v *View) Plan
}

// JobOrder orders the jobs of one group.
type JobOrder int

const (
	// ByPriorityThenAge serves the highest job priority first, then the
	// earliest submission.
	ByPriorityThenAge JobOrder = iota
	// ByFewestRunning serves, round-robin, the job with the fewest running
	// tasks first (seed 004), then the earliest submission.
	ByFewestRunning
)

// TaskOrder orders the ready tasks of one job.
type TaskOrder int

const (
	// ByDeclaration serves tasks in the order the job lists them.
	ByDeclaration TaskOrder = iota
	// ByLongestFirst serves the longest expected duration first (seed 004).
	ByLongestFirst
)

// Group is one group of a queue as a policy sees it in one cycle.
type Group struct {
	Key     string
	Running int // tasks running now
	Waiting int // tasks ready to start (admitted, dependencies met)
	// Usable is how many more tasks the group could run at once if slots
	// were free: Waiting, cut by a job's slot limit.
	Usable int
	// The attributes below come from the group's oldest active job; for
	// policies whose groups are jobs they are that job's.
	Priority  int
	Urgent    bool
	Submitted time.Time
	Seq       uint64 // submission order of the oldest job
	Share     string
	Requestor string
	SLAGroup  string
	// Held is what the group's running tasks hold, filled only for a
	// policy that measures dominant shares (DominantPolicy).
	Held model.Amounts
}

// RunningTask is a running task a policy may choose to stop.
type RunningTask struct {
	ID       int // opaque to the policy; hand it back in a Stop
	Group    int // index into View.Groups
	Priority int
	Urgent   bool
	Started  time.Time
	StartSeq uint64 // start order; larger is newer
	// Holds is what the task asks for, which a policy that measures
	// dominant shares subtracts when it stops the task.
	Holds model.Amounts
}

// View is the state of one queue at the start of a cycle.
type View struct {
	Now   time.Time
	Queue string
	// Slots counts the slots of the queue's pool that take work (ready
	// workers); Free counts those idle now.
	Slots int
	Free  int
	// Capacity is the pool's ready workers in slots and in each resource
	// kind, filled only for a policy that measures dominant shares
	// (DominantPolicy); Capacity.Slots is Slots.
	Capacity Capacity
	Groups   []Group
	// RunningTasks lists the running tasks of group g, oldest start first.
	RunningTasks func(g int) []RunningTask
}

// Plan is a policy's answer for one cycle.
type Plan struct {
	// Targets holds each group's target slot count, or -1 where the policy
	// has none; the engine reports it in the per-group summary.
	Targets []int
	// Stops lists running tasks to stop (preemption, rebalancing); the
	// engine requeues them without counting a failed attempt.
	Stops []Stop
	// Alloc hands out the free slots.
	Alloc Allocator
}

// Stop asks the engine to stop a running task.
type Stop struct {
	Task   int // RunningTask.ID
	Reason model.Reason
}

// Allocator hands out the free slots of one cycle, one at a time. The engine
// asks Next for a group, tries to place that group's next task, and reports
// back with Started or Exhausted.
type Allocator interface {
	// Next returns the group that gets the next slot; ok is false when the
	// policy hands out no more slots this cycle.
	Next() (group int, ok bool)
	// Started says a task of group was placed.
	Started(group int)
	// Exhausted says group has no task that can be placed this cycle; Next
	// must not return it again.
	Exhausted(group int)
	// Why explains why group's waiting tasks got no slot from the policy
	// (at its target, suspended, ...); ok is false when the policy did not
	// hold the group back, so the pool was simply full.
	Why(group int) (r model.Reason, ok bool)
}

// History is what a policy's decisions depend on from before the engine
// started: a plan scenario states it, and the server restores it from its
// store.
type History struct {
	// Usage is each group's accumulated usage in slot-seconds, as the
	// policy measures it (decayed or windowed).
	Usage map[string]float64 `yaml:"usage,omitempty" json:"usage,omitempty"`
	// RebalanceExceededFor is how long the classload spread has already been
	// above its threshold.
	RebalanceExceededFor time.Duration `yaml:"rebalanceExceededFor,omitempty" json:"rebalanceExceededFor,omitempty"`
}

// HistoryTaker is a policy that accepts History.
type HistoryTaker interface {
	SetHistory(h History, now time.Time)
}

// HistoryGiver is a policy whose decisions depend on its past (usage, a
// rebalance clock): History says where it stands at now, in the form
// SetHistory takes back, so that a restarted server, or a what-if copy of
// the engine, goes on where it left off.
type HistoryGiver interface {
	History(now time.Time) History
}

// AffinityPolicy is a policy that wants intrinsic affinity (seed 001): the
// engine remembers, per job, the workers that ran its tasks, and placement
// prefers a free one of them. A policy cannot see workers, so it only says
// whether it wants this and how long a task may pass over free workers
// without affinity (wait, 0 for not at all) since it became ready.
type AffinityPolicy interface {
	Affinity() (enabled bool, wait time.Duration)
}

// Ranker is a policy that can say in which order its last Allocate served
// the groups of its view. Explain ranks a waiting group with it, so that
// the rank is the policy's own order (usage per weight, urgency, SLA
// usage, class turns) rather than a guess from priority and age.
type Ranker interface {
	// ServiceOrder returns the keys of the last Allocate's groups in the
	// order its allocator first serves them, and a short phrase saying
	// what orders them. Groups the policy does not serve at all (a
	// suspended job, an unknown SLA group) are left out.
	ServiceOrder() (keys []string, by string)
}

// Reporter is a policy that can tell users where each group stands (usage,
// weight, entitlement). The answer is JSON-serialisable.
type Reporter interface {
	Report(now time.Time) any
}
