package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// RequeueTasks runs tasks of a job that has not ended again (allot
// requeue): a running task is stopped and waits again, a failed or
// cancelled one waits again with its failed attempts forgotten, and so do
// the tasks that need it and ended because it did. Each runs as a new
// attempt. With no Tasks, every task of the job that has not succeeded and
// does not wait is requeued. A job that ended is not held by the engine:
// the caller rebuilds it (SubmitJob and RestoreTask) with the tasks to run
// again waiting.
type RequeueTasks struct {
	Job   string
	Tasks []string
	At    time.Time
}

// CancelTask cancels one task of a job: waiting, it ends; running, it is
// stopped. The tasks that need it, directly or not, end cancelled too. The
// job ends once every task has.
type CancelTask struct {
	Job, Task string
	At        time.Time
}

func (RequeueTasks) event() {}
func (CancelTask) event()   {}

// requeue applies RequeueTasks: it checks every task first, so a refused
// event changes nothing.
func (e *Engine) requeue(ev RequeueTasks, now time.Time) error {
	j, ok := e.jobs[ev.Job]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownJob, ev.Job)
	}
	if j.done {
		return refused("job %q has ended", ev.Job)
	}
	var picked []*task
	if len(ev.Tasks) == 0 {
		for _, t := range j.tasks {
			if t.state == model.TaskRunning && !t.member() || t.state == model.TaskFailed || t.state == model.TaskCancelled {
				picked = append(picked, t)
			}
		}
		if len(picked) == 0 {
			return refused("job %q has no task that is running, failed or cancelled", ev.Job)
		}
	}
	for _, name := range ev.Tasks {
		t, ok := j.byName[name]
		if !ok {
			return fmt.Errorf("job %q: %w %q", ev.Job, ErrUnknownTask, name)
		}
		switch {
		case t.state == model.TaskSucceeded:
			return refused("task %q of job %q succeeded; only a running, failed or cancelled task runs again", name, ev.Job)
		case t.state == model.TaskReady || t.state == model.TaskBlocked:
			return refused("task %q of job %q is waiting already", name, ev.Job)
		case t.member():
			return refused("task %q of job %q runs in the merged batch of task %q; requeue that task", name, ev.Job, t.batch.head.spec.Name)
		}
		picked = append(picked, t)
	}
	r := model.Because(model.ReasonRequeued, "requeued by request")
	var reopen, stopped []*task
	for _, t := range picked {
		if t.state == model.TaskRunning {
			e.stopToWait(t, r, now)
			stopped = append(stopped, t)
			continue
		}
		reopen = append(reopen, t)
	}
	// A gang left running below its minimum stops as a whole, and starts
	// again together (a requeue of the whole job leaves it not launched).
	for _, t := range stopped {
		e.gangLost(t, now, &e.stops)
	}
	e.reopen(j, reopen, r)
	return nil
}

// stopToWait stops a running task (and the members of its merged batch)
// and makes it wait again, for reason r.
func (e *Engine) stopToWait(t *task, r model.Reason, now time.Time) {
	members := runningMembers(t)
	worker := t.worker.Spec.Name
	e.release(t, now)
	e.makeReady(t)
	e.stops = append(e.stops, Stop{Job: t.job.id, Task: t.spec.Name, Worker: worker, Reason: r})
	e.requeueMembers(members, r, now)
}

// requeueMembers stops the running members of a merged batch outside a
// cycle (they go out with the next one's stops) and makes them wait again,
// for reason r.
func (e *Engine) requeueMembers(members []*task, r model.Reason, now time.Time) {
	for _, m := range members {
		if m.state != model.TaskRunning {
			continue
		}
		w := m.worker.Spec.Name
		e.release(m, now)
		e.makeReady(m)
		e.stops = append(e.stops, Stop{Job: m.job.id, Task: m.spec.Name, Worker: w, Reason: r})
	}
}

