package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// Event kinds of requeue (allot requeue): a job that had ended runs again.
const EventJobRequeued = "job_requeued"

// Requeue runs a job's tasks again as new attempts (allot requeue): the
// task named, or with task "" every task of the job that did not succeed.
// A running task is stopped and waits again; a failed or cancelled one
// waits again with its failed attempts forgotten, and so do the tasks that
// need it and ended because it did. A job that ended is live again,
// waiting, with its succeeded tasks kept; its dependencies on other jobs
// are checked again as at submission.
func (c *Controller) Requeue(ctx context.Context, id, task string) (api.Job, error) {
	_, err := c.do(ctx, func(t *txn) (any, error) {
		if lj, ok := c.jobs[id]; ok && !store.JobEnded(lj.rec.State) {
			var tasks []string
			if task != "" {
				tasks = []string{task}
			}
			if err := c.eng.Apply(engine.RequeueTasks{Job: id, Tasks: tasks, At: t.now}); err != nil {
				return nil, refusal(err)
			}
			t.changed = true
			return nil, nil
		}
		return nil, c.reopen(ctx, t, id, task)
	})
	if err != nil {
		return api.Job{}, err
	}
	return c.Job(ctx, id)
}

// CancelTask cancels one task of a job (allot cancel JOB/TASK): waiting,
// it ends; running, it is stopped. The tasks that need it end cancelled
// too, and the job ends once every task has.
func (c *Controller) CancelTask(ctx context.Context, id, task string) (api.Job, error) {
	_, err := c.do(ctx, func(t *txn) (any, error) {
		if lj, ok := c.jobs[id]; !ok || store.JobEnded(lj.rec.State) {
			return nil, c.missingOrEnded(ctx, id)
		}
		if err := c.eng.Apply(engine.CancelTask{Job: id, Task: task, At: t.now}); err != nil {
			return nil, refusal(err)
		}
		t.changed = true
		return nil, nil
	})
	if err != nil {
		return api.Job{}, err
	}
	return c.Job(ctx, id)
}

