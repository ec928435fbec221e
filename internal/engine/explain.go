package engine

import (
	"slices"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// This file answers "why is my job not running": Explain walks the state of
// one job through the pipeline (admission, allocation, placement,
// dependencies) and says, with the figures, where each waiting task stops
// and what would let it go. It reads the engine's state as of the last cycle
// and changes nothing a cycle depends on. The estimate of when the job starts
// is explain_estimate.go's.

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
	// MoreGroups counts pending groups left out of Pending (at most
	// MaxPendingGroups are listed).
	MoreGroups int `json:"moreGroups,omitempty"`
	// Help lists what would let the job start, computed from the state:
	// a smaller request that a free worker fits, a share above its
	// entitlement, endpoint capacity, a priority to beat.
	Help []Help `json:"help,omitempty"`
	// Estimate is when the job's first waiting task should start, from a
	// what-if simulation (EstimateStart); the caller fills it.
	Estimate *Estimate `json:"estimate,omitempty"`
	// Gang says what the job's gang waits for, while one waits to start
	// (docs/explain.md#gang).
	Gang *GangExplain `json:"gang,omitempty"`
}

// MaxPendingGroups bounds Explanation.Pending: a DAG whose every task waits
// on different parents would otherwise list them all.
const MaxPendingGroups = 20

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

// maxExamples bounds PendingExplain.Examples.
const maxExamples = 3

// Help is one thing that would let the job start, computed from the state.
// Kind is stable for scripts: smaller_request, selector, enable_worker,
// add_worker, share_above_entitlement, below_entitlement, endpoint_capacity,
// starvation_reservation, priority, dependency, suspended,
// assigned_worker, affinity_wait, held, gang, gpu_devices.
type Help struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// Explain explains why job id's waiting tasks are not running, as of the
// last cycle, or returns ok=false for a job the engine does not hold.
// Explain only reads: the same state gives the same answer.
func (e *Engine) Explain(id string) (Explanation, bool) {
	j, ok := e.jobs[id]
	if !ok {
		return Explanation{}, false
	}
	x := Explanation{Job: id, Queue: j.q.name, At: e.now, Pending: []PendingExplain{}}
	x.Tasks = countTasks(j)
	if j.spec.Endpoint != "" {
		x.Admission = e.explainAdmission(j)
		x.Help = append(x.Help, admissionHelp(x.Admission, j)...)
	}
	if j.done {
		return x, true
	}
	x.Help = append(x.Help, holdHelp(j)...)
	var ready PendingExplain
	if j.ready.Len() > 0 {
		x.Allocation = e.explainAllocation(j)
		x.Gang = e.explainGang(j)
		x.Help = append(x.Help, gangHelp(x.Gang)...)
	}
	groups, more := e.readyGroups(j)
	for i := range groups {
		g := &groups[i]
		x.Help = append(x.Help, e.placementHelp(j, g, x.Allocation)...)
		if i == 0 {
			ready = *g
		}
	}
	x.Pending = append(x.Pending, groups...)
	x.Pending = append(x.Pending, e.blockedGroups(j)...)
	if x.Allocation != nil {
		x.Help = append(x.Help, allocationHelp(x.Allocation, ready)...)
	}
	x.Help = append(x.Help, dependencyHelp(x.Pending)...)
	x.Help = append(x.Help, e.jobDependencyHelp(j)...)
	if len(x.Pending) > MaxPendingGroups {
		more += len(x.Pending) - MaxPendingGroups
		x.Pending = x.Pending[:MaxPendingGroups]
	}
	x.MoreGroups = more
	// Several ready groups waiting on the same full pool give the same
	// share help: say it once.
	seen := map[Help]bool{}
	x.Help = slices.DeleteFunc(x.Help, func(h Help) bool {
		dup := seen[h]
		seen[h] = true
		return dup
	})
	return x, true
}

func countTasks(j *job) TaskCounts {
	c := TaskCounts{Total: len(j.tasks)}
	for _, t := range j.tasks {
		switch t.state {
		case model.TaskRunning:
			c.Running++
		case model.TaskReady:
			c.Ready++
		case model.TaskBlocked:
			c.Blocked++
		case model.TaskSucceeded:
			c.Succeeded++
		case model.TaskFailed:
			c.Failed++
		case model.TaskCancelled:
			c.Cancelled++
		}
	}
	return c
}