// reopen makes ended tasks of j, and the ended tasks that need them, wait
// again as new attempts.
func (e *Engine) reopen(j *job, roots []*task, r model.Reason) {
	if len(roots) == 0 {
		return
	}
	in := make([]bool, len(j.tasks))
	stack := slices.Clone(roots)
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if in[t.idx] || (t.state != model.TaskFailed && t.state != model.TaskCancelled) {
			continue
		}
		in[t.idx] = true
		for _, c := range t.children {
			stack = append(stack, j.tasks[c])
		}
		if t.gang != nil {
			// Its gang's members ended with it (gangFailed, or a
			// cancel): the gang runs again whole.
			stack = append(stack, t.gang.members...)
		}
	}
	first := -1
	for i, t := range j.tasks {
		if !in[i] {
			continue
		}
		if first < 0 {
			first = i
		}
		t.state, t.fails = model.TaskBlocked, 0
		j.left++
	}
	j.failed = false
	for _, t := range j.tasks {
		j.failed = j.failed || t.state == model.TaskFailed
	}
	j.blockedFrom = min(j.blockedFrom, first)
	j.blockedMemo.task = nil
	for i, t := range j.tasks {
		if !in[i] {
			continue
		}
		t.unmet = 0
		for _, need := range t.spec.Needs {
			if j.byName[need].state != model.TaskSucceeded {
				t.unmet++
			}
		}
		if t.unmet == 0 && j.admitted {
			e.queueReady(t)
		}
		e.ended = append(e.ended, TaskEnd{Job: j.id, Task: t.spec.Name, State: t.state, Reason: r})
	}
	e.tally(j)
}

// cancelTask applies CancelTask.
func (e *Engine) cancelTask(ev CancelTask, now time.Time) error {
	t, err := e.lookup(ev.Job, ev.Task)
	if err != nil {
		return err
	}
	if t.state.Terminal() {
		return refused("task %q of job %q has ended (%s)", ev.Task, ev.Job, t.state)
	}
	if t.member() {
		return refused("task %q of job %q runs in the merged batch of task %q; cancel that task", ev.Task, ev.Job, t.batch.head.spec.Name)
	}
	r := model.Because(model.ReasonCancelled, "task %q was cancelled", ev.Task)
	wasRunning := t.state == model.TaskRunning
	if t.state == model.TaskRunning {
		members := runningMembers(t)
		worker := t.worker.Spec.Name
		e.release(t, now)
		e.stops = append(e.stops, Stop{Job: ev.Job, Task: ev.Task, Worker: worker, Reason: r})
		e.end(t, model.TaskCancelled, r, worker)
		// The members of its merged batch wait again: only t is cancelled.
		mr := model.Because(model.ReasonRequeued, "requeued: task %q, the head of its merged batch, was cancelled", ev.Task)
		e.requeueMembers(members, mr, now)
	} else {
		e.dropWaiting(t)
		e.end(t, model.TaskCancelled, r, "")
	}
	// A gang that can no longer reach its minimum ends with it; one that
	// can but runs below it stops and starts again together.
	stack := []*task{t}
	if gg := t.gang; gg != nil {
		if gg.count(model.TaskSucceeded)+gg.need() < gg.min {
			stack = append(stack, e.gangCancelled(gg, t, now)...)
		} else if wasRunning {
			e.gangLost(t, now, &e.stops)
		}
	}
	// The tasks that need them can never run.
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range p.children {
			child := t.job.tasks[c]
			if child.state.Terminal() || child.state == model.TaskRunning {
				continue
			}
			e.dropWaiting(child)
			e.end(child, model.TaskCancelled, model.Because(model.ReasonCancelled, "task %q it needs was cancelled", p.spec.Name), "")
			stack = append(stack, child)
		}
	}
	return nil
}

// gangCancelled ends the members of gg that have not ended, cancelled with
// t, a member: fewer than its minimum are left to run, so it cannot run
// whole again. Running members stop. It returns the members it ended.
func (e *Engine) gangCancelled(gg *gang, t *task, now time.Time) []*task {
	r := model.Because(model.ReasonCancelled, "task %q of the %s of job %q was cancelled, so the gang cannot run whole", t.spec.Name, gg.label(), gg.job.id)
	var out []*task
	e.endGang(gg, model.TaskCancelled, r, now, func(m *task) { out = append(out, m) })
	return out
}

// RefusedError is a request the engine refuses for the state a job or
// task is in (requeue a task that succeeded, cancel one that ended): the
// caller's conflict, not a malformed event. It is ErrInvalid to errors.Is.
type RefusedError struct{ Msg string }

func (e *RefusedError) Error() string { return e.Msg }

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *RefusedError) Is(target error) bool { return target == ErrInvalid }

func refused(format string, args ...any) error {
	return &RefusedError{Msg: fmt.Sprintf(format, args...)}
}
