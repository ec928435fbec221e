package engine

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/model"
)

// This file is gang scheduling (docs/jobs.md#gangs): the tasks of a gang
// start together or not at all, a waiting gang at the head of its queue
// holds the capacity it is expected to start on, and a gang that loses a
// member below its minimum stops as a whole.
//
// Placing a gang: its first min(minAvailable, tasks left) ready members are
// placed one after the other against the fleet, each occupying its worker
// for the next one's choice; then every placement is undone. If all found
// a worker, they start on those workers in the same order (which leaves the
// fleet as the trial did); if one did not, nothing starts and nothing is
// held by the trial. The other members of a started gang follow one by
// one, as capacity frees.
//
// Reservation and backfill (Slurm's backfill rule, conservatively): the
// first gang of a queue that does not fit in a cycle (the one the policy
// reached first) reserves capacity. Its earliest start is the time at
// which enough capacity for it will have freed on the workers that can run
// its tasks, from the expected ends (start + declared duration) of the
// tasks running there; the workers it would start on then are held for the
// rest of the cycle, and again at the start of the next cycles while it
// waits. A task may start on a held worker only if its declared duration
// ends it by the gang's earliest start; other tasks use the workers the
// gang does not need. When a running task on the workers the gang needs
// has no declared duration, the earliest start is unknown: the gang then
// holds the free workers that can run its tasks, and gathers them as they
// free, until it fits.

// gang is a set of tasks of one job that start together.
type gang struct {
	name    string // the task entry (stage), or spec.JobGang for the whole job
	job     *job
	members []*task // in declaration order
	min     int     // minAvailable
	// launched says that the gang started its minimum together and has
	// not lost a member below it since: its other members follow one by
	// one.
	launched bool
}

// gangStart is one member of a gang and the worker it starts on.
type gangStart struct {
	t  *task
	ch place.Choice
}

// reservation is the capacity a waiting gang holds in one cycle.
type reservation struct {
	g    *gang
	need int
	// free counts the gang's tasks the workers that can run them could
	// start now; total those they could run if they were idle.
	free, total int
	// at is the gang's earliest expected start, zero when unknown; ends
	// counts the running tasks that must end first.
	at      time.Time
	ends    int
	workers []*place.Worker // held
}

// formGangs links the tasks of a new job to their gangs.
func formGangs(j *job) error {
	var gangs []*gang
	for _, t := range j.tasks {
		name := t.spec.Gang
		if name == "" {
			continue
		}
		var gg *gang
		for _, x := range gangs {
			if x.name == name {
				gg = x
			}
		}
		if gg == nil {
			gg = &gang{name: name, job: j, min: t.spec.GangMin}
			gangs = append(gangs, gg)
		}
		if t.spec.GangMin != gg.min {
			return fmt.Errorf("job %q: tasks[%d].gangMin: %w: gang %q asks for %d tasks at once and for %d", j.id, t.idx, ErrInvalid, name, gg.min, t.spec.GangMin)
		}
		gg.members = append(gg.members, t)
		t.gang = gg
	}
	for _, gg := range gangs {
		if gg.min < 1 || gg.min > len(gg.members) {
			return fmt.Errorf("job %q: gang %q: %w: minAvailable %d must be between 1 and its %d tasks", j.id, gg.name, ErrInvalid, gg.min, len(gg.members))
		}
		if j.maxSlots > 0 && j.maxSlots < gg.min {
			return fmt.Errorf("job %q: gang %q: %w: it starts %d tasks at once, more than the job's maxSlots %d", j.id, gg.name, ErrInvalid, gg.min, j.maxSlots)
		}
	}
	return nil
}

// label names the gang in messages.
func (gg *gang) label() string {
	if len(gg.members) == len(gg.job.tasks) {
		return fmt.Sprintf("gang of %d", len(gg.members))
	}
	return fmt.Sprintf("gang %q of %d", gg.name, len(gg.members))
}

// count returns how many members are in state s.
func (gg *gang) count(s model.TaskState) int {
	n := 0
	for _, t := range gg.members {
		if t.state == s {
			n++
		}
	}
	return n
}

// need is how many members must start together: its minimum, or the
// members left when fewer are.
func (gg *gang) need() int {
	left := 0
	for _, t := range gg.members {
		if !t.state.Terminal() {
			left++
		}
	}
	return min(gg.min, left)
}

