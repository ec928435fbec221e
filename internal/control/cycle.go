package control

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// maxCyclesPerRound bounds the cycles one round runs: a start whose result
// references cannot be resolved fails at once, which can make room for
// another start in the same round.
const maxCyclesPerRound = 4

// cycle runs the engine and records its decisions in the round.
func (c *Controller) cycle(t *txn) {
	var d *engine.Decisions
	for range maxCyclesPerRound {
		d = c.timedCycle(t.now)
		if !c.record(t, d) {
			break
		}
	}
	c.publish(t, d)
}

// record turns decisions into record updates, events and worker orders. It
// reports whether the engine saw new events meanwhile (another cycle helps).
func (c *Controller) record(t *txn, d *engine.Decisions) (again bool) {
	c.recordAdmission(t, d) // admission events (endpoints.go)
	for _, s := range d.Stops {
		_, rec := c.task(s.Job, s.Task)
		if rec == nil {
			continue
		}
		t.stops[s.Worker] = append(t.stops[s.Worker], api.StopOrder{
			Attempt: api.Attempt{Job: s.Job, Task: s.Task, Attempt: rec.Attempt},
			Reason:  s.Reason, Grace: spec.Duration(c.cfg.StopGrace)})
		c.awaitStopped(s.Worker, rec, s.Reason.Code == model.ReasonCancelled) // its report brings its output (stopped.go)
		if s.Reason.Code == model.ReasonCancelled {
			continue // the matching Ended entry records the state
		}
		rec.State, rec.Reason, rec.Message = string(model.TaskReady), s.Reason.Code, s.Reason.Message
		rec.Ended = t.now
		t.touchTask(rec)
		kind := EventTaskPreempted
		if s.Reason.Code == model.ReasonRequeued {
			kind = EventTaskRequeued
		}
		t.event(kind, s.Job, s.Task, s.Worker, s.Reason, nil)
	}
	for _, e := range d.Ended {
		_, rec := c.task(e.Job, e.Task)
		if rec == nil {
			continue
		}
		rec.State, rec.Reason, rec.Message = string(e.State), e.Reason.Code, e.Reason.Message
		kind := EventTaskRequeued
		switch e.Reason.Code {
		case model.ReasonRetry:
			kind = EventTaskRetry
			rec.Fails++
		case model.ReasonFailed, model.ReasonBatchFailure:
			kind = EventTaskFailed
			rec.Fails++
		case model.ReasonBatchDone:
			kind = EventTaskSucceeded
		case model.ReasonDependencyFailure:
			kind = EventTaskFailed
		case model.ReasonCancelled:
			kind = EventTaskCancelled
		case model.ReasonRequeued:
			// It runs again from its first failure (requeue.go).
			rec.Fails, rec.Ended = 0, time.Time{}
		}
		if e.State.Terminal() || e.Worker != "" {
			rec.Ended = t.now
		}
		t.touchTask(rec)
		t.event(kind, e.Job, e.Task, e.Worker, e.Reason, endData(e))
	}
	for _, s := range d.Starts {
		lj, rec := c.task(s.Job, s.Task)
		if rec == nil {
			continue
		}
		if t.endedNow(rec) {
			t.recordAttempt(rec) // the attempt that ended in this round, before the new one replaces it
		}
		c.unindexRunning(rec)
		rec.State, rec.Worker, rec.Attempt, rec.Started = string(model.TaskRunning), s.Worker, s.Attempt, t.now
		rec.GPUs = s.GPUs
		c.indexRunning(rec)
		rec.Ended, rec.ExitCode, rec.Output, rec.Result, rec.Reason, rec.Message = time.Time{}, nil, "", nil, "", ""
		rec.CPUSeconds, rec.PeakMemory = 0, 0
		secret, hash := newAttemptSecret()
		rec.SecretHash = hash
		t.touchTask(rec)
		if lj.rec.State == "pending" {
			lj.rec.State = "running"
			t.touchJob(&lj.rec)
		}
		t.event(EventTaskStarted, s.Job, s.Task, s.Worker, model.Reason{}, gpuStartData(s, batchStartData(s, c.startData(s))))
		a, err := c.assignment(lj, s)
		if err != nil {
			// The task cannot run as written: fail this attempt now.
			if c.eng.Apply(engine.FinishTask{Job: s.Job, Task: s.Task, Outcome: model.Failed, At: t.now, Message: err.Error()}) == nil {
				again = true
			}
			continue
		}
		a.Secret = secret
		a.GPUs = c.devicesOf(s.Worker, s.GPUs)
		c.assign(t, rec, s, a) // a merged batch is one entry (batch.go)
	}
	for _, je := range d.JobsDone {
		lj, ok := c.jobs[je.Job]
		if !ok {
			continue
		}
		lj.rec.State, lj.rec.Ended = string(je.State), t.now
		t.touchJob(&lj.rec)
		c.endHold(t, je.Job)
		t.event(EventJobEnded, je.Job, "", "", model.Reason{Code: string(je.State)}, nil)
		t.finished = append(t.finished, je.Job)
	}
	for _, f := range c.onDecide { // the features that watch decisions (features.go)
		f.Decisions(t, d)
	}
	return again
}