// refusal turns the engine's refusal of a task request into the control
// plane's error: an unknown task is not found, a task in the wrong state
// a conflict.
func refusal(err error) error {
	var r *engine.RefusedError
	switch {
	case errors.As(err, &r):
		return fmt.Errorf("%w: %s", ErrConflict, r.Msg)
	case errors.Is(err, engine.ErrUnknownTask), errors.Is(err, engine.ErrUnknownJob):
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	return err
}

// reopen makes a job that ended live again with the tasks to run again
// waiting (Requeue). The job may still be in the loop's maps, its end
// committed or being committed: then the engine forgets it now, and the
// round that ended it leaves it live (finish).
func (c *Controller) reopen(ctx context.Context, t *txn, id, task string) error {
	var (
		rec  store.Job
		recs []store.Task
	)
	old, inLoop := c.jobs[id]
	if inLoop {
		rec = old.rec
		for _, mt := range old.model.Tasks {
			recs = append(recs, *old.tasks[mt.Name])
		}
	} else {
		var err error
		rec, recs, err = c.st.Job(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: job %q", ErrNotFound, id)
		}
		if err != nil {
			return err
		}
	}
	if rec.State == JobDeadLettered {
		return fmt.Errorf("%w: job %q is dead-lettered: fix its inputs and redrive it", ErrConflict, id)
	}
	var js spec.Job
	if err := json.Unmarshal(rec.Spec, &js); err != nil {
		return fmt.Errorf("stored job %q: %w", id, err)
	}
	js.Priority, js.Urgent = rec.Priority, rec.Urgent
	if !inLoop { // forgotten, its tasks are no longer counted
		if err := c.roomFor(rec.Submitter, taskCount(js), false); err != nil {
			return err
		}
	}
	lj, err := newLiveJob(js, rec.Submitted)
	if err != nil {
		return err
	}
	for _, r := range recs {
		p, ok := lj.tasks[r.Name]
		if !ok {
			return fmt.Errorf("stored job %q: task %q is not in its spec", id, r.Name)
		}
		*p = r
	}
	again, err := requeued(lj, task)
	if err != nil {
		return err
	}
	others, err := c.otherJobs(ctx, lj.model.DependsOn)
	if err != nil {
		return err
	}
	if inLoop {
		if err := c.eng.Apply(engine.ForgetJob{Job: id}); err != nil {
			return err
		}
		c.dropJob(id)
	}
	lj.rec = rec
	lj.rec.State, lj.rec.Ended = "pending", time.Time{}
	if err := c.eng.Apply(engine.SubmitJob{Job: lj.model, Others: others}); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	r := model.Because(model.ReasonRequeued, "requeued by request")
	for _, mt := range lj.model.Tasks {
		p := lj.tasks[mt.Name]
		state := model.TaskState(p.State)
		if again[mt.Name] {
			state, p.Fails, p.Reason, p.Message, p.Ended = model.TaskReady, 0, r.Code, r.Message, time.Time{}
		}
		if !state.Terminal() {
			state = model.TaskReady
		}
		if err := c.eng.Apply(engine.RestoreTask{Job: id, Task: mt.Name, State: state, Attempt: p.Attempt, Fails: p.Fails}); err != nil {
			// The job is in the engine already: take it out again.
			c.unrecover(lj, t.now)
			return err
		}
		if s, _, ok := c.eng.TaskState(id, mt.Name); ok {
			p.State = string(s)
		}
		t.touchTask(p)
		if again[mt.Name] {
			t.event(EventTaskRequeued, id, mt.Name, "", r, nil)
		}
	}
	c.addJob(lj)
	c.admissionSubmitted(t, lj)
	t.touchJob(&lj.rec)
	t.event(EventJobRequeued, id, "", "", r, map[string]any{"tasks": len(again)})
	t.changed = true
	return nil
}

// requeued returns the tasks of an ended job to run again: the task named
// (which must have failed or been cancelled) with the tasks that need it,
// directly or not, and did not succeed; or with task "" every task that
// did not succeed.
func requeued(lj *liveJob, task string) (map[string]bool, error) {
	again := map[string]bool{}
	ended := func(name string) bool {
		s := lj.tasks[name].State
		return s == string(model.TaskFailed) || s == string(model.TaskCancelled)
	}
	if task == "" {
		for _, mt := range lj.model.Tasks {
			if ended(mt.Name) {
				again[mt.Name] = true
			}
		}
		if len(again) == 0 {
			return nil, fmt.Errorf("%w: every task of job %q succeeded: nothing to requeue", ErrConflict, lj.rec.ID)
		}
		return again, nil
	}
	rec, ok := lj.tasks[task]
	if !ok {
		return nil, fmt.Errorf("%w: job %q has no task %q", ErrNotFound, lj.rec.ID, task)
	}
	if !ended(task) {
		return nil, fmt.Errorf("%w: task %q of job %q %s; only a running, failed or cancelled task runs again", ErrConflict, task, lj.rec.ID, rec.State)
	}
	again[task] = true
	// The ended tasks that need one that runs again run again too, and so
	// do the ended members of its gang, which ended with it: a gang runs
	// whole. A task may be listed before what it needs, so sweep until
	// nothing changes.
	gangs := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, mt := range lj.model.Tasks {
			if again[mt.Name] && mt.Gang != "" {
				gangs[mt.Gang] = true
			}
		}
		for _, mt := range lj.model.Tasks {
			if again[mt.Name] || !ended(mt.Name) {
				continue
			}
			if mt.Gang != "" && gangs[mt.Gang] {
				again[mt.Name], changed = true, true
				continue
			}
			for _, n := range mt.Needs {
				if again[n] {
					again[mt.Name], changed = true, true
					break
				}
			}
		}
	}
	return again, nil
}