// tryGang places the first members of waiting gang gg together, or says
// why they cannot start. free is the pool's free slots.
func (e *Engine) tryGang(gg *gang, free int) ([]gangStart, model.Reason, bool) {
	j := gg.job
	need := gg.need()
	ready := make([]*task, 0, need)
	for _, t := range gg.members {
		if t.state == model.TaskReady && len(ready) < need {
			ready = append(ready, t)
		}
	}
	if len(ready) < need {
		return nil, model.Because(model.ReasonGangWaiting, "%s needs %d tasks to start at once, but only %d are ready", gg.label(), need, len(ready)), false
	}
	if m := j.maxSlots; m > 0 && j.running+need > m {
		return nil, model.Because(model.ReasonMaxSlots, "%s needs %d slots at once, but job %q runs %d tasks of its maxSlots %d", gg.label(), need, j.id, j.running, m), false
	}
	if need > free {
		return nil, model.Reason{}, false
	}
	e.unholdGang(gg)
	out := make([]gangStart, 0, need)
	var why model.Reason
	for _, t := range ready {
		var req place.Request
		e.request(&req, t)
		e.withAffinity(&req, t)
		ch, r := e.fleet.Choose(&req)
		if ch.Worker == nil {
			why = r
			break
		}
		e.fleet.Occupy(ch.Worker, t.spec.Resources)
		out = append(out, gangStart{t: t, ch: ch})
	}
	for i := len(out) - 1; i >= 0; i-- {
		e.fleet.Release(out[i].ch.Worker, out[i].t.spec.Resources)
	}
	if len(out) < need {
		if why.Code == model.ReasonUnschedulable {
			return nil, why, false
		}
		return nil, model.Reason{}, false
	}
	return out, model.Reason{}, true
}

// gangStarted marks gg, whose minimum just started together, launched; if
// it was its queue's reservation, the next gang of the queue that waits
// reserves in this cycle already.
func (e *Engine) gangStarted(gg *gang) {
	gg.launched = true
	if q := gg.job.q; q.res != nil && q.res.g == gg {
		q.res, q.reserved = nil, nil
	}
}

// gangWaits parks a gang that did not fit, reserving capacity for it when it
// is the first of its queue to wait this cycle, and returns its reason.
func (e *Engine) gangWaits(gg *gang, free int) model.Reason {
	q := gg.job.q
	if q.res != nil && q.res.g != gg {
		return model.Because(model.ReasonGangWaiting, "%s needs %d slots at once; %d slots of the pool are free, and the capacity it could use is held for the %s of job %q ahead of it",
			gg.label(), gg.need(), free, q.res.g.label(), q.res.g.job.id)
	}
	res := e.reserve(gg)
	return res.reason(e.now)
}

// reserve computes gg's reservation, holds its workers and makes it its
// queue's reservation.
func (e *Engine) reserve(gg *gang) *reservation {
	q := gg.job.q
	if q.res != nil && q.res.g == gg {
		e.unholdGang(gg)
	}
	res := e.estimateGang(gg)
	q.res, q.reserved = res, gg
	if res.total < res.need {
		// It can never fit as the fleet is: holding would starve the
		// others for nothing.
		res.workers = nil
		return res
	}
	for _, w := range res.workers {
		e.fleet.Hold(w)
	}
	e.reservations = append(e.reservations, res)
	return res
}

// unholdGang releases gg's holds, if it holds any.
func (e *Engine) unholdGang(gg *gang) {
	q := gg.job.q
	if q.res == nil || q.res.g != gg {
		return
	}
	for _, w := range q.res.workers {
		e.fleet.Unhold(w)
	}
	q.res.workers = nil
}

// releaseHolds ends the cycle's reservations; the queues remember their
// gang, to hold for it again next cycle.
func (e *Engine) releaseHolds() {
	for _, res := range e.reservations {
		for _, w := range res.workers {
			e.fleet.Unhold(w)
		}
		res.workers = nil
	}
	e.reservations = e.reservations[:0]
	for _, q := range e.queues {
		q.res = nil
	}
}

