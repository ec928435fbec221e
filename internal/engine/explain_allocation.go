package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// AllocationExplain is where the job's group stands under its queue's
// policy: the group's running slots against its target, the policy's own
// figures (policy.Explainer), its rank in the order the policy serves
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
	Figures []policy.Figure `json:"figures,omitempty"`
	Summary string          `json:"summary,omitempty"`
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
	// byPriority says the group serves its jobs by priority, so a higher
	// priority moves the job up inside it.
	byPriority bool
	// policy is what the policy said about the group (policy.Explainer).
	policy policy.GroupExplanation
}

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

// GroupAhead is a group served before the job's.
type GroupAhead struct {
	Group   string `json:"group"`
	Running int    `json:"running"`
	Waiting int    `json:"waiting"`
	// Figure is the group's value of the figure the policy ranks groups
	// by, where it ranks by one (fairshare: usage).
	Figure *policy.Figure `json:"figure,omitempty"`
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
	a.byPriority = q.jobOrder == policy.ByPriorityThenAge
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
// tasks in the order the policy serves them: by one of its figures at now
// (policy.FigureRanker: fairshare by weighted usage), or by its own service
// order of the last cycle (policy.Ranker); fifo has one group, so no rank.
// Then it asks the policy to explain the group (policy.Explainer).
func (e *Engine) rankGroup(a *AllocationExplain, j *job) {
	q := j.q
	var order []*group
	var figure func(g *group) *policy.Figure
	switch p := q.pol.(type) {
	case policy.FigureRanker:
		name, unit, values, by := p.RankFigures(e.now)
		for _, g := range q.groups {
			if g.waiting > 0 {
				order = append(order, g)
			}
		}
		slices.SortFunc(order, func(x, y *group) int {
			return cmp.Or(cmp.Compare(values[x.key], values[y.key]), strings.Compare(x.key, y.key))
		})
		figure = func(g *group) *policy.Figure { return &policy.Figure{Name: name, Value: values[g.key], Unit: unit} }
		a.RankBy = by
	case policy.Ranker:
		keys, by := p.ServiceOrder()
		for _, k := range keys {
			if g := q.groups[k]; g != nil && g.waiting > 0 {
				order = append(order, g)
			}
		}
		a.RankBy = by
	}
	var ahead []policy.GroupState
	for i, g := range order {
		if g == j.g {
			a.GroupRank = i + 1
			break
		}
		st := groupState(g)
		ahead = append(ahead, st)
		if len(a.GroupsAhead) < maxAhead {
			ga := GroupAhead{Group: g.key, Running: st.Running, Waiting: st.Waiting, Priority: st.Priority, Urgent: st.Urgent}
			if figure != nil {
				ga.Figure = figure(g)
			}
			a.GroupsAhead = append(a.GroupsAhead, ga)
		}
	}
	if a.GroupRank == 0 {
		ahead = nil
	}
	ex, ok := q.pol.(policy.Explainer)
	if !ok {
		return
	}
	qy := policy.ExplainQuery{Now: e.now, Queue: q.name, Slots: a.Slots, Group: groupState(j.g),
		Priority: j.spec.Priority, Urgent: j.spec.Urgent, Ahead: ahead}
	if j.g.reasonCycle > 0 {
		qy.Reason = j.g.reason
	}
	a.policy = ex.ExplainGroup(qy)
	a.Figures, a.Summary = a.policy.Figures, a.policy.Summary
}

// groupState is g as a policy's explanation sees it.
func groupState(g *group) policy.GroupState {
	st := policy.GroupState{Key: g.key, Running: len(g.running), Waiting: g.waiting}
	if o := g.oldest(); o != nil {
		st.Priority, st.Urgent = o.spec.Priority, o.spec.Urgent
	}
	return st
}

// helps converts a policy's help into the explanation's.
func helps(hs []policy.Help) []Help {
	var out []Help
	for _, h := range hs {
		out = append(out, Help{Kind: h.Kind, Message: h.Message})
	}
	return out
}

// allocationHelp says what the policy's figures suggest (policy.Explainer:
// a share above its entitlement, a priority that lifts a suspension), and a
// priority to beat inside the group.
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
	out = append(out, helps(a.policy.Help)...)
	if a.JobRank > 1 && len(a.JobsAhead) > 0 && a.byPriority {
		top := a.JobsAhead[0].Priority
		if top >= a.Priority {
			out = append(out, Help{Kind: "priority", Message: fmt.Sprintf(
				"%d job(s) of group %s are ahead of this one; raise its priority above %d to be served first in the group",
				a.JobRank-1, a.Group, top)})
		}
	}
	out = append(out, helps(a.policy.RankHelp)...)
	return out
}

// fullPoolHelp is what the policy says frees slots of a full pool: other
// shares above their entitlement, for fairshare.
func fullPoolHelp(a *AllocationExplain) []Help {
	if a == nil {
		return nil
	}
	return helps(a.policy.FullPoolHelp)
}
