package control

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// workerModel checks a registration and turns it into the engine's worker.
func workerModel(reg api.Register, now time.Time) (model.Worker, error) {
	ws, err := spec.Worker{Name: reg.Name, Resources: reg.Resources, Labels: reg.Labels, Slots: reg.Slots,
		CostPerHour: reg.CostPerHour, Cached: reg.Cached}.Expand("", now)
	if err != nil {
		return model.Worker{}, err
	}
	return ws[0], nil
}

// Register adds a worker, or takes back one that registers again (after a
// restart of the server or of its connection). A returning worker lists the
// attempts it still runs: the server keeps those it also thinks run there,
// stops the ones it has given to someone else, and requeues the ones the
// worker no longer has.
func (c *Controller) Register(ctx context.Context, reg api.Register) (api.Worker, error) {
	v, err := c.do(ctx, func(t *txn) (any, error) {
		mw, err := workerModel(reg, t.now)
		if err != nil {
			return nil, err
		}
		lw, known := c.workers[reg.Name]
		if known && !sameHardware(lw.reg, reg) {
			// Hardware or labels changed: leave and join again.
			if err := c.eng.Apply(engine.RemoveWorker{Name: reg.Name, At: t.now,
				Reason: model.Because(model.ReasonWorkerLost, "worker %q registered again with other hardware", reg.Name)}); err != nil {
				return nil, err
			}
			known = false
		}
		if !known {
			if err := c.eng.Apply(engine.AddWorker{Worker: mw, At: t.now}); err != nil {
				return nil, err
			}
			spec, _ := json.Marshal(reg)
			lw = &liveWorker{reg: reg, rec: store.Worker{Name: reg.Name, State: string(model.WorkerReady), Registered: t.now, Spec: spec}}
			c.workers[reg.Name] = lw
			t.event(EventWorkerRegistered, "", "", reg.Name, model.Reason{}, nil)
		}
		lw.reg.Running = nil
		lw.rec.LastSeen = t.now
		t.batch.Workers = append(t.batch.Workers, lw.rec)
		if t.newBoxes == nil {
			t.newBoxes = map[string]*mailbox{}
		}
		t.newBoxes[reg.Name] = newMailbox(t.now)
		c.reconcile(t, reg.Name, reg.Running)
		t.changed = true
		return c.workerView(lw), nil
	})
	if err != nil {
		return api.Worker{}, err
	}
	return v.(api.Worker), nil
}

func sameHardware(a, b api.Register) bool {
	a.Running, b.Running, a.Cached, b.Cached = nil, nil, nil, nil
	return reflect.DeepEqual(a, b)
}

// reconcile compares what a worker says it runs with what the server thinks.
func (c *Controller) reconcile(t *txn, worker string, running []api.Attempt) {
	has := map[api.Attempt]bool{}
	for _, a := range running {
		has[a] = true
	}
	for _, id := range c.jobIDs() {
		lj := c.jobs[id]
		for _, mt := range lj.model.Tasks {
			rec := lj.tasks[mt.Name]
			if rec.State != string(model.TaskRunning) || rec.Worker != worker {
				continue
			}
			a := api.Attempt{Job: id, Task: rec.Name, Attempt: rec.Attempt}
			if has[a] {
				delete(has, a)
				continue
			}
			_ = c.eng.Apply(engine.FinishTask{Job: id, Task: rec.Name, Outcome: model.Requeued, At: t.now,
				Message: fmt.Sprintf("worker %q no longer runs attempt %d", worker, rec.Attempt)})
		}
	}
	// What is left runs on the worker but not in the server's view: stop it.
	var stale []api.Attempt
	for a := range has {
		stale = append(stale, a)
	}
	sort.Slice(stale, func(i, j int) bool {
		if stale[i].Job != stale[j].Job {
			return stale[i].Job < stale[j].Job
		}
		return stale[i].Task < stale[j].Task
	})
	for _, a := range stale {
		t.stops[worker] = append(t.stops[worker], api.StopOrder{Attempt: a, Grace: spec.Duration(c.cfg.StopGrace),
			Reason: model.Because(model.ReasonWorkerLost, "the server no longer assigns this attempt to %q", worker)})
	}
}

