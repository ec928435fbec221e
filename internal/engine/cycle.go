package engine

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// Cycle runs one scheduling cycle at time now and returns its decisions. The
// engine applies the decisions to its own state before returning: a start is
// running from now on, a stopped task is waiting again.
func (e *Engine) Cycle(now time.Time) *Decisions {
	now = e.advance(now)
	e.cycle++
	d := &Decisions{Now: now, Starts: []Start{}, Stops: e.stops, Ended: e.ended, JobsDone: e.jobsDone}
	if d.Stops == nil {
		d.Stops = []Stop{}
	}
	e.stops, e.ended, e.jobsDone = nil, nil, nil
	e.admissionPass(now, d)
	e.forgetParked()
	for _, q := range e.queues {
		e.allocate(q, now, d)
	}
	e.settleStarted()
	e.releaseHolds()
	e.compact()
	if !e.lazyPending {
		d.Pending = e.Pending()
	} else {
		d.Pending = []Pending{}
	}
	return d
}

// allocate hands out the free slots of q's pool under q's policy.
func (e *Engine) allocate(q *queue, now time.Time, d *Decisions) {
	groups := q.active()
	slots, free := e.fleet.PoolSlots(q.pool)
	v := &policy.View{Now: now, Queue: q.name, Slots: slots, Free: free, Groups: make([]policy.Group, len(groups))}
	for i, g := range groups {
		g.view, g.starts, g.stops, g.reason = i, 0, 0, model.Reason{}
		vg := policy.Group{Key: g.key, Running: len(g.running), Waiting: g.waiting, Usable: g.usable()}
		if len(e.held) > 0 {
			e.withoutHeld(&vg, g)
		}
		if j := g.oldest(); j != nil {
			vg.Priority, vg.Urgent, vg.Submitted, vg.Seq = j.spec.Priority, j.spec.Urgent, j.spec.Submitted, j.seq
			vg.Share, vg.Requestor, vg.SLAGroup = j.spec.Share, j.spec.Requestor, j.spec.SLAGroup
		}
		if q.dominant != nil {
			for _, t := range g.running {
				vg.Held = vg.Held.Add(model.AmountsOf(t.spec.Resources))
			}
		}
		v.Groups[i] = vg
	}
	if q.dominant != nil {
		v.Capacity = e.capacity(q)
	}
	v.RunningTasks = func(gi int) []policy.RunningTask {
		g := groups[gi]
		out := make([]policy.RunningTask, len(g.running))
		for k, t := range g.running {
			out[k] = policy.RunningTask{ID: t.id, Group: gi, Priority: t.job.spec.Priority, Urgent: t.job.spec.Urgent,
				Started: t.started, StartSeq: t.startSeq, Holds: model.AmountsOf(t.spec.Resources)}
		}
		sort.Slice(out, func(a, b int) bool { return out[a].StartSeq < out[b].StartSeq })
		return out
	}
	plan := q.pol.Allocate(v)

	for _, st := range plan.Stops {
		if st.Task < 0 || st.Task >= len(e.tasks) {
			continue
		}
		t := e.tasks[st.Task]
		if t == nil || t.state != model.TaskRunning || t.job.q != q {
			continue
		}
		worker := t.worker.Spec.Name
		members := runningMembers(t)
		e.release(t, now)
		e.makeReady(t)
		t.job.g.stops++
		d.Stops = append(d.Stops, Stop{Job: t.job.spec.ID, Task: t.spec.Name, Worker: worker, Reason: st.Reason})
		e.stopMembers(members, st.Reason, now, d)
		e.gangLost(t, now, &d.Stops)
	}
	_, free = e.fleet.PoolSlots(q.pool)
	e.holdAhead(q, free)
	waiting := 0
	for _, g := range groups {
		waiting += g.waiting
	}
	d.Starts = slices.Grow(d.Starts, min(free, waiting))

	var sized policy.SizedAllocator
	if q.dominant != nil {
		sized, _ = plan.Alloc.(policy.SizedAllocator)
	}
	var parked []*job
	for free > 0 {
		gi, ok := plan.Alloc.Next()
		if !ok {
			break
		}
		g := groups[gi]
		t, ch, together := e.nextPlaceable(g, &parked, free, d)
		if t == nil {
			plan.Alloc.Exhausted(gi)
			continue
		}
		if together != nil {
			// A gang starts as a whole: the policy's slot and as many
			// more as it has members to start.
			for _, m := range together {
				e.start(m.t, m.ch, now, d)
				free--
				if sized != nil {
					sized.Took(gi, model.AmountsOf(m.t.spec.Resources))
				}
				plan.Alloc.Started(gi)
			}
			e.gangStarted(t.gang)
			continue
		}
		e.start(t, ch, now, d)
		free--
		if sized != nil {
			sized.Took(gi, model.AmountsOf(t.spec.Resources))
		}
		plan.Alloc.Started(gi)
	}
	for _, j := range parked {
		j.parked = false
		j.g.push(j)
	}

	for i, g := range groups {
		target := -1
		if i < len(plan.Targets) {
			target = plan.Targets[i]
		}
		g.target = target
		if g.waiting > 0 {
			g.reasonCycle, g.poolFull = e.cycle, false
			if r, ok := plan.Alloc.Why(i); ok {
				g.reason = r
			} else if free == 0 {
				g.reason = q.fullReason(slots)
				g.poolFull = true
			} else {
				g.reason = g.notReachedReason()
			}
		}
		d.Groups = append(d.Groups, GroupSummary{Queue: q.name, Group: g.key, Running: len(g.running), Waiting: g.waiting,
			Target: target, Starts: g.starts, Stops: g.stops})
	}
}

