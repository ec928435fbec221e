package engine

import (
	"slices"
	"strings"

	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/model"
)

// This file keeps the counts of waiting tasks by reason up to date as jobs
// change, so that a server can show how many tasks wait and why without
// listing every waiting job each cycle (Decisions.Pending, Pending). A
// job's ready tasks are explained by its group's reason, or by its own
// reason when the last cycle parked it, or, in a full pool, by the
// placement diagnosis of its head task's shape; its blocked tasks by its
// admission or its dependencies. So the engine keeps, per group, the ready
// tasks by the shape of their job's head task, the groups that have ready
// tasks, and engine-wide the waiting tasks, the jobs with waiting tasks and
// the tasks waiting for admission, which the admission stage counts by
// reason per pool and load. A job's share of these moves when the job
// changes (tally). PendingSummary sums them by reason per group and shape,
// per job the last cycle parked and per endpoint pool and load: a cost that
// follows the groups, shapes, pools and changes, not the backlog.

// PendingSummary counts the tasks that wait by the reason they wait: what
// the list of waiting jobs (Pending) adds up to, without building it. The
// dashboard's overview and the pending-task metric show it.
type PendingSummary struct {
	// Jobs counts the jobs with waiting (ready or blocked) tasks.
	Jobs int `json:"jobs"`
	// Tasks counts the waiting tasks.
	Tasks int `json:"tasks"`
	// ByReason counts the waiting tasks per reason code, by code.
	ByReason []ReasonCount `json:"byReason"`
}

// ReasonCount is the number of waiting tasks that wait for one reason.
type ReasonCount struct {
	Code  string `json:"code"`
	Tasks int    `json:"tasks"`
}

// jobTally is a job's share of the engine's counts, as last added.
type jobTally struct {
	waiting int          // ready and blocked tasks
	ready   int          // ready tasks, counted in g.byHead under head
	head    *place.Shape // the shape of the head ready task
	g       *group       // the group counting the ready tasks
	// unadmitted says the waiting tasks are counted as waiting for
	// admission.
	unadmitted bool
}

// pendingTally is the engine's running count of waiting tasks.
type pendingTally struct {
	jobs  int // jobs with waiting tasks
	tasks int // waiting tasks
	ready int // ready tasks
	// groups lists the groups that have ready tasks (group.tallyPos).
	groups []*group
	// unadmitted counts the waiting tasks of jobs that wait for
	// admission. Their reasons are their endpoints': the admission stage
	// counts them per reason (admit.Controller.WaitingTasks), as the
	// engine tells it each such job's tasks.
	unadmitted int
	// parked lists the jobs parked in the last cycle.
	parked []*job
}

// tally brings j's share of the counts up to date. Every change of a job's
// ready tasks, running or unfinished task count, admission or group calls
// it.
func (e *Engine) tally(j *job) {
	c := &j.tally
	waiting, ready := 0, 0
	var head *place.Shape
	if !j.done {
		waiting, ready, head = j.left-j.running, j.ready.Len(), j.ready.head
	}
	if c.g != j.g || c.head != head {
		if c.ready > 0 {
			e.countReady(c.g, c.head, -c.ready)
		}
		if ready > 0 {
			e.countReady(j.g, head, ready)
		}
	} else if ready != c.ready {
		e.countReady(j.g, head, ready-c.ready)
	}
	p := &e.pend
	p.ready += ready - c.ready
	p.tasks += waiting - c.waiting
	if (waiting > 0) != (c.waiting > 0) {
		if waiting > 0 {
			p.jobs++
		} else {
			p.jobs--
		}
	}
	unadmitted := waiting > 0 && !j.admitted
	if c.unadmitted {
		p.unadmitted -= c.waiting
	}
	if unadmitted {
		p.unadmitted += waiting
		if waiting != c.waiting || !c.unadmitted {
			e.adm.ctl.SetWaitingTasks(j.id, waiting)
		}
	}
	c.unadmitted = unadmitted
	c.waiting, c.ready, c.head, c.g = waiting, ready, head, j.g
}

// countReady counts n more (or, negative, fewer) ready tasks of g whose
// job's head task has shape s, and keeps the list of groups with ready
// tasks.
func (e *Engine) countReady(g *group, s *place.Shape, n int) {
	was := g.byHead.empty()
	g.byHead.add(s, n)
	switch now := g.byHead.empty(); {
	case was && !now:
		g.tallyPos = len(e.pend.groups)
		e.pend.groups = append(e.pend.groups, g)
	case !was && now:
		last := e.pend.groups[len(e.pend.groups)-1]
		e.pend.groups[g.tallyPos], last.tallyPos = last, g.tallyPos
		e.pend.groups[len(e.pend.groups)-1] = nil
		e.pend.groups = e.pend.groups[:len(e.pend.groups)-1]
	}
}

