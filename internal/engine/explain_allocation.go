package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/model"
)

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
			if cfg.Algorithm != priority.AlgorithmUsage || cfg.Weights[l] > 0 {
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
	switch code {
	case model.ReasonUnschedulable, model.ReasonWorkersDisabled, model.ReasonMaxSlots, model.ReasonStickyWorkerBusy,
		model.ReasonAssignedWorkerBusy, model.ReasonAffinityWait:
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
