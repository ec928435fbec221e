package api

import (
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// The body of GET /v1/jobs/{id}/explain, which `allot explain -f` also
// prints offline. The engine builds its own explanation (engine.Explanation,
// with the same fields and JSON); the server converts it at its edge, so
// that the API's clients (the CLI, the worker agent) do not link the
// scheduler. A test in control holds the two to the same JSON, field by
// field. docs/explain.md describes every field.

// Explanation is the structured answer to "why is my job not running". Each
// section is present only when it applies: an endpoint job has Admission, a
// job with ready tasks has Allocation, and Pending groups identical waiting
// tasks (same state, same resources, same unmet parents), so a job of 1,000
// tasks waiting for one reason is one entry.
type Explanation struct {
	Job   string    `json:"job"`
	Queue string    `json:"queue"`
	At    time.Time `json:"at"`
	// Tasks counts the job's tasks by state.
	Tasks      TaskCounts         `json:"tasks"`
	Admission  *AdmissionExplain  `json:"admission,omitempty"`
	Allocation *AllocationExplain `json:"allocation,omitempty"`
	Pending    []PendingExplain   `json:"pending"`
	// MoreGroups counts pending groups left out of Pending (at most 20
	// are listed).
	MoreGroups int `json:"moreGroups,omitempty"`
	// Help lists what would let the job start, computed from the state:
	// a smaller request that a free worker fits, a share above its
	// entitlement, endpoint capacity, a priority to beat.
	Help []Help `json:"help,omitempty"`
	// Estimate is when the job's first waiting task should start, from a
	// what-if simulation of the current state.
	Estimate *Estimate `json:"estimate,omitempty"`
	// Gang says what the job's gang waits for, while one waits to start
	// (docs/explain.md#gang).
	Gang *GangExplain `json:"gang,omitempty"`
}

// GangExplain says what a waiting gang waits for: how many of its tasks
// must start at once, how many of them the workers that can run them could
// start now, and when enough capacity is expected to free.
type GangExplain struct {
	// Name is the gang's task entry (stage), or "job" for the whole job.
	Name         string `json:"name"`
	Tasks        int    `json:"tasks"`
	MinAvailable int    `json:"minAvailable"`
	// Need is how many tasks must start together now: MinAvailable, or
	// the tasks left when fewer are.
	Need    int `json:"need"`
	Running int `json:"running"`
	Ready   int `json:"ready"`
	// Free counts the gang's tasks the ready workers that can run them
	// could start now; Capacity those they could run when idle.
	Free     int `json:"free"`
	Capacity int `json:"capacity"`
	// EarliestStart is when enough capacity is expected to have freed,
	// after EndsFirst running tasks end; absent when unknown.
	EarliestStart *time.Time `json:"earliestStart,omitempty"`
	EndsFirst     int        `json:"endsFirst,omitempty"`
	Message       string     `json:"message"`
}

// TaskCounts counts a job's tasks by state.
type TaskCounts struct {
	Total     int `json:"total"`
	Running   int `json:"running"`
	Ready     int `json:"ready"`
	Blocked   int `json:"blocked"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
}

// PendingExplain is a set of identical waiting tasks of the job and why
// they wait.
type PendingExplain struct {
	// State is ready (admitted, dependencies met) or blocked.
	State model.TaskState `json:"state"`
	Tasks int             `json:"tasks"`
	// Examples names the first few tasks, in declaration order.
	Examples []string     `json:"examples"`
	Reason   model.Reason `json:"reason"`
	// Placement explains, for ready tasks, which workers could run them.
	Placement *PlacementExplain `json:"placement,omitempty"`
	// Dependencies lists, for blocked tasks, the parents they wait for.
	Dependencies []Dependency `json:"dependencies,omitempty"`
}

// Help is one thing that would let the job start, computed from the state.
// Kind is stable for scripts: smaller_request, selector, enable_worker,
// share_above_entitlement, below_entitlement, endpoint_capacity,
// starvation_reservation, priority, dependency, suspended,
// assigned_worker, affinity_wait, held, gang, gpu_devices.
type Help struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// AdmissionExplain is where an endpoint job stands at admission (seed 000):
// the variant it was routed to, that variant's capacity and load, the job's
// own load and where the figure came from, and the anti-starvation
// reservation.
type AdmissionExplain struct {
	Endpoint   string `json:"endpoint"`
	Variant    string `json:"variant"`
	Admitted   bool   `json:"admitted"`
	Load       int    `json:"load"`
	LoadSource string `json:"loadSource"`
	// MaxCapacity and TargetCapacity are the variant's, in concurrent
	// requests; InUse is the load of its admitted jobs and Available
	// TargetCapacity − InUse.
	MaxCapacity    int `json:"maxCapacity"`
	TargetCapacity int `json:"targetCapacity"`
	InUse          int `json:"inUse"`
	Available      int `json:"available"`
	RunningJobs    int `json:"runningJobs"`
	WaitingJobs    int `json:"waitingJobs"`
	// ThrottledSince is when the job was first held back; zero if never.
	ThrottledSince time.Time `json:"throttledSince,omitzero"`
	AdmittedAt     time.Time `json:"admittedAt,omitzero"`
	// ReservedFor is the job holding the variant's starvation
	// reservation, if any (this job or another).
	ReservedFor        string       `json:"reservedFor,omitempty"`
	SingleJobException bool         `json:"singleJobException,omitempty"`
	Reason             model.Reason `json:"reason,omitzero"`
}

// AllocationExplain is where the job's group stands under its queue's
// policy: the group's running slots against its target, the policy's own
// figures, its rank in the order the policy serves
// groups, and the job's rank inside its group.
type AllocationExplain struct {
	Queue  string `json:"queue"`
	Policy string `json:"policy"`
	Group  string `json:"group"`
	// Slots and Free are the queue pool's slots on ready workers, and
	// those idle.
	Slots   int `json:"slots"`
	Free    int `json:"free"`
	Running int `json:"running"`
	Waiting int `json:"waiting"`
	// Target is the policy's target slot count for the group in the last
	// cycle, -1 when it sets none.
	Target int `json:"target"`
	// Figures are the policy's own figures about the group (fairshare:
	// usage, weightFactor, runningFraction, entitled), and Summary says
	// them in one sentence; both are empty for a policy that keeps none.
	Figures []Figure `json:"figures,omitempty"`
	Summary string   `json:"summary,omitempty"`
	// Priority is the job's priority (the level, for the priority policy).
	Priority int `json:"priority"`
	// GroupRank is the group's place (1 = next) among the queue's groups
	// with waiting tasks, in the order the policy serves them; GroupsAhead
	// names those before it.
	GroupRank   int          `json:"groupRank,omitempty"`
	GroupsAhead []GroupAhead `json:"groupsAhead,omitempty"`
	// RankBy says what the policy orders its groups by.
	RankBy string `json:"rankBy,omitempty"`
	// JobRank is the job's place among its group's jobs with waiting
	// tasks (priority, then age; fewest running for classload); JobsAhead
	// names those before it.
	JobRank   int        `json:"jobRank"`
	JobsAhead []JobAhead `json:"jobsAhead,omitempty"`
	// Reason is the group's reason of the last cycle: the policy's, or a
	// full pool.
	Reason model.Reason `json:"reason,omitzero"`
}

// GroupAhead is a group served before the job's.
type GroupAhead struct {
	Group   string `json:"group"`
	Running int    `json:"running"`
	Waiting int    `json:"waiting"`
	// Figure is the group's value of the figure the policy ranks groups
	// by, where it ranks by one (fairshare: usage).
	Figure *Figure `json:"figure,omitempty"`
	// Priority and Urgent are the group's (its oldest job's).
	Priority int  `json:"priority"`
	Urgent   bool `json:"urgent,omitempty"`
}

// JobAhead is a job of the same group served before the job.
type JobAhead struct {
	Job      string `json:"job"`
	Priority int    `json:"priority"`
	Running  int    `json:"running"`
	Waiting  int    `json:"waiting"`
}

// PlacementExplain says how the registered workers stand against one task
// shape: how many each filter removed, in the order they are applied (a
// worker is counted under the first filter it fails), how many could take
// the task now, and the worker closest to taking it with what it lacks.
type PlacementExplain struct {
	Needs    model.Resources `json:"needs"`
	Selector model.Selector  `json:"selector,omitempty"`
	Workers  int             `json:"workers"`
	Removed  []FilterCount   `json:"removed"`
	// FitNow counts ready workers with a free slot and enough unused
	// resources for the task.
	FitNow  int            `json:"fitNow"`
	Closest *ClosestWorker `json:"closest,omitempty"`
	// Assigned is the one worker the tasks may run on now, when stage
	// stickiness or the dispatcher mode pins them: they wait for it however
	// many other workers are free.
	Assigned *AssignedWorker `json:"assigned,omitempty"`
	// NotAssigned says why a pin that would apply does not (the parent's
	// worker was removed, is draining, ...): the tasks are placed like any
	// other.
	NotAssigned string `json:"notAssigned,omitempty"`
	// AffinityWait is set when the tasks pass over free workers, waiting
	// for one that ran their job's tasks (intrinsic affinity).
	AffinityWait *AffinityWaitExplain `json:"affinityWait,omitempty"`
	// GPUDevices, for tasks that ask for GPUs and that no worker takes
	// now, names the devices held on the workers that could run them but
	// have too few free, and the tasks holding them.
	GPUDevices *GPUDeviceWait `json:"gpuDevices,omitempty"`
}

// GPUDeviceWait is what ready tasks asking for GPUs wait for when every
// worker that could run them by its hardware, and that takes tasks now, has
// fewer free GPUs than each task asks for (docs/explain.md#gpu-devices).
type GPUDeviceWait struct {
	// Need is the GPUs each task asks for: that many free devices on one
	// worker.
	Need int64 `json:"need"`
	// Workers lists the first few such workers (at most 3): the one
	// expected to free enough devices soonest first (unknown last), then
	// the one with the most free devices, then registration order.
	Workers []WorkerDevices `json:"workers"`
	// More counts the other such workers.
	More int `json:"more,omitempty"`
}

// WorkerDevices is the GPU devices of one worker that a task waits for.
type WorkerDevices struct {
	Worker string `json:"worker"`
	// Devices counts the worker's GPUs; Free lists the indices of those
	// no task holds.
	Devices int   `json:"devices"`
	Free    []int `json:"free,omitempty"`
	// Held lists the devices tasks hold, by index.
	Held []DeviceHolder `json:"held"`
	// FreeBy is when enough devices should be free for the task, the
	// holders that end soonest ending; zero when one of them declares no
	// duration.
	FreeBy time.Time `json:"freeBy,omitzero"`
	// Frees names the tasks ("job/task") whose end would leave enough
	// devices free, soonest expected end first.
	Frees []string `json:"frees,omitempty"`
}

// DeviceHolder is one device and the task that holds it.
type DeviceHolder struct {
	Device int    `json:"device"`
	Job    string `json:"job"`
	Task   string `json:"task"`
	// ExpectedEnd is the task's start plus its declared duration; zero
	// when it declares none.
	ExpectedEnd time.Time `json:"expectedEnd,omitzero"`
}

// AssignedWorker is the one worker some waiting tasks may use now, and what
// keeps it from taking them: a placement section that counted the other
// free workers would suggest the tasks could go there, which they cannot.
type AssignedWorker struct {
	Worker string `json:"worker"`
	// By is what pins the tasks: AssignedSticky, AssignedPipeline or
	// AssignedBound.
	By string `json:"by"`
	// Parent (sticky) is the parent task whose result the tasks load;
	// Type (pipeline) is the tasks' type.
	Parent string            `json:"parent,omitempty"`
	Type   string            `json:"type,omitempty"`
	State  model.WorkerState `json:"state"`
	// Free says whether the worker could take one of the tasks now.
	Free  bool `json:"free"`
	Slots int  `json:"slots"`
	// Running lists the tasks the worker runs, soonest expected end first
	// (at most 10); RunningTotal counts them all.
	Running      []RunningOn `json:"running,omitempty"`
	RunningTotal int         `json:"runningTotal,omitempty"`
	// NextEnd is the earliest expected end of a task running there, from
	// the tasks' declared durations; zero when none declares one.
	NextEnd time.Time `json:"nextEnd,omitzero"`
	// OthersFree counts the other ready workers that could take the tasks
	// now were they not pinned: the tasks pass over them.
	OthersFree int `json:"othersFree"`
}

// RunningOn is a task running on a worker.
type RunningOn struct {
	Job     string    `json:"job"`
	Task    string    `json:"task"`
	Started time.Time `json:"started"`
	// ExpectedEnd is Started plus the task's declared duration; zero when
	// it declares none.
	ExpectedEnd time.Time `json:"expectedEnd,omitzero"`
}

// AffinityWaitExplain says how long tasks pass over free workers, hoping
// one that ran their job's tasks frees up (the priority policy's
// affinityWait, counted from when the task became ready).
type AffinityWaitExplain struct {
	ReadySince  time.Time `json:"readySince"`
	WaitSeconds float64   `json:"waitSeconds"`
	// Until is ReadySince plus the wait: from then on the task takes any
	// free worker that fits.
	Until time.Time `json:"until"`
	// AffinityWorkers counts the workers that ran the job's tasks (removed
	// ones included); none of them can take the task now.
	AffinityWorkers int `json:"affinityWorkers"`
	// PassedOver counts the free workers that could take the task now and
	// are passed over.
	PassedOver int `json:"passedOver"`
}

// FilterCount is how many workers one filter removed, and why.
type FilterCount struct {
	Filter  string `json:"filter"`
	Workers int    `json:"workers"`
	Why     string `json:"why"`
}

// ClosestWorker is the worker that comes nearest to running the task, and
// exactly what it lacks: first the fewest things it can never offer
// (labels, hardware), then the fewest passing ones (state, a free slot),
// then the smallest relative shortfall, then registration order.
type ClosestWorker struct {
	Worker string            `json:"worker"`
	State  model.WorkerState `json:"state"`
	Lacks  []Lack            `json:"lacks"`
}

// Lack is one thing a worker does not offer: a label, a resource, a ready
// state or a free slot, with what the task needs and what the worker has.
type Lack struct {
	What string `json:"what"`
	Need string `json:"need"`
	Have string `json:"have"`
}

// Dependency is a parent task not yet succeeded.
type Dependency struct {
	Task   string          `json:"task"`
	State  model.TaskState `json:"state"`
	Worker string          `json:"worker,omitempty"`
}

// Estimate is when a job's first waiting task is expected to start, from a
// simulation of the current state. Known is false when the
// job does not start within the horizon or the cycle bound, or cannot start
// at all in the current state; Note says which.
type Estimate struct {
	Known bool      `json:"known"`
	Start time.Time `json:"start,omitzero"`
	// WaitSeconds is Start minus the simulation's start time.
	WaitSeconds float64 `json:"waitSeconds,omitempty"`
	// Task and Worker are the first task to start, and where.
	Task   string `json:"task,omitempty"`
	Worker string `json:"worker,omitempty"`
	// Cycles and Ends count the simulated cycles and attempt ends.
	Cycles         int     `json:"cycles"`
	Ends           int     `json:"ends"`
	HorizonSeconds float64 `json:"horizonSeconds"`
	Note           string  `json:"note"`
	// Confidence says how sure a known start is: high (every attempt end
	// it waits for is estimated from runs of the same stage or a declared
	// duration), medium (from the queue's recent runtimes, the longest of
	// the attempt's peers, or a timeout) or low (an attempt has run past
	// everything known of it). Note says why.
	Confidence string `json:"confidence,omitempty"`
}

// Figure is one named number a policy shows about a group in an
// explanation (usage, weight factor, entitlement), with its unit.
type Figure struct {
	// Name is stable for scripts, lowerCamel: usage, weightFactor,
	// entitled, runningFraction.
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Unit is "slot-seconds", "fraction" (of the pool), or empty for a
	// plain number.
	Unit string `json:"unit,omitempty"`
}

// How a task is pinned to one worker, in AssignedWorker.By.
const (
	// AssignedSticky: stage stickiness, the worker that ran the parent
	// task whose result the task loads.
	AssignedSticky = "sticky"
	// AssignedPipeline: the fixed-pipeline mode, the worker of the task's
	// type.
	AssignedPipeline = "pipeline"
	// AssignedBound: the static-worker mode, the worker of the task's job.
	AssignedBound = "bound"
)

// Figure returns the value of the policy's figure name, 0 when the policy
// shows no such figure.
func (a *AllocationExplain) Figure(name string) float64 {
	for _, f := range a.Figures {
		if f.Name == name {
			return f.Value
		}
	}
	return 0
}

// Wait returns how long the job waits from the simulation's start.
func (x Estimate) Wait() time.Duration { return time.Duration(x.WaitSeconds * float64(time.Second)) }