// headCounts counts a group's ready tasks by the shape of their job's head
// task. Most groups see one shape at a time, which is kept inline: no map
// per group, and no map operation per start.
type headCounts struct {
	shape *place.Shape // nil when no task is counted inline
	n     int
	more  map[*place.Shape]int // the other shapes, nil when none
}

// empty reports whether no task is counted.
func (h *headCounts) empty() bool { return h.shape == nil && h.more == nil }

// add counts n more (or, negative, fewer) ready tasks with head shape s.
func (h *headCounts) add(s *place.Shape, n int) {
	if h.shape == s {
		if h.n += n; h.n == 0 {
			h.shape = nil
		}
		return
	}
	if v, ok := h.more[s]; ok {
		if v += n; v != 0 {
			h.more[s] = v
		} else if delete(h.more, s); len(h.more) == 0 {
			h.more = nil
		}
		return
	}
	if h.shape == nil {
		h.shape, h.n = s, n
		return
	}
	if h.more == nil {
		h.more = map[*place.Shape]int{}
	}
	h.more[s] = n
}

// groupReadyCode is the reason code readyReason gives the ready tasks of a
// job of g, with head task shape head, that the last cycle did not park.
func (e *Engine) groupReadyCode(g *group, head *place.Shape) string {
	if g.reasonCycle != e.cycle || g.reason.Code == "" {
		return model.ReasonNotReached
	}
	if g.poolFull {
		if w, why := e.fleet.Place(head); w == nil && why.Code != model.ReasonNoFreeSlot {
			return why.Code
		}
	}
	return g.reason.Code
}

// PendingSummary counts the waiting tasks by reason, with the reasons as of
// the last cycle: the sums of the list Pending gives at the same moment.
// It visits the groups that have ready tasks, with each shape their jobs'
// head tasks have, the jobs the last cycle parked and the endpoint pools
// with each load waiting there, not the backlog, so a server publishes it
// after every cycle.
func (e *Engine) PendingSummary() PendingSummary {
	p := &e.pend
	by := map[string]int{}
	for _, g := range p.groups {
		if h := &g.byHead; h.shape != nil {
			by[e.groupReadyCode(g, h.shape)] += h.n
		}
		for head, n := range g.byHead.more {
			by[e.groupReadyCode(g, head)] += n
		}
	}
	for _, j := range p.parked {
		// A parked job's own reason replaces its group's.
		if n := j.tally.ready; n > 0 && j.reasonCycle == e.cycle {
			by[e.groupReadyCode(j.g, j.tally.head)] -= n
			by[j.reason.Code] += n
		}
	}
	if len(e.held) > 0 {
		e.heldSummary(by)
	}
	// Jobs waiting for admission: their endpoint's reason, counted by the
	// admission stage; a job it does not hold (none should be) waits
	// with not_admitted, as admissionReason says.
	throttled, notAdmitted, counted := e.adm.ctl.WaitingTasks()
	by[model.ReasonThrottled] += throttled
	by[model.ReasonNotAdmitted] += notAdmitted + p.unadmitted - counted
	if blocked := p.tasks - p.ready - p.unadmitted; blocked > 0 {
		by[model.ReasonWaitingDependency] += blocked
	}
	s := PendingSummary{Jobs: p.jobs, Tasks: p.tasks, ByReason: make([]ReasonCount, 0, len(by))}
	for code, n := range by {
		if n != 0 {
			s.ByReason = append(s.ByReason, ReasonCount{Code: code, Tasks: n})
		}
	}
	slices.SortFunc(s.ByReason, func(a, b ReasonCount) int { return strings.Compare(a.Code, b.Code) })
	return s
}

// forgetParked starts a cycle's list of parked jobs.
func (e *Engine) forgetParked() {
	clear(e.pend.parked)
	e.pend.parked = e.pend.parked[:0]
}

// PendingOf gives the entries of Pending that explain job id's waiting
// tasks (none for a job that has none, or that the engine does not hold),
// as of the last cycle: a page listing some jobs asks for those only.
func (e *Engine) PendingOf(id string) []Pending {
	j, ok := e.jobs[id]
	if !ok || j.done {
		return []Pending{}
	}
	return e.appendPending(make([]Pending, 0, 2), j)
}
