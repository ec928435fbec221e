package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// recover rebuilds the engine from the store: policies changed at run time,
// workers, then every unfinished job with its tasks in the state recorded.
// A task recorded as running stays running on its worker: the worker's next
// heartbeat, lease request or report is told to register again, and its
// registration lists what it still runs, so the server keeps, stops or
// requeues each attempt (reconcile). A worker that does not come back
// within the heartbeat timeout is declared lost and its tasks requeued; a
// task recorded on a worker that is unknown or lost is requeued at once.
func (c *Controller) recover(ctx context.Context) error {
	now := c.cfg.Clock().UTC()
	for i, q := range c.engCfg.Queues {
		raw, err := c.st.KV(ctx, policyKey(q.Name))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		var pc policy.Config
		if err := json.Unmarshal(raw, &pc); err != nil {
			return fmt.Errorf("stored policy of queue %q: %w", q.Name, err)
		}
		if err := c.eng.Apply(engine.SetPolicy{Queue: q.Name, Policy: pc, At: now}); err != nil {
			return fmt.Errorf("stored policy of queue %q: %w", q.Name, err)
		}
		// What the queue lists, explain's copy builds and the stored
		// history is checked against is the policy in force.
		c.engCfg.Queues[i].Policy = pc
	}
	ra, err := c.recoverAdmission(ctx, now) // endpoints and throttling changed at run time (endpoints.go)
	if err != nil {
		return err
	}
	if err := c.restoreHistory(ctx); err != nil {
		return err
	}
	workers, err := c.st.Workers(ctx)
	if err != nil {
		return err
	}
	for _, w := range workers {
		var reg api.Register
		if err := json.Unmarshal(w.Spec, &reg); err != nil {
			return fmt.Errorf("stored worker %q: %w", w.Name, err)
		}
		lw := &liveWorker{rec: w, reg: reg}
		c.workers[w.Name] = lw
		if w.State == workerLost {
			continue // gone before the restart: it registers as new
		}
		mw, err := workerModel(reg, now)
		if err != nil {
			return fmt.Errorf("stored worker %q: %w", w.Name, err)
		}
		// Disabled until it registers again: it keeps its running tasks,
		// but a task started on it now could not be handed over (it has
		// no mailbox yet), and only its registration says what it still
		// runs. If it does not come back within the heartbeat timeout, it
		// is declared lost.
		mw.State = model.WorkerDisabled
		if err := c.eng.Apply(engine.AddWorker{Worker: mw, At: now}); err != nil {
			return err
		}
		lw.recovered = now
	}
	jobs, tasks, err := c.st.Unfinished(ctx)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		var js spec.Job
		if err := json.Unmarshal(j.Spec, &js); err != nil {
			return fmt.Errorf("stored job %q: %w", j.ID, err)
		}
		if dead, err := ra.deadLetter(j, js); dead || err != nil {
			if err != nil {
				return fmt.Errorf("stored job %q: %w", j.ID, err)
			}
			continue
		}
		// Priority may have changed at run time; the record has the latest.
		js.Priority, js.Urgent = j.Priority, j.Urgent
		lj, err := newLiveJob(js, j.Submitted)
		if err != nil {
			return fmt.Errorf("stored job %q: %w", j.ID, err)
		}
		lj.rec = j
		if err := ra.prepare(lj); err != nil {
			return fmt.Errorf("stored job %q: %w", j.ID, err)
		}
		if err := c.eng.Apply(engine.SubmitJob{Job: lj.model}); err != nil {
			return fmt.Errorf("stored job %q: %w", j.ID, err)
		}
		if err := ra.restoreThrottle(lj); err != nil {
			return fmt.Errorf("stored job %q: %w", j.ID, err)
		}
		c.jobs[j.ID] = lj
		for _, r := range tasks[j.ID] {
			rec, ok := lj.tasks[r.Name]
			if !ok {
				return fmt.Errorf("stored job %q: task %q is not in its spec", j.ID, r.Name)
			}
			*rec = r
		}
		// Ended tasks first: a running task may need one listed after it
		// in the spec, and only a task whose needs succeeded can run.
		// Members of merged batches last, once their heads run again.
		for phase := range 3 {
			for _, mt := range lj.model.Tasks {
				rec := lj.tasks[mt.Name]
				if restorePhase(rec) != phase {
					continue
				}
				if err := c.restoreTask(rec); err != nil {
					return fmt.Errorf("stored job %q: %w", j.ID, err)
				}
			}
		}
	}
	return ra.finish()
}

// restorePhase orders a job's task records for recovery: those not running,
// then running ones, then members of merged batches.
func restorePhase(rec *store.Task) int {
	switch {
	case rec.State != string(model.TaskRunning):
		return 0
	case inBatch(rec):
		return 2
	}
	return 1
}

func (c *Controller) restoreTask(rec *store.Task) error {
	switch model.TaskState(rec.State) {
	case model.TaskRunning:
		if lw, ok := c.workers[rec.Worker]; ok && lw.rec.State != workerLost {
			head, member := batchHead(rec)
			err := c.eng.Apply(engine.RestoreRunning{Job: rec.Job, Task: rec.Name, Worker: rec.Worker,
				Started: rec.Started, Attempt: rec.Attempt, Fails: rec.Fails, Batch: head})
			if err == nil {
				c.indexRunning(rec)
				return nil
			}
			if !member || !errors.Is(err, engine.ErrInvalid) {
				return err
			}
			// Its head is not running there any more (it was requeued):
			// the member waits again, and its worker is told to stop it.
		}
		rec.State = string(model.TaskReady)
		return c.eng.Apply(engine.RestoreTask{Job: rec.Job, Task: rec.Name, State: model.TaskReady, Attempt: rec.Attempt, Fails: rec.Fails})
	case model.TaskReady, model.TaskBlocked:
		return c.eng.Apply(engine.RestoreTask{Job: rec.Job, Task: rec.Name, State: model.TaskReady, Attempt: rec.Attempt, Fails: rec.Fails})
	default:
		return c.eng.Apply(engine.RestoreTask{Job: rec.Job, Task: rec.Name, State: model.TaskState(rec.State), Attempt: rec.Attempt, Fails: rec.Fails})
	}
}

func policyKey(queue string) string { return "queue/" + queue + "/policy" }