// active returns q's groups that have running or waiting tasks, by key.
func (q *queue) active() []*group {
	out := make([]*group, 0, len(q.groups))
	for _, g := range q.groups {
		if len(g.running) > 0 || g.waiting > 0 {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b *group) int { return strings.Compare(a.key, b.key) })
	return out
}

// fullReason says that every slot of the queue's pool is in use. The
// message only changes with the pool's size, so it is formatted once per
// size rather than once per group and cycle.
func (q *queue) fullReason(slots int) model.Reason {
	if q.full.Code == "" || q.fullSlots != slots {
		q.full = model.Because(model.ReasonNoFreeSlot, "all %d slots of queue %q are in use", slots, q.name)
		q.fullSlots = slots
	}
	return q.full
}

// notReachedReason says the policy stopped handing out slots to g while
// some were free; formatted once per policy.
func (g *group) notReachedReason() model.Reason {
	name := g.q.pol.Name()
	if g.notReached.Code == "" || g.notReachedBy != name {
		g.notReached = model.Because(model.ReasonNotReached, "the %s policy handed out no more slots to group %q this cycle", name, g.key)
		g.notReachedBy = name
	}
	return g.notReached
}

// usable is how many more tasks g could run: its waiting tasks, cut by each
// job's slot limit.
func (g *group) usable() int {
	if g.limited == 0 {
		return g.waiting
	}
	n := 0
	for _, j := range g.jobs.items {
		k := j.ready.Len()
		if m := j.maxSlots; m > 0 && j.running+k > m {
			k = max(0, m-j.running)
		}
		n += k
	}
	return n
}

