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
// A task recorded as running stays running on its worker until the worker
// reports or re-registers; if the worker is unknown, the task is requeued.
func (c *Controller) recover(ctx context.Context) error {
	now := c.cfg.Clock().UTC()
	for _, q := range c.engCfg.Queues {
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
		mw, err := workerModel(reg, now)
		if err != nil {
			return fmt.Errorf("stored worker %q: %w", w.Name, err)
		}
		mw.State = model.WorkerState(w.State)
		if err := c.eng.Apply(engine.AddWorker{Worker: mw, At: now}); err != nil {
			return err
		}
		c.workers[w.Name] = &liveWorker{rec: w, reg: reg}
		// A fresh mailbox: the worker gets until its heartbeat timeout to
		// come back before it is declared lost.
		c.boxes[w.Name] = newMailbox(now)
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
		lj, err := newLiveJob(js, j.Submitted)
		if err != nil {
			return fmt.Errorf("stored job %q: %w", j.ID, err)
		}
		lj.rec = j
		if err := c.eng.Apply(engine.SubmitJob{Job: lj.model}); err != nil {
			return fmt.Errorf("stored job %q: %w", j.ID, err)
		}
		c.jobs[j.ID] = lj
		for _, r := range tasks[j.ID] {
			rec, ok := lj.tasks[r.Name]
			if !ok {
				return fmt.Errorf("stored job %q: task %q is not in its spec", j.ID, r.Name)
			}
			*rec = r
			if err := c.restoreTask(rec); err != nil {
				return fmt.Errorf("stored job %q: %w", j.ID, err)
			}
		}
	}
	return nil
}

func (c *Controller) restoreTask(rec *store.Task) error {
	switch model.TaskState(rec.State) {
	case model.TaskRunning:
		if _, ok := c.workers[rec.Worker]; ok {
			return c.eng.Apply(engine.RestoreRunning{Job: rec.Job, Task: rec.Name, Worker: rec.Worker,
				Started: rec.Started, Attempt: rec.Attempt, Fails: rec.Fails})
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