func (c *Controller) jobIDs() []string {
	ids := make([]string, 0, len(c.jobs))
	for id := range c.jobs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Lease hands a worker its new assignments and stop orders, waiting up to
// wait for some to arrive (long poll).
func (c *Controller) Lease(ctx context.Context, worker string, wait time.Duration) (api.Lease, error) {
	take := func() (api.Lease, bool, chan struct{}, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		box, ok := c.boxes[worker]
		if !ok {
			return api.Lease{}, false, nil, fmt.Errorf("%w: worker %q is not registered", ErrNotFound, worker)
		}
		box.lastSeen = c.cfg.Clock()
		l := api.Lease{Assignments: box.assign, Stops: box.stops}
		box.assign, box.stops = nil, nil
		return l, len(l.Assignments)+len(l.Stops) > 0, box.wake, nil
	}
	l, got, wakeCh, err := c.leaseOrEmpty(take)
	if err != nil || got || wait <= 0 {
		return l, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-wakeCh:
	case <-timer.C:
	case <-ctx.Done():
		return emptyLease(), nil
	case <-c.done:
	case <-c.closing:
	}
	l, _, _, err = c.leaseOrEmpty(take)
	return l, err
}

func (c *Controller) leaseOrEmpty(take func() (api.Lease, bool, chan struct{}, error)) (api.Lease, bool, chan struct{}, error) {
	l, got, ch, err := take()
	if l.Assignments == nil {
		l.Assignments = []api.Assignment{}
	}
	if l.Stops == nil {
		l.Stops = []api.StopOrder{}
	}
	return l, got, ch, err
}

func emptyLease() api.Lease {
	return api.Lease{Assignments: []api.Assignment{}, Stops: []api.StopOrder{}}
}

// Heartbeat records that a worker is alive.
func (c *Controller) Heartbeat(worker string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	box, ok := c.boxes[worker]
	if !ok {
		return fmt.Errorf("%w: worker %q is not registered", ErrNotFound, worker)
	}
	box.lastSeen = c.cfg.Clock()
	return nil
}

// Report applies what workers report about finished attempts. A report of
// an attempt the server no longer assigns (a duplicate, or one it stopped or
// gave away) is acknowledged and ignored, so a worker may resend safely.
func (c *Controller) Report(ctx context.Context, worker string, reports []api.Report) error {
	_, err := c.do(ctx, func(t *txn) (any, error) {
		for _, r := range reports {
			c.report(t, worker, r)
		}
		return nil, nil
	})
	return err
}

func (c *Controller) report(t *txn, worker string, r api.Report) {
	_, rec := c.task(r.Job, r.Task)
	if rec == nil || rec.State != string(model.TaskRunning) || rec.Worker != worker || rec.Attempt != r.Attempt.Attempt {
		return
	}
	code := r.ExitCode
	rec.ExitCode, rec.Output = &code, r.Output
	if len(r.Result) > 0 {
		rec.Result = r.Result
	}
	outcome, msg := model.Succeeded, ""
	if r.Stopped {
		// The server did not stop this attempt (it would no longer be
		// running here): the worker stopped it, shutting down. That is not
		// the task's failure.
		outcome, msg = model.Requeued, fmt.Sprintf("worker %q stopped it: %s", worker, r.Error)
	}
	if outcome == model.Succeeded && (r.ExitCode != 0 || r.Error != "") {
		outcome = model.Failed
		msg = fmt.Sprintf("exit code %d", r.ExitCode)
		if r.Error != "" {
			msg = r.Error
		}
	}
	if err := c.eng.Apply(engine.FinishTask{Job: r.Job, Task: r.Task, Outcome: outcome, At: t.now, Message: msg}); err != nil {
		return
	}
	t.changed = true
	rec.Ended = t.now
	t.touchTask(rec)
	if outcome == model.Succeeded {
		rec.State, rec.Reason, rec.Message = string(model.TaskSucceeded), "", ""
		t.event(EventTaskSucceeded, r.Job, r.Task, worker, model.Reason{}, map[string]int{"attempt": r.Attempt.Attempt})
	}
}

// Workers lists the registered workers with how many tasks each runs.
func (c *Controller) Workers(ctx context.Context) ([]api.Worker, error) {
	v, err := c.do(ctx, func(t *txn) (any, error) {
		out := make([]api.Worker, 0, len(c.workers))
		for _, lw := range c.workers {
			out = append(out, c.workerView(lw))
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]api.Worker), nil
}

func (c *Controller) workerView(lw *liveWorker) api.Worker {
	cost := spec.DefaultCostPerHour
	if lw.reg.CostPerHour != nil {
		cost = *lw.reg.CostPerHour
	}
	slots := max(lw.reg.Slots, 1)
	running := 0
	for _, lj := range c.jobs {
		for _, rec := range lj.tasks {
			if rec.State == string(model.TaskRunning) && rec.Worker == lw.rec.Name {
				running++
			}
		}
	}
	return api.Worker{Name: lw.rec.Name, State: lw.rec.State, Resources: lw.reg.Resources, Labels: lw.reg.Labels,
		Slots: slots, Running: running, CostPerHour: cost, LastSeen: lw.rec.LastSeen}
}

// SetWorkerState drains, disables or readies a worker.
func (c *Controller) SetWorkerState(ctx context.Context, worker string, state model.WorkerState) (api.Worker, error) {
	v, err := c.do(ctx, func(t *txn) (any, error) {
		lw, ok := c.workers[worker]
		if !ok {
			return nil, fmt.Errorf("%w: worker %q", ErrNotFound, worker)
		}
		switch state {
		case model.WorkerReady, model.WorkerDraining, model.WorkerDisabled:
		default:
			return nil, spec.Errors{{Path: "state", Msg: fmt.Sprintf("unknown state %q (known: ready, draining, disabled)", state)}}
		}
		if err := c.eng.Apply(engine.SetWorkerState{Name: worker, State: state, At: t.now}); err != nil {
			return nil, err
		}
		lw.rec.State = string(state)
		t.batch.Workers = append(t.batch.Workers, lw.rec)
		t.event(EventWorkerState, "", "", worker, model.Reason{Code: string(state)}, nil)
		t.changed = true
		return c.workerView(lw), nil
	})
	if err != nil {
		return api.Worker{}, err
	}
	return v.(api.Worker), nil
}
