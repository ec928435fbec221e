package engine

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/model"
)

// This file answers "why is my job not running": Explain walks the state of
// one job through the pipeline (admission, allocation, placement,
// dependencies) and says, with the figures, where each waiting task stops
// and what would let it go. It reads the engine's state as of the last cycle
// and changes nothing a cycle depends on. The estimate of when the job starts
// is whatif.go's.

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
// policy: the group's running slots against its target, its usage and
// entitlement where the policy keeps them, its rank in the order the policy
// serves groups, and the job's rank inside its group.
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
	// Usage, WeightFactor and Entitled (a fraction of the pool) are the
	// fairshare policy's figures; RunningFraction is Running / Slots.
	Usage           float64 `json:"usage,omitempty"`
	WeightFactor    float64 `json:"weightFactor,omitempty"`
	Entitled        float64 `json:"entitled,omitempty"`
	RunningFraction float64 `json:"runningFraction,omitempty"`
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
	// rankHelp is the priority that would lift a suspension or rank the
	// group first, where the policy orders groups by level (rankGroup).
	rankHelp []Help
}

// GroupAhead is a group served before the job's.
type GroupAhead struct {
	Group   string  `json:"group"`
	Running int     `json:"running"`
	Waiting int     `json:"waiting"`
	Usage   float64 `json:"usage,omitempty"`
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

// maxAhead bounds the groups and jobs listed ahead.
const maxAhead = 10

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

// Dependency is a parent task not yet succeeded.
type Dependency struct {
	Task   string          `json:"task"`
	State  model.TaskState `json:"state"`
	Worker string          `json:"worker,omitempty"`
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
}

// Placement filters, in the order Explain applies them: what a worker can
// never offer first (labels, then hardware, scarcest first, as
// model.Resources.Shortfall orders it), then its state, a static-worker
// binding to another job, and last whether it is busy now.
const (
	FilterLabels    = "labels"
	FilterGPUs      = "gpus"
	FilterGPUMemory = "gpu_memory"
	FilterMemory    = "memory"
	FilterCPU       = "cpu"
	FilterState     = "draining_or_disabled"
	FilterBound     = "bound_to_other_job"
	FilterBusy      = "busy"
)

var filterOrder = [...]string{FilterLabels, FilterGPUs, FilterGPUMemory, FilterMemory, FilterCPU, FilterState, FilterBound, FilterBusy}

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

// Help is one thing that would let the job start, computed from the state.
// Kind is stable for scripts: smaller_request, selector, enable_worker,
// share_above_entitlement, below_entitlement, endpoint_capacity,
// starvation_reservation, priority, dependency, suspended.
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
	var ready PendingExplain
	if j.ready.Len() > 0 {
		x.Allocation = e.explainAllocation(j)
	}
	groups, more := e.readyGroups(j)
	for i := range groups {
		g := &groups[i]
		x.Help = append(x.Help, e.placementHelp(j, g)...)
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

// explainAdmission reads the job's admission record and its variant's
// figures.
func (e *Engine) explainAdmission(j *job) *AdmissionExplain {
	info, ok := e.Admission(j.id)
	if !ok {
		return &AdmissionExplain{Endpoint: j.spec.Endpoint, Variant: j.spec.Variant, Admitted: j.admitted}
	}
	a := &AdmissionExplain{Endpoint: info.Endpoint, Variant: info.Variant, Admitted: info.Admitted, Load: info.Load,
		LoadSource: info.LoadSource, ThrottledSince: info.ThrottledAt, AdmittedAt: info.AdmittedAt,
		SingleJobException: info.Exception}
	if vs, ok := variantStats(e.EndpointStats(), info.Endpoint, info.Variant); ok {
		a.MaxCapacity, a.TargetCapacity, a.InUse, a.Available = vs.MaxCapacity, vs.TargetCapacity, vs.Load, vs.Available
		a.RunningJobs, a.WaitingJobs, a.ReservedFor = vs.RunningJobs, vs.Visible, vs.ReservedFor
	}
	if !info.Admitted {
		a.Reason = e.admissionReason(j)
	}
	return a
}

func variantStats(all []admit.EndpointStats, endpoint, variant string) (admit.VariantStats, bool) {
	for _, es := range all {
		if es.Endpoint != endpoint {
			continue
		}
		for _, vs := range es.Variants {
			if vs.Variant == variant {
				return vs, true
			}
		}
	}
	return admit.VariantStats{}, false
}

func admissionHelp(a *AdmissionExplain, j *job) []Help {
	if a.Admitted {
		return nil
	}
	where := a.Endpoint
	if a.Variant != "" {
		where += " variant " + a.Variant
	}
	var out []Help
	if a.Load > a.Available {
		out = append(out, Help{Kind: "endpoint_capacity", Message: fmt.Sprintf(
			"endpoint %s is at capacity: %d of %d in use (target %d of max %d); the job needs %d, %d more than is free",
			where, a.InUse, a.TargetCapacity, a.TargetCapacity, a.MaxCapacity, a.Load, a.Load-max(a.Available, 0))})
	}
	switch {
	case a.ReservedFor == j.id:
		out = append(out, Help{Kind: "starvation_reservation", Message: fmt.Sprintf(
			"the job holds the starvation reservation of %s: no smaller job is admitted there before it", where)})
	case a.ReservedFor != "":
		out = append(out, Help{Kind: "starvation_reservation", Message: fmt.Sprintf(
			"job %s holds the starvation reservation of %s: it is admitted first", a.ReservedFor, where)})
	}
	return out
}

// explainAllocation places the job's group in its queue's order.
func (e *Engine) explainAllocation(j *job) *AllocationExplain {
	g, q := j.g, j.q
	slots, free := e.fleet.PoolSlots(q.pool)
	a := &AllocationExplain{Queue: q.name, Policy: q.pol.Name(), Group: g.key, Slots: slots, Free: free,
		Running: len(g.running), Waiting: g.waiting, Target: g.target, Priority: j.spec.Priority, JobRank: 1}
	if slots > 0 {
		a.RunningFraction = float64(a.Running) / float64(slots)
	}
	if g.reasonCycle == e.cycle && e.cycle > 0 {
		a.Reason = g.reason
	}
	// The job's place inside its group, in the group's job order.
	var ahead []*job
	for _, o := range g.members {
		if o != j && !o.done && o.ready.Len() > 0 && g.jobs.less(o, j) {
			ahead = append(ahead, o)
		}
	}
	slices.SortFunc(ahead, func(a, b *job) int {
		if g.jobs.less(a, b) {
			return -1
		}
		return 1
	})
	a.JobRank = len(ahead) + 1
	for _, o := range ahead[:min(len(ahead), maxAhead)] {
		a.JobsAhead = append(a.JobsAhead, JobAhead{Job: o.id, Priority: o.spec.Priority, Running: o.running, Waiting: o.ready.Len()})
	}
	e.rankGroup(a, j)
	return a
}

// rankGroup places the job's group among the queue's groups with waiting
// tasks in the order the policy serves them: fairshare by weighted usage
// (lowest first, share name on ties), the others by their own service order
// of the last cycle (policy.Ranker). fifo has one group, so no rank.
func (e *Engine) rankGroup(a *AllocationExplain, j *job) {
	q := j.q
	var order []*group
	usage := map[string]float64{}
	switch p := q.pol.(type) {
	case *fairshare.Policy:
		for _, s := range p.Status(e.now) {
			usage[s.Share] = s.Usage
			if s.Share == j.g.key {
				a.Usage, a.WeightFactor, a.Entitled = s.Usage, s.WeightFactor, s.EntitledFraction
			}
		}
		for _, g := range q.groups {
			if g.waiting > 0 {
				order = append(order, g)
			}
		}
		slices.SortFunc(order, func(x, y *group) int {
			return cmp.Or(cmp.Compare(usage[x.key], usage[y.key]), strings.Compare(x.key, y.key))
		})
		a.RankBy = "lowest weighted usage first, share name on ties"
	case policy.Ranker:
		keys, by := p.ServiceOrder()
		for _, k := range keys {
			if g := q.groups[k]; g != nil && g.waiting > 0 {
				order = append(order, g)
			}
		}
		a.RankBy = by
	default:
		return
	}
	var ahead []*group
	for i, g := range order {
		if g == j.g {
			a.GroupRank, ahead = i+1, order[:i]
			break
		}
		if len(a.GroupsAhead) < maxAhead {
			ga := GroupAhead{Group: g.key, Running: len(g.running), Waiting: g.waiting, Usage: usage[g.key]}
			if o := g.oldest(); o != nil {
				ga.Priority, ga.Urgent = o.spec.Priority, o.spec.Urgent
			}
			a.GroupsAhead = append(a.GroupsAhead, ga)
		}
	}
	a.rankHelp = levelHelp(q, j, ahead)
}

// levelHelp says which priority would put j's group ahead of the groups
// before it, when that is certain: only the priority policy with serial
// priority serves groups by level (after urgent jobs, which no priority
// beats). Elsewhere a priority moves a weight, or nothing, so Explain
// promises nothing.
func levelHelp(q *queue, j *job, ahead []*group) []Help {
	p, ok := q.pol.(*priority.Priority)
	if !ok || j.spec.Urgent {
		return nil
	}
	cfg := p.Config()
	if j.g.reasonCycle > 0 && j.g.reason.Code == model.ReasonSuspended {
		// Level 0 is suspended, and so is a level of weight 0 under the
		// Usage algorithm: the first level above both runs.
		for l := 1; l < cfg.Levels; l++ {
			if cfg.Algorithm != policy.AlgorithmUsage || cfg.Weights[l] > 0 {
				return []Help{{Kind: "suspended", Message: fmt.Sprintf(
					"priority %d is suspended under the priority policy: priority %d or more lets the job run", j.spec.Priority, l)}}
			}
		}
		return nil
	}
	if len(ahead) == 0 || !cfg.SerialPriority {
		return nil
	}
	top := 0
	for _, g := range ahead {
		o := g.oldest()
		if o == nil {
			continue
		}
		if o.spec.Urgent {
			return nil
		}
		top = max(top, min(o.spec.Priority, cfg.Levels-1))
	}
	if top+1 > cfg.Levels-1 {
		return nil
	}
	return []Help{{Kind: "priority", Message: fmt.Sprintf(
		"%d job(s) of queue %s are served before this one (serial priority: higher levels first); priority %d would put it first",
		len(ahead), q.name, top+1)}}
}

// allocationHelp says what the policy's figures suggest: shares above
// their entitlement, a priority to beat, a suspended job.
func allocationHelp(a *AllocationExplain, ready PendingExplain) []Help {
	var out []Help
	code := a.Reason.Code
	if ready.Reason.Code != "" {
		code = ready.Reason.Code
	}
	if code == model.ReasonUnschedulable || code == model.ReasonWorkersDisabled || code == model.ReasonMaxSlots {
		return nil // the policy is not what holds the job back
	}
	if a.Policy == fairshare.Name && a.Slots > 0 {
		if a.RunningFraction < a.Entitled {
			out = append(out, Help{Kind: "below_entitlement", Message: fmt.Sprintf(
				"share %s runs %s of the pool, below its entitlement of %s: it is served before shares above theirs as their tasks end",
				a.Group, pctOf(a.RunningFraction), pctOf(a.Entitled))})
		} else if a.Entitled > 0 {
			out = append(out, Help{Kind: "share_above_entitlement", Message: fmt.Sprintf(
				"share %s (this job's) is at or above its entitlement (%s vs %s): other shares are served first",
				a.Group, pctOf(a.RunningFraction), pctOf(a.Entitled))})
		}
	}
	if a.JobRank > 1 && len(a.JobsAhead) > 0 && a.Policy != "classload" {
		top := a.JobsAhead[0].Priority
		if top >= a.Priority {
			out = append(out, Help{Kind: "priority", Message: fmt.Sprintf(
				"%d job(s) of group %s are ahead of this one; raise its priority above %d to be served first in the group",
				a.JobRank-1, a.Group, top)})
		}
	}
	out = append(out, a.rankHelp...)
	return out
}

// shareHelp says which other shares run above their entitlement: they are
// why a fairshare pool is full.
func (e *Engine) shareHelp(j *job) []Help {
	p, ok := j.q.pol.(*fairshare.Policy)
	if !ok {
		return nil
	}
	slots, _ := e.fleet.PoolSlots(j.q.pool)
	if slots == 0 {
		return nil
	}
	var out []Help
	for _, s := range p.Status(e.now) {
		if s.Share == j.g.key || s.EntitledFraction == 0 {
			continue
		}
		if run := float64(s.Running) / float64(slots); run > s.EntitledFraction+1e-9 {
			out = append(out, Help{Kind: "share_above_entitlement", Message: fmt.Sprintf(
				"share %s is above its entitlement (%.0f%% vs %.0f%%): its tasks are not stopped, but as they end the slots go to shares below theirs",
				s.Share, 100*run, 100*s.EntitledFraction)})
		}
	}
	return out
}

// readyGroups groups the job's ready tasks by shape; the group of the head
// task comes first and carries the job's reason. Only the first
// MaxPendingGroups shapes are explained (each costs a pass over the fleet);
// more counts the others.
func (e *Engine) readyGroups(j *job) (groups []PendingExplain, more int) {
	if j.ready.Len() == 0 {
		return nil, 0
	}
	byShape := map[*place.Shape][]*task{}
	var shapes []*place.Shape
	for _, t := range j.ready.items {
		if _, ok := byShape[t.shape]; !ok {
			shapes = append(shapes, t.shape)
		}
		byShape[t.shape] = append(byShape[t.shape], t)
	}
	head := j.ready.items[0].shape
	slices.SortFunc(shapes, func(a, b *place.Shape) int {
		if a == head || b == head {
			if a == head {
				return -1
			}
			return 1
		}
		return cmp.Compare(minIdx(byShape[a]), minIdx(byShape[b]))
	})
	if len(shapes) > MaxPendingGroups {
		more, shapes = len(shapes)-MaxPendingGroups, shapes[:MaxPendingGroups]
	}
	out := make([]PendingExplain, 0, len(shapes))
	for _, s := range shapes {
		ts := byShape[s]
		p := PendingExplain{State: model.TaskReady, Tasks: len(ts), Examples: examples(ts)}
		p.Placement = e.explainPlacement(j, s)
		if s == head {
			p.Reason = e.readyReason(j)
		} else {
			p.Reason = placementReason(p.Placement, e.readyReason(j))
		}
		out = append(out, p)
	}
	return out, more
}

func minIdx(ts []*task) int {
	m := math.MaxInt
	for _, t := range ts {
		m = min(m, t.idx)
	}
	return m
}

func examples(ts []*task) []string {
	ts = slices.Clone(ts)
	slices.SortFunc(ts, func(a, b *task) int { return cmp.Compare(a.idx, b.idx) })
	out := make([]string, 0, min(len(ts), maxExamples))
	for _, t := range ts[:min(len(ts), maxExamples)] {
		out = append(out, t.spec.Name)
	}
	return out
}

// placementReason is the reason of ready tasks whose shape is not the
// job's head: its own placement answer when no worker takes it now, else
// the job's.
func placementReason(p *PlacementExplain, job model.Reason) model.Reason {
	if p.FitNow > 0 {
		return job
	}
	removed := map[string]int{}
	for _, f := range p.Removed {
		removed[f.Filter] = f.Workers
	}
	switch {
	case p.Workers == 0:
		return model.Because(model.ReasonUnschedulable, "no workers are registered")
	case removed[FilterBusy]+removed[FilterBound] > 0:
		return model.Because(model.ReasonNoFreeSlot, "needs %s; all %d workers that fit are busy", p.Needs, removed[FilterBusy]+removed[FilterBound])
	case removed[FilterState] > 0:
		return model.Because(model.ReasonWorkersDisabled, "needs %s; the %d workers that fit are draining or disabled", p.Needs, removed[FilterState])
	}
	return model.Because(model.ReasonUnschedulable, "needs %s; no worker can ever run it", p.Needs)
}

// explainPlacement runs shape s past every registered worker.
func (e *Engine) explainPlacement(j *job, s *place.Shape) *PlacementExplain {
	p := &PlacementExplain{Needs: s.Req, Selector: s.Sel, Removed: []FilterCount{}}
	counts := map[string]int{}
	why := map[string]string{}
	var bestKey [3]float64
	own := e.fleet.Bound(j.id)
	keys := slices.Sorted(maps.Keys(s.Sel))
	var bestW *place.Worker
	for _, w := range e.fleet.Workers() {
		if w.Gone() {
			continue
		}
		p.Workers++
		lacks, hard, soft, deficit := workerLacks(j, s, keys, w, own, false)
		filter := ""
		if len(lacks) > 0 {
			filter = lacks[0].What
			if strings.HasPrefix(filter, "label ") {
				filter = FilterLabels
			}
		}
		switch filter {
		case "":
			p.FitNow++
		case "state":
			counts[FilterState]++
		case "bound":
			counts[FilterBound]++
		case "slot", "free " + FilterGPUs, "free " + FilterMemory, "free " + FilterCPU:
			counts[FilterBusy]++
		default:
			counts[filter]++
		}
		if filter == FilterLabels && why[FilterLabels] == "" {
			why[FilterLabels] = fmt.Sprintf("selector %s does not match (e.g. %s has %s)", s.Sel, w.Spec.Name, lacks[0].Have)
		}
		if filter == "" {
			continue
		}
		key := [3]float64{float64(hard), float64(soft), deficit}
		if bestW == nil || less3(key, bestKey) {
			bestW, bestKey = w, key
		}
	}
	if p.FitNow == 0 && bestW != nil {
		lacks, _, _, _ := workerLacks(j, s, keys, bestW, own, true)
		p.Closest = &ClosestWorker{Worker: bestW.Spec.Name, State: bestW.Spec.State, Lacks: lacks}
	}
	need := s.Req
	defaults := map[string]string{
		FilterGPUs:      fmt.Sprintf("fewer than %d GPUs", need.GPUs),
		FilterGPUMemory: fmt.Sprintf("GPUs with less than %d MB each", need.GPUMemoryMB),
		FilterMemory:    fmt.Sprintf("less than %d MB of memory", need.MemoryMB),
		FilterCPU:       fmt.Sprintf("fewer than %g CPUs", float64(need.MilliCPU)/1000),
		FilterState:     "draining or disabled: they take no new tasks",
		FilterBound:     "bound to another job, or not the worker this job is bound to (static-worker mode)",
		FilterBusy:      "every slot in use, or too little left unused by the tasks they run",
	}
	for _, f := range filterOrder {
		if n := counts[f]; n > 0 {
			w := why[f]
			if w == "" {
				w = defaults[f]
			}
			p.Removed = append(p.Removed, FilterCount{Filter: f, Workers: n, Why: w})
		}
	}
	return p
}

func less3(a, b [3]float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// workerLacks lists what w does not offer shape s, in filter order: the
// first entry is the filter that removes it. hard counts what the worker
// can never offer (labels, hardware), soft what it may offer later (ready
// state, a free slot); deficit sums the relative hardware shortfalls. own
// is the worker j is bound to (static-worker mode), nil if none: j runs
// nowhere else. keys are s.Sel's keys, sorted. Without detail only What is
// filled, so that counting 10,000 workers formats nothing.
func workerLacks(j *job, s *place.Shape, keys []string, w, own *place.Worker, detail bool) (lacks []Lack, hard, soft int, deficit float64) {
	add := func(what string, isHard bool, need, have string) {
		lacks = append(lacks, Lack{What: what, Need: need, Have: have})
		if isHard {
			hard++
		} else {
			soft++
		}
	}
	for _, k := range keys {
		if have, ok := w.Spec.Labels[k]; !ok || have != s.Sel[k] {
			if !ok {
				have = "(none)"
			}
			add("label "+k, true, s.Sel[k], have)
		}
	}
	need, capa := s.Req, w.Spec.Capacity
	short := func(what string, n, h int64, unit func(int64) string) {
		deficit += relCut(n, h)
		if detail {
			add(what, true, unit(n), unit(h))
		} else {
			add(what, true, "", "")
		}
	}
	if need.GPUs > capa.GPUs {
		short(FilterGPUs, need.GPUs, capa.GPUs, gpus)
	}
	if need.GPUs > 0 && need.GPUMemoryMB > capa.GPUMemoryMB {
		short(FilterGPUMemory, need.GPUMemoryMB, capa.GPUMemoryMB, mb)
	}
	if need.MemoryMB > capa.MemoryMB {
		short(FilterMemory, need.MemoryMB, capa.MemoryMB, mb)
	}
	if need.MilliCPU > capa.MilliCPU {
		short(FilterCPU, need.MilliCPU, capa.MilliCPU, milliCPUs)
	}
	if w.Spec.State != model.WorkerReady {
		add("state", false, string(model.WorkerReady), string(w.Spec.State))
	}
	if b := w.BoundTo(); b != "" && b != j.id {
		add("bound", false, "unbound or bound to "+j.id, "bound to "+b)
	} else if own != nil && own != w {
		add("bound", false, "worker "+own.Spec.Name+", which job "+j.id+" is bound to", "another worker")
	}
	if w.FreeSlots() < 1 {
		have := ""
		if detail {
			have = fmt.Sprintf("%d of %d slots in use", w.Running, w.Spec.Slots)
		}
		add("slot", false, "a free slot", have)
	} else if hard == 0 {
		free := capa.Sub(w.Used)
		var what, needS, haveS string
		switch need.Shortfall(free) {
		case "gpus":
			what, needS, haveS = FilterGPUs, gpus(need.GPUs), gpus(free.GPUs)
		case "memory":
			what, needS, haveS = FilterMemory, mb(need.MemoryMB), mb(free.MemoryMB)
		case "cpu":
			what, needS, haveS = FilterCPU, milliCPUs(need.MilliCPU), milliCPUs(free.MilliCPU)
		}
		if what != "" {
			add("free "+what, false, needS, haveS+" unused")
		}
	}
	return lacks, hard, soft, deficit
}

func gpus(n int64) string      { return fmt.Sprintf("%d GPU", n) }
func mb(n int64) string        { return fmt.Sprintf("%d MB", n) }
func milliCPUs(m int64) string { return fmt.Sprintf("%g CPU", float64(m)/1000) }
func pctOf(f float64) string   { return fmt.Sprintf("%.0f%%", 100*f) }

// placementHelp computes counterfactuals for one group of ready tasks when
// no worker takes them now: the largest smaller request that a free ready
// worker fits, a selector that shuts out workers that would fit, and a
// drained or disabled worker that would.
func (e *Engine) placementHelp(j *job, g *PendingExplain) []Help {
	p := g.Placement
	if p == nil || p.FitNow > 0 {
		if p != nil && g.Reason.Code == model.ReasonNoFreeSlot {
			return e.shareHelp(j)
		}
		return nil
	}
	var out []Help
	if h, ok := e.smallerRequest(j, p, g.Reason); ok {
		out = append(out, h)
	}
	var offSelector, offState []string
	own := e.fleet.Bound(j.id)
	for _, w := range e.fleet.Workers() {
		if b := w.BoundTo(); w.Gone() || b != "" && b != j.id || own != nil && own != w {
			continue
		}
		sel := !p.Selector.Matches(w.Spec.Labels)
		fits := p.Needs.FitsIn(w.Spec.Capacity)
		switch {
		case sel && fits && w.Spec.State == model.WorkerReady:
			offSelector = append(offSelector, w.Spec.Name)
		case !sel && fits && w.Spec.State != model.WorkerReady:
			offState = append(offState, w.Spec.Name+" ("+string(w.Spec.State)+")")
		}
	}
	if len(offSelector) > 0 {
		out = append(out, Help{Kind: "selector", Message: fmt.Sprintf(
			"%d ready worker(s) have the resources but not the labels %s (e.g. %s): a job selector or queue pool that matches them would let the task run there",
			len(offSelector), p.Selector, strings.Join(offSelector[:min(3, len(offSelector))], ", "))})
	}
	if len(offState) > 0 {
		out = append(out, Help{Kind: "enable_worker", Message: fmt.Sprintf(
			"%d worker(s) that fit are not ready: %s; setting one ready would let the task run there",
			len(offState), strings.Join(offState[:min(3, len(offState))], ", "))})
	}
	if g.Reason.Code == model.ReasonNoFreeSlot {
		out = append(out, e.shareHelp(j)...)
	}
	return out
}

// smallerRequest finds the free ready worker that fits the task with the
// least cut request (each dimension cut to what the worker has unused, a
// GPU task keeping at least one GPU), and says what asking for it would do.
func (e *Engine) smallerRequest(j *job, p *PlacementExplain, r model.Reason) (Help, bool) {
	need := p.Needs
	var best *place.Worker
	var bestReq model.Resources
	bestCut := math.Inf(1)
	own := e.fleet.Bound(j.id)
	for _, w := range e.fleet.Workers() {
		if !w.Takes() || w.FreeSlots() < 1 || !p.Selector.Matches(w.Spec.Labels) {
			continue
		}
		if b := w.BoundTo(); b != "" && b != j.id || own != nil && own != w {
			continue
		}
		free := w.Spec.Capacity.Sub(w.Used)
		red := model.Resources{MilliCPU: min(need.MilliCPU, free.MilliCPU), MemoryMB: min(need.MemoryMB, free.MemoryMB),
			GPUs: min(need.GPUs, free.GPUs)}
		if need.GPUs > 0 {
			red.GPUMemoryMB = min(need.GPUMemoryMB, w.Spec.Capacity.GPUMemoryMB)
		}
		if red == need || !red.FitsIn(free) ||
			need.GPUs > 0 && (red.GPUs < 1 || need.GPUMemoryMB > 0 && red.GPUMemoryMB < 1) ||
			need.MemoryMB > 0 && red.MemoryMB < 1 || need.MilliCPU > 0 && red.MilliCPU < 1 {
			continue
		}
		cut := relCut(need.GPUs, red.GPUs) + relCut(need.GPUMemoryMB, red.GPUMemoryMB) + relCut(need.MemoryMB, red.MemoryMB) + relCut(need.MilliCPU, red.MilliCPU)
		if cut < bestCut-1e-12 {
			best, bestReq, bestCut = w, red, cut
		}
	}
	if best == nil {
		return Help{}, false
	}
	var parts []string
	if bestReq.GPUs != need.GPUs {
		parts = append(parts, fmt.Sprintf("%d GPU instead of %d", bestReq.GPUs, need.GPUs))
	}
	if bestReq.GPUMemoryMB != need.GPUMemoryMB {
		parts = append(parts, fmt.Sprintf("%d MB of GPU memory instead of %d", bestReq.GPUMemoryMB, need.GPUMemoryMB))
	}
	if bestReq.MemoryMB != need.MemoryMB {
		parts = append(parts, fmt.Sprintf("%d MB of memory instead of %d", bestReq.MemoryMB, need.MemoryMB))
	}
	if bestReq.MilliCPU != need.MilliCPU {
		parts = append(parts, fmt.Sprintf("%g CPU instead of %g", float64(bestReq.MilliCPU)/1000, float64(need.MilliCPU)/1000))
	}
	// The policy handed the task a slot when placement is what refused it;
	// otherwise a free worker that fits is only a worker, not a start.
	what := "would fit worker %s, which is free now"
	if r.Code == model.ReasonUnschedulable || r.Code == model.ReasonWorkersDisabled {
		what = "would start now on worker %s"
	}
	return Help{Kind: "smaller_request", Message: fmt.Sprintf("asking for %s "+what, strings.Join(parts, ", "), best.Spec.Name)}, true
}

func relCut(need, got int64) float64 {
	if need <= 0 {
		return 0
	}
	return float64(need-got) / float64(need)
}

// blockedGroups groups the job's blocked tasks: all of them when the job
// waits for admission, else by the set of parents they wait for.
func (e *Engine) blockedGroups(j *job) []PendingExplain {
	var blocked []*task
	for _, t := range j.tasks {
		if t.state == model.TaskBlocked {
			blocked = append(blocked, t)
		}
	}
	if len(blocked) == 0 {
		return nil
	}
	if !j.admitted {
		return []PendingExplain{{State: model.TaskBlocked, Tasks: len(blocked), Examples: examples(blocked), Reason: e.admissionReason(j)}}
	}
	type set struct {
		key   string
		tasks []*task
		deps  []Dependency
	}
	var sets []*set
	byKey := map[string]*set{}
	for _, t := range blocked {
		var names []string
		var deps []Dependency
		for _, need := range t.spec.Needs {
			p := j.byName[need]
			if p.state == model.TaskSucceeded {
				continue
			}
			names = append(names, need)
			d := Dependency{Task: need, State: p.state}
			if p.worker != nil {
				d.Worker = p.worker.Spec.Name
			}
			deps = append(deps, d)
		}
		key := strings.Join(names, "\x00")
		s, ok := byKey[key]
		if !ok {
			s = &set{key: key, deps: deps}
			byKey[key] = s
			sets = append(sets, s)
		}
		s.tasks = append(s.tasks, t)
	}
	out := make([]PendingExplain, 0, len(sets))
	for _, s := range sets {
		out = append(out, PendingExplain{State: model.TaskBlocked, Tasks: len(s.tasks), Examples: examples(s.tasks),
			Reason: e.blockedReason(s.tasks[0]), Dependencies: s.deps})
	}
	return out
}

// dependencyHelp names the parents to wait for, or to fix when one failed.
func dependencyHelp(ps []PendingExplain) []Help {
	var out []Help
	seen := map[string]bool{}
	for _, p := range ps {
		for _, d := range p.Dependencies {
			if seen[d.Task] {
				continue
			}
			seen[d.Task] = true
			switch d.State {
			case model.TaskRunning:
				out = append(out, Help{Kind: "dependency", Message: fmt.Sprintf("parent task %s is running on %s: its children start when it succeeds", d.Task, d.Worker)})
			case model.TaskReady, model.TaskBlocked:
				out = append(out, Help{Kind: "dependency", Message: fmt.Sprintf("parent task %s is %s itself: see its own entry", d.Task, d.State)})
			}
			if len(out) >= maxAhead {
				return out
			}
		}
	}
	return out
}