func (c *Controller) task(job, name string) (*liveJob, *store.Task) {
	lj, ok := c.jobs[job]
	if !ok {
		return nil, nil
	}
	return lj, lj.tasks[name]
}

// assignment builds what a worker needs to run an attempt, with result
// references of the tasks it needs substituted.
func (c *Controller) assignment(lj *liveJob, s engine.Start) (api.Assignment, error) {
	entry := lj.entry[s.Task]
	refs := lj.references(entry)
	index, count := arrayPlace(entry, s.Task)
	if len(refs) == 0 {
		// Nothing to substitute: the common case, and it must not cost
		// a walk over the job's tasks.
		a := api.Assignment{Attempt: api.Attempt{Job: s.Job, Task: s.Task, Attempt: s.Attempt},
			Run: entry.Run, Command: entry.Command, Env: entry.Env, WorkDir: entry.WorkDir, Timeout: entry.Timeout, User: lj.spec.User,
			Resources: entry.Resources, TaskIndex: index, TaskCount: count}
		return a, nil
	}
	results := make(map[string]json.RawMessage, len(refs))
	for _, name := range refs {
		if rec, ok := lj.tasks[name]; ok && len(rec.Result) > 0 {
			results[name] = rec.Result
		}
	}
	sub := func(in string) (string, error) {
		out, err := spec.Substitute(in, results)
		if err != nil {
			return "", fmt.Errorf("task %q: %w", s.Task, err)
		}
		return out, nil
	}
	a := api.Assignment{Attempt: api.Attempt{Job: s.Job, Task: s.Task, Attempt: s.Attempt},
		WorkDir: entry.WorkDir, Timeout: entry.Timeout, User: lj.spec.User, Resources: entry.Resources, TaskIndex: index, TaskCount: count}
	var err error
	if a.Run, err = sub(entry.Run); err != nil {
		return a, err
	}
	for _, arg := range entry.Command {
		v, err := sub(arg)
		if err != nil {
			return a, err
		}
		a.Command = append(a.Command, v)
	}
	if len(entry.Env) > 0 {
		a.Env = make(map[string]string, len(entry.Env))
		for k, v := range entry.Env {
			if a.Env[k], err = sub(v); err != nil {
				return a, err
			}
		}
	}
	return a, nil
}

// deliver hands the round's orders to the workers' mailboxes.
func (c *Controller) deliver(t *txn) {
	if len(t.assign) == 0 && len(t.stops) == 0 && len(t.newBoxes) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, box := range t.newBoxes {
		if old, ok := c.boxes[name]; ok {
			// Stops still apply to the worker's processes; undelivered
			// assignments do not: reconcile requeued exactly those,
			// since the worker never received them.
			box.stops = old.stops
			wake(old) // a poll waiting on the old box looks in the new one
		}
		c.boxes[name] = box
	}
	for name, as := range t.assign {
		if box, ok := c.boxes[name]; ok {
			box.assign = append(box.assign, as...)
			wake(box)
		}
	}
	for name, ss := range t.stops {
		if box, ok := c.boxes[name]; ok {
			box.stops = append(box.stops, ss...)
			wake(box)
		}
	}
}

func wake(b *mailbox) {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}