// holdAhead holds again, at the start of q's allocation, the capacity of
// the gang q reserved for in the last cycle, if it still waits, so that
// the groups the policy serves before it do not take it.
func (e *Engine) holdAhead(q *queue, free int) {
	gg := q.reserved
	if gg == nil {
		return
	}
	// A gang none of whose members is left to run (all cancelled, in a
	// job that goes on) needs nothing: it would keep the reservation from
	// the gangs behind it.
	if gg.launched || gg.job.done || gg.job.held != "" || gg.job.q != q || gg.need() == 0 || gg.count(model.TaskReady) < gg.need() {
		q.reserved = nil
		return
	}
	if free > 0 { // nothing to hold in a full pool; it waits on
		e.reserve(gg)
	}
}

// estimateGang finds how much of gg fits now, how much could ever fit, and
// when and where enough capacity for it frees.
func (e *Engine) estimateGang(gg *gang) *reservation {
	res := &reservation{g: gg, need: gg.need()}
	var head *task
	for _, t := range gg.members {
		if t.state == model.TaskReady {
			head = t
			break
		}
	}
	if head == nil {
		return res
	}
	req := head.spec.Resources
	type end struct {
		at time.Time
		w  *place.Worker
		t  *task
	}
	var ends []end
	type scratch struct {
		free int
		used model.Resources
		fits int
	}
	state := map[*place.Worker]*scratch{}
	for _, w := range e.fleet.Workers() {
		if w.Gone() || !w.Takes() || w.BoundTo() != "" {
			continue
		}
		if _, never := e.fleet.Never(head.shape, w); never {
			continue
		}
		res.total += fitCount(w, w.Spec.Slots, model.Resources{}, req, res.need)
		n := fitCount(w, w.FreeSlots(), w.Used, req, res.need)
		state[w] = &scratch{free: w.FreeSlots(), used: w.Used, fits: n}
		if n > 0 {
			res.free += n
			res.workers = append(res.workers, w)
		}
		if w.Idx < len(e.onWorker) {
			for t := e.onWorker[w.Idx]; t != nil; t = t.nextOnWorker {
				if t.member() {
					continue // rides in a batch, holds no slot
				}
				if t.spec.Duration <= 0 {
					continue // no expected end: it frees nothing by then
				}
				ends = append(ends, end{at: t.started.Add(t.spec.Duration), w: w, t: t})
			}
		}
	}
	if res.free >= res.need {
		res.at = e.now
		return res
	}
	if res.total < res.need {
		return res
	}
	slices.SortFunc(ends, func(a, b end) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.t.id, b.t.id)
	})
	sum := res.free
	for i, x := range ends {
		s := state[x.w]
		s.free++
		s.used = s.used.Sub(x.t.spec.Resources)
		n := fitCount(x.w, s.free, s.used, req, res.need)
		if n <= s.fits {
			continue
		}
		if s.fits == 0 {
			res.workers = append(res.workers, x.w)
		}
		sum += n - s.fits
		s.fits = n
		if sum >= res.need {
			res.at = x.at
			if res.at.Before(e.now) {
				res.at = e.now // overdue: expected to end any moment
			}
			res.ends = i + 1
			return res
		}
	}
	// Some running tasks have no declared duration, so when enough frees
	// is unknown: hold only the workers free now.
	res.workers = slices.DeleteFunc(res.workers, func(w *place.Worker) bool { return w.FreeSlots() == 0 })
	return res
}

// fitCount is how many tasks needing req fit on w with free slots and
// resources used, up to limit.
func fitCount(w *place.Worker, free int, used, req model.Resources, limit int) int {
	capacity := w.Capacity()
	n := 0
	for n < free && n < limit {
		used = used.Add(req)
		if used.Shortfall(capacity) != "" {
			break
		}
		n++
	}
	return n
}

// reason says what the gang waits for.
func (res *reservation) reason(now time.Time) model.Reason {
	gg := res.g
	switch {
	case res.total < res.need:
		return model.Because(model.ReasonGangWaiting, "%s needs %d slots at once; the ready workers that can run its tasks have only %d in all, so it cannot start until more join",
			gg.label(), res.need, res.total)
	case res.at.IsZero():
		return model.Because(model.ReasonGangWaiting, "%s needs %d slots at once; %d free; earliest start unknown (tasks running where it fits have no declared duration): the free capacity it can use is held for it",
			gg.label(), res.need, res.free)
	case !res.at.After(now):
		return model.Because(model.ReasonGangWaiting, "%s needs %d slots at once; %d free for it now, but the workers could not take it together this cycle",
			gg.label(), res.need, res.free)
	}
	return model.Because(model.ReasonGangWaiting, "%s needs %d slots at once; %d free; earliest start %s, when %d running task(s) end: the capacity it needs is held for it",
		gg.label(), res.need, res.free, res.at.UTC().Format(time.RFC3339), res.ends)
}

