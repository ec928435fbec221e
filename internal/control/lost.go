package control

import (
	"context"
	"sort"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// checkLost declares lost every worker that has been silent for longer than
// the heartbeat timeout: a worker whose last heartbeat, lease request or
// report is too old, or one known from before a restart that has not
// registered again in time. Its mailbox goes in the same critical section
// as the check, so a heartbeat that comes a moment later is told to
// register again rather than taken as a sign of life.
func (c *Controller) checkLost(t *txn) {
	cutoff := t.now.Add(-c.cfg.HeartbeatTimeout)
	var lost []string
	c.mu.Lock()
	for name, lw := range c.workers {
		if lw.rec.State == workerLost {
			continue
		}
		if _, fresh := t.newBoxes[name]; fresh {
			continue // it registered in this round: its old mailbox is history
		}
		if f := c.inflight; f != nil {
			if _, fresh := f.newBoxes[name]; fresh {
				continue // or in the round being committed
			}
		}
		last := lw.recovered
		box, hasBox := c.boxes[name]
		if hasBox {
			last = box.lastSeen
		}
		if last.IsZero() || !last.Before(cutoff) {
			continue
		}
		lost = append(lost, name)
		if hasBox {
			delete(c.boxes, name)
			wake(box) // a long poll still open ends, and is told to register
		}
	}
	c.mu.Unlock()
	sort.Strings(lost)
	for _, name := range lost {
		c.lose(t, name)
	}
}

// lose takes a silent worker out of the engine, which requeues its tasks
// with the worker_lost reason (not a failed attempt), and records it as
// lost. Reports it may still send for those attempts are ignored: the
// attempts are no longer running, and a restart is a new attempt number.
func (c *Controller) lose(t *txn, name string) {
	c.remove(t, name, model.Because(model.ReasonWorkerLost, "worker %q was lost: no heartbeat, lease request or report for %s",
		name, c.cfg.HeartbeatTimeout))
	c.cfg.Logger.Warn("worker lost; its tasks are requeued", "worker", name, "timeout", c.cfg.HeartbeatTimeout)
}

// Leave takes a worker that is shutting down out of the fleet at once, as
// a lost one but with the reason worker_stopped: it runs nothing more (it
// reported what it stopped before saying so), and the tasks a cycle would
// hand it meanwhile would wait for the heartbeat timeout. A worker the
// server does not know, or knows as gone, is no error.
func (c *Controller) Leave(ctx context.Context, name string) error {
	_, err := c.do(ctx, func(t *txn) (any, error) {
		lw := c.workers[name]
		if lw == nil || lw.rec.State == workerLost {
			return nil, nil
		}
		c.mu.Lock()
		if box, ok := c.boxes[name]; ok {
			delete(c.boxes, name)
			wake(box)
		}
		c.mu.Unlock()
		c.remove(t, name, model.Because(model.ReasonWorkerStopped, "worker %q stopped", name))
		c.cfg.Logger.Info("worker stopped; it left the fleet", "worker", name)
		return nil, nil
	})
	return err
}

// Stopping marks a worker whose agent is shutting down (api.Reports
// Stopping): from now on it takes no new task, while the attempts it still
// runs end and are reported, and the task of each is placed elsewhere.
// Leave then takes it out of the fleet; a registration takes it back. A
// worker the server does not know gets ErrNotFound, as its reports would.
func (c *Controller) Stopping(ctx context.Context, name string) error {
	if err := c.seen(name); err != nil {
		return err
	}
	_, err := c.do(ctx, func(t *txn) (any, error) {
		c.holdLeaving(t, name)
		return nil, nil
	})
	return err
}

// holdLeaving keeps a worker that is shutting down from taking new tasks:
// the engine holds it draining, which is no toggle and not its state (an
// operator's state stays stored, and comes back if it registers again).
func (c *Controller) holdLeaving(t *txn, name string) {
	lw := c.workers[name]
	if lw == nil || lw.leaving || lw.rec.State == workerLost || !lw.recovered.IsZero() {
		return
	}
	if err := c.eng.Apply(engine.SetWorkerState{Name: name, State: model.WorkerDraining, At: t.now, NoToggle: true}); err != nil {
		c.cfg.Logger.Error("holding a worker that shuts down", "worker", name, "err", err)
		return
	}
	lw.leaving = true
	c.pl.fleetDirty = true
	t.changed = true
	c.cfg.Logger.Info("worker shutting down; it takes no new task", "worker", name)
}

// remove takes worker name out of the engine, which requeues what still
// ran there with reason r (not a failed attempt), and records it as gone.
// Reports it may still send for those attempts are ignored: the attempts
// are no longer running, and a restart is a new attempt number.
func (c *Controller) remove(t *txn, name string, r model.Reason) {
	lw := c.workers[name]
	c.dropStopped(name, nil) // it reports nothing more
	if err := c.eng.Apply(engine.RemoveWorker{Name: name, At: t.now, Reason: r}); err != nil {
		c.cfg.Logger.Error("removing a lost worker", "worker", name, "err", err)
	}
	lw.rec.State = workerLost
	lw.recovered = time.Time{}
	lw.leaving = false
	t.batch.Workers = append(t.batch.Workers, lw.rec)
	t.event(EventWorkerLost, "", "", name, r, nil)
	c.forgetPlacement(name)
	t.changed = true
}

// indexRunning notes that rec runs on rec.Worker.
func (c *Controller) indexRunning(rec *store.Task) {
	m := c.running[rec.Worker]
	if m == nil {
		m = map[*store.Task]struct{}{}
		c.running[rec.Worker] = m
	}
	m[rec] = struct{}{}
}

// unindexRunning forgets that rec ran on rec.Worker.
func (c *Controller) unindexRunning(rec *store.Task) {
	if m := c.running[rec.Worker]; m != nil {
		delete(m, rec)
		if len(m) == 0 {
			delete(c.running, rec.Worker)
		}
	}
}

// runningOn returns the records of the tasks running on worker, in job and
// spec order.
func (c *Controller) runningOn(worker string) []*store.Task {
	var out []*store.Task
	for rec := range c.running[worker] {
		if rec.State == string(model.TaskRunning) && rec.Worker == worker {
			out = append(out, rec)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Job != out[j].Job {
			return out[i].Job < out[j].Job
		}
		return out[i].Index < out[j].Index
	})
	return out
}