// nextPlaceable finds the group's next task that a worker can take now, and
// the worker. A job whose next task cannot be placed is parked for the rest
// of the cycle, so later jobs of the group can use the slot (backfill); a
// task waiting for its sticky worker is also listed in d.Deferred. When the
// next task belongs to a gang that waits to start, together lists the
// members that start with it (gang.go); free is the pool's free slots.
func (e *Engine) nextPlaceable(g *group, parked *[]*job, free int, d *Decisions) (t *task, ch place.Choice, together []gangStart) {
	for g.jobs.Len() > 0 {
		j := g.jobs.items[0]
		if m := j.maxSlots; m > 0 && j.running >= m {
			if j.capped.Code == "" {
				j.capped = model.Because(model.ReasonMaxSlots, "job %q runs %d tasks, its maxSlots", j.spec.ID, m)
			}
			e.park(j, parked, j.capped)
			continue
		}
		t := j.ready.items[0]
		if gg := t.gang; gg != nil && !gg.launched {
			starts, r, ok := e.tryGang(gg, free)
			if ok {
				return t, place.Choice{}, starts
			}
			if r.Code == "" {
				r = e.gangWaits(gg, free)
			}
			e.park(j, parked, r)
			continue
		}
		var req place.Request
		e.request(&req, t)
		e.withAffinity(&req, t)
		ch, r := e.fleet.Choose(&req)
		if ch.Worker == nil && len(e.reservations) > 0 {
			ch, r = e.backfill(&req, t, r)
		}
		if ch.Worker == nil {
			if r.Code == model.ReasonStickyWorkerBusy {
				d.Deferred = append(d.Deferred, Deferral{Job: j.id, Task: t.spec.Name, Worker: req.Sticky.Spec.Name, Reason: r})
			}
			e.park(j, parked, r)
			continue
		}
		return t, ch, nil
	}
	return nil, place.Choice{}, nil
}

func (e *Engine) park(j *job, parked *[]*job, r model.Reason) {
	j.g.jobs.remove(j.heapPos)
	j.parked = true
	j.reason, j.reasonCycle = r, e.cycle
	*parked = append(*parked, j)
	e.pend.parked = append(e.pend.parked, j)
}

// start runs the head task t of its job on the chosen worker, with the
// tasks merged into its batch.
func (e *Engine) start(t *task, ch place.Choice, now time.Time, d *Decisions) {
	j := t.job
	w := ch.Worker
	j.ready.remove(t.heapPos) // the head, but for a gang's members
	j.g.waiting--
	e.occupy(t, w, now)
	gpus := e.takeGPUs(t, w, nil)
	e.placed(t, w)
	e.ranOn(j, w)
	t.batch = nil
	j.g.starts++
	d.Starts = append(d.Starts, Start{Job: j.id, Task: t.spec.Name, Worker: w.Spec.Name, Attempt: t.attempt, GPUs: gpus, Placement: ch.Info})
	e.merge(t, ch.Info, now, d)
	if j.ready.Len() == 0 {
		j.g.jobs.remove(j.heapPos)
	} else if j.q.jobOrder == policy.ByFewestRunning {
		j.g.jobs.fix(j.heapPos)
	}
}

// compact drops ended jobs from the active list, once enough have ended
// that the walk pays for itself.
func (e *Engine) compact() {
	if e.endedSinceCompact == 0 || e.endedSinceCompact < len(e.active)/8 {
		return
	}
	e.endedSinceCompact = 0
	kept := 0 // e.active[:kept] are the jobs kept so far
	for i, j := range e.active {
		if j.done {
			e.forgetAffinity(j)
			continue
		}
		if kept != i { // only move jobs once an ended one left a gap
			e.active[kept] = j
		}
		kept++
	}
	clear(e.active[kept:])
	e.active = e.active[:kept]
}

// Pending lists, per job, how many tasks wait and why, as of the last
// cycle: ready tasks with the allocation or placement reason, blocked ones
// with the dependencies they wait for.
func (e *Engine) Pending() []Pending {
	// Last cycle's count is a good capacity hint and saves a second walk
	// over the jobs.
	out := make([]Pending, 0, e.pendingHint+e.pendingHint/8+4)
	for _, j := range e.active {
		if !j.done {
			out = e.appendPending(out, j)
		}
	}
	e.pendingHint = len(out)
	return out
}