// backfill retries, against the workers held for the cycle's gangs, a
// task that found no other worker: it may start there when its declared
// duration ends it by a gang's earliest start. It returns the reason
// that replaces a no_free_slot one when the task still waits.
func (e *Engine) backfill(r *place.Request, t *task, why model.Reason) (place.Choice, model.Reason) {
	if len(e.reservations) == 0 || why.Code != model.ReasonNoFreeSlot {
		return place.Choice{}, why
	}
	var blocking *reservation
	for _, res := range e.reservations {
		if len(res.workers) == 0 {
			continue
		}
		if t.spec.Duration > 0 && !res.at.IsZero() && !e.now.Add(t.spec.Duration).After(res.at) {
			for _, w := range res.workers {
				e.fleet.Unhold(w)
			}
			ch, _ := e.fleet.Choose(r)
			for _, w := range res.workers {
				e.fleet.Hold(w)
			}
			if ch.Worker != nil {
				return ch, model.Reason{}
			}
		}
		if blocking == nil {
			blocking = res
		}
	}
	if blocking == nil {
		return place.Choice{}, why
	}
	until := "its start is unknown"
	if !blocking.at.IsZero() {
		until = "it is expected to start at " + blocking.at.UTC().Format(time.RFC3339)
	}
	return place.Choice{}, model.Because(model.ReasonGangReserved, "%s; %d worker(s) with free capacity are held for the %s of job %q (%s), and only a task with a declared duration that ends by then may use them",
		why.Message, len(blocking.workers), blocking.g.label(), blocking.g.job.id, until)
}

// gangLost stops the other running members of t's gang when t, a member,
// stopped running without succeeding and the gang runs below its minimum:
// a gang never runs partly. They wait again, as a stopped task does.
func (e *Engine) gangLost(t *task, now time.Time, stops *[]Stop) {
	gg := t.gang
	if gg == nil || !gg.launched {
		return
	}
	run := gg.count(model.TaskRunning)
	if run+gg.count(model.TaskSucceeded) >= gg.min {
		return
	}
	gg.launched = false
	if run == 0 {
		return
	}
	r := model.Because(model.ReasonGangStopped, "task %q of the %s of job %q stopped, leaving fewer than %d running: its other %d running task(s) stop and it starts again together",
		t.spec.Name, gg.label(), gg.job.id, gg.min, run)
	for _, m := range gg.members {
		if m.state != model.TaskRunning {
			continue
		}
		worker := m.worker.Spec.Name
		e.release(m, now)
		e.makeReady(m)
		m.job.g.stops++
		*stops = append(*stops, Stop{Job: m.job.id, Task: m.spec.Name, Worker: worker, Reason: r})
	}
}

// gangFailed ends the other members of t's gang, which failed for good:
// the gang cannot run whole again, and members left running would wait on
// a peer that is gone. Running members stop; every member not ended fails,
// and so do the tasks that need them.
func (e *Engine) gangFailed(t *task, now time.Time) {
	gg := t.gang
	if gg == nil {
		return
	}
	r := model.Because(model.ReasonGangStopped, "task %q of the %s of job %q failed, so the gang cannot run whole", t.spec.Name, gg.label(), gg.job.id)
	e.endGang(gg, model.TaskFailed, r, now, e.cascade)
}

// endGang ends, in state s for reason r, every member of gg that has not
// ended: running ones stop, waiting ones leave their queue; then is told
// of each right after it ended. The gang is no longer launched.
func (e *Engine) endGang(gg *gang, s model.TaskState, r model.Reason, now time.Time, then func(*task)) {
	gg.launched = false
	for _, m := range gg.members {
		worker := ""
		switch m.state {
		case model.TaskRunning:
			worker = m.worker.Spec.Name
			e.release(m, now)
			e.stops = append(e.stops, Stop{Job: m.job.id, Task: m.spec.Name, Worker: worker, Reason: r})
		case model.TaskReady:
			e.dropWaiting(m)
		case model.TaskBlocked:
		default:
			continue
		}
		e.end(m, s, r, worker)
		then(m)
	}
}