// appendPending appends the entries of j, which has not ended: its ready
// tasks, then its blocked ones.
func (e *Engine) appendPending(out []Pending, j *job) []Pending {
	if n := j.ready.Len(); n > 0 {
		out = append(out, Pending{Job: j.id, Tasks: n, Reason: e.readyReason(j)})
	}
	if blocked := j.left - j.ready.Len() - j.running; blocked > 0 {
		out = append(out, Pending{Job: j.id, Tasks: blocked, Reason: e.jobBlockedReason(j)})
	}
	return out
}

// readyReason explains why j's ready tasks wait: the placement failure or
// slot limit that parked j this cycle, else its group's reason. When the
// pool was full before j was tried, "no free slot" would hide a task that
// can never run, or that only drained or disabled workers could run, so the
// head task's placement diagnosis is given instead in those cases.
func (e *Engine) readyReason(j *job) model.Reason {
	if j.held != "" {
		return heldReason(j)
	}
	if j.reasonCycle == e.cycle && e.cycle > 0 {
		return j.reason
	}
	g := j.g
	if g.reasonCycle != e.cycle || g.reason.Code == "" {
		return model.Because(model.ReasonNotReached, "no cycle has run since the task became ready")
	}
	if g.poolFull && j.ready.Len() > 0 {
		if w, why := e.fleet.Place(j.ready.head); w == nil && why.Code != model.ReasonNoFreeSlot {
			return why
		}
	}
	return g.reason
}

// jobBlockedReason explains a job's blocked tasks by its first one. The
// message is kept until that task, or the number of needs it waits for,
// changes: a cycle does not format one message per DAG job.
func (e *Engine) jobBlockedReason(j *job) model.Reason {
	if !j.admitted && j.held != "" {
		return heldReason(j)
	}
	if !j.admitted {
		return e.admissionReason(j)
	}
	t := j.firstBlocked()
	if j.blockedMemo.task != t || j.blockedMemo.unmet != t.unmet {
		j.blockedMemo.task, j.blockedMemo.unmet = t, t.unmet
		j.blockedMemo.reason = e.blockedReason(t)
	}
	return j.blockedMemo.reason
}

func (e *Engine) blockedReason(t *task) model.Reason {
	if !t.job.admitted && t.job.held != "" {
		return heldReason(t.job)
	}
	if !t.job.admitted {
		return e.admissionReason(t.job)
	}
	var unmet []string
	for _, need := range t.spec.Needs {
		if p := t.job.byName[need]; p.state != model.TaskSucceeded {
			unmet = append(unmet, need)
		}
	}
	return model.Because(model.ReasonWaitingDependency, "task %q waits for %v", t.spec.Name, unmet)
}

// TaskReason says why a task is not running, or ok=false when it runs or has
// ended. Blocked tasks name the dependencies they wait for.
func (e *Engine) TaskReason(jobID, taskName string) (model.Reason, bool) {
	t, err := e.lookup(jobID, taskName)
	if err != nil {
		return model.Reason{}, false
	}
	switch t.state {
	case model.TaskReady:
		return e.readyReason(t.job), true
	case model.TaskBlocked:
		return e.blockedReason(t), true
	}
	return model.Reason{}, false
}

// TaskState returns a task's state and, while it runs, its worker.
func (e *Engine) TaskState(jobID, taskName string) (model.TaskState, string, bool) {
	t, err := e.lookup(jobID, taskName)
	if err != nil {
		return "", "", false
	}
	w := ""
	if t.worker != nil {
		w = t.worker.Spec.Name
	}
	return t.state, w, true
}

// firstBlocked returns the job's first task that waits on dependencies or
// admission. A task never goes back to blocked once it left, so the search
// resumes where the last one stopped and a cycle does not walk every task of
// every DAG job.
func (j *job) firstBlocked() *task {
	for ; j.blockedFrom < len(j.tasks); j.blockedFrom++ {
		if t := j.tasks[j.blockedFrom]; t.state == model.TaskBlocked {
			return t
		}
	}
	return nil
}
