package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// workerModel checks a registration and turns it into the engine's worker.
// A worker that prefetches has its slots and the prefetched tasks in the
// engine's slots: a prefetched task is handed out, and started, as one
// that runs, within the worker's resources.
func workerModel(reg api.Register, now time.Time) (model.Worker, error) {
	ws, err := spec.Worker{Name: reg.Name, Resources: reg.Resources, Labels: reg.Labels, Slots: reg.Slots,
		CostPerHour: reg.CostPerHour, Cached: reg.Cached}.Expand("", now)
	if err != nil {
		return model.Worker{}, err
	}
	if slots := ws[0].Slots; reg.Prefetch < 0 || reg.Prefetch > slots {
		return model.Worker{}, model.FieldErrors{{Path: "prefetch",
			Msg: fmt.Sprintf("must be from 0 to the worker's slots (%d), got %d", slots, reg.Prefetch)}}
	}
	ws[0].Slots += reg.Prefetch
	if err := checkGPUDevices(reg.GPUDevices, ws[0].Capacity.GPUs); err != nil {
		return model.Worker{}, err
	}
	return ws[0], nil
}

// Register adds a worker, or takes back one that registers again (after a
// restart of the server or of its connection, or after it was declared
// lost). A returning worker lists the attempts it still runs: the server
// keeps those it also thinks run there, stops the ones it has given to
// someone else (or requeued when the worker was lost), and requeues the
// ones the worker no longer has.
func (c *Controller) Register(ctx context.Context, reg api.Register) (api.Worker, error) {
	if err := checkHints("cache", reg.Cache); err != nil {
		return api.Worker{}, err
	}
	v, err := c.do(ctx, func(t *txn) (any, error) {
		mw, err := workerModel(reg, t.now)
		if err != nil {
			return nil, err
		}
		lw, known := c.workers[reg.Name]
		if known && lw.rec.State == workerLost {
			// The engine forgot it when it was lost: it joins as new.
			known = false
		}
		if known && !sameHardware(lw.reg, reg) {
			// Hardware or labels changed: leave and join again.
			if err := c.eng.Apply(engine.RemoveWorker{Name: reg.Name, At: t.now,
				Reason: model.Because(model.ReasonWorkerLost, "worker %q registered again with other hardware", reg.Name)}); err != nil {
				return nil, err
			}
			known = false
		}
		switch {
		case !known:
			c.forgetPlacement(reg.Name)
			if err := c.eng.Apply(engine.AddWorker{Worker: mw, At: t.now, GPUDevices: reg.GPUDevices}); err != nil {
				return nil, err
			}
			stored := reg
			stored.Running = nil // what it runs now is no part of what it is
			spec, _ := json.Marshal(stored)
			lw = &liveWorker{reg: reg, rec: store.Worker{Name: reg.Name, State: string(model.WorkerReady), Registered: t.now, Spec: spec}}
			c.workers[reg.Name] = lw
			t.event(EventWorkerRegistered, "", "", reg.Name, model.Reason{}, nil)
		case !lw.recovered.IsZero() || lw.leaving:
			// Back after a server restart, or after it said it shuts
			// down: it may take tasks again, in the state an operator
			// left it in. Giving it back is no toggle (the elastic
			// cooldown does not start).
			if err := c.eng.Apply(engine.SetWorkerState{Name: reg.Name, State: model.WorkerState(lw.rec.State), At: t.now, NoToggle: true}); err != nil {
				return nil, err
			}
			lw.recovered, lw.leaving = time.Time{}, false
		}
		lw.reg.Running = nil
		lw.rec.LastSeen = t.now
		t.batch.Workers = append(t.batch.Workers, lw.rec)
		if t.newBoxes == nil {
			t.newBoxes = map[string]*mailbox{}
		}
		t.newBoxes[reg.Name] = newMailbox(t.now)
		c.reconcile(t, reg.Name, reg.Running)
		c.dropStopped(reg.Name, reg.Running)
		c.registerCache(t, reg)
		t.changed = true
		return c.workerView(lw), nil
	})
	if err != nil {
		return api.Worker{}, err
	}
	return v.(api.Worker), nil
}

func sameHardware(a, b api.Register) bool {
	a.Running, b.Running, a.Cached, b.Cached, a.Cache, b.Cache = nil, nil, nil, nil, nil, nil
	return reflect.DeepEqual(a, b)
}

// reconcile compares what a worker says it runs with what the server thinks.
func (c *Controller) reconcile(t *txn, worker string, running []api.Attempt) {
	has := make(map[api.Attempt]bool, len(running))
	for _, a := range running {
		has[a] = true
	}
	for _, rec := range c.runningOn(worker) {
		if s, w, _ := c.eng.TaskState(rec.Job, rec.Name); s != model.TaskRunning || w != worker {
			// The engine moved it on in this round (its worker registered
			// with other hardware and was replaced): what the worker still
			// runs of it is stale.
			continue
		}
		a := api.Attempt{Job: rec.Job, Task: rec.Name, Attempt: rec.Attempt}
		if has[a] {
			delete(has, a)
			continue
		}
		_ = c.eng.Apply(engine.FinishTask{Job: rec.Job, Task: rec.Name, Outcome: model.Requeued, At: t.now,
			Code: model.ReasonLeaseLost, Message: fmt.Sprintf("worker %q no longer runs attempt %d", worker, rec.Attempt)})
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
		if stale[i].Task != stale[j].Task {
			return stale[i].Task < stale[j].Task
		}
		return stale[i].Attempt < stale[j].Attempt
	})
	for _, a := range stale {
		t.stops[worker] = append(t.stops[worker], api.StopOrder{Attempt: a, Grace: spec.Duration(c.cfg.StopGrace),
			Reason: model.Because(model.ReasonWorkerLost, "the server no longer assigns this attempt to %q", worker)})
	}
}

// Lease hands a worker its new assignments and stop orders, waiting up to
// wait for some to arrive (long poll). holds, when not nil, is what the
// worker holds (api.LeaseRequest.Running): an attempt of an earlier answer
// that it lacks never arrived, and is requeued.
func (c *Controller) Lease(ctx context.Context, worker string, wait time.Duration, holds *[]api.Attempt) (api.Lease, error) {
	track := holds != nil
	take := func() (api.Lease, bool, chan struct{}, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		box, ok := c.boxes[worker]
		if !ok {
			return api.Lease{}, false, nil, fmt.Errorf("%w: worker %q is not registered", ErrNotFound, worker)
		}
		l := api.Lease{Assignments: box.assign, Stops: box.stops}
		box.assign, box.stops = nil, nil
		if track {
			for _, a := range l.Assignments {
				box.handed = append(box.handed, attemptsOf(a)...) // every member of a batch
			}
		}
		return l, len(l.Assignments)+len(l.Stops) > 0, box.wake, nil
	}
	// The request is contact; the end of a long poll is not (a worker
	// frozen while its poll was open says nothing when the poll ends).
	if err := c.seen(worker); err != nil {
		return api.Lease{}, err
	}
	if track {
		if lost := c.unconfirmed(worker, *holds); len(lost) > 0 {
			if err := c.requeueUndelivered(ctx, worker, lost); err != nil {
				if !errors.Is(err, store.ErrUnavailable) {
					return api.Lease{}, err
				}
				// Nothing can be stored now: keep them awaiting
				// confirmation, so the next lease request after the
				// outage finds them again, and answer this one.
				c.rehand(worker, lost)
			}
		}
	}
	l, got, wakeCh, err := c.leaseOrEmpty(take)
	if err != nil || got || wait <= 0 {
		return l, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-wakeCh:
			// Orders arrived, or a wake-up left over from orders an
			// earlier request already took: look, and wait on if empty.
			// Answering empty would send the worker away for nothing.
			if l, got, wakeCh, err = c.leaseOrEmpty(take); err != nil || got {
				return l, err
			}
			continue
		case <-timer.C:
		case <-ctx.Done():
			return emptyLease(), nil
		case <-c.done:
		case <-c.closing:
		}
		l, _, _, err = c.leaseOrEmpty(take)
		return l, err
	}
}

// unconfirmed returns the attempts earlier lease answers carried to worker
// that it does not hold, and forgets the rest: they arrived.
func (c *Controller) unconfirmed(worker string, holds []api.Attempt) []api.Attempt {
	c.mu.Lock()
	defer c.mu.Unlock()
	box, ok := c.boxes[worker]
	if !ok || len(box.handed) == 0 {
		return nil
	}
	has := make(map[api.Attempt]bool, len(holds))
	for _, a := range holds {
		has[a] = true
	}
	var lost []api.Attempt
	for _, a := range box.handed {
		if !has[a] {
			lost = append(lost, a)
		}
	}
	box.handed = nil
	return lost
}

// rehand puts attempts back on the list of those awaiting confirmation.
func (c *Controller) rehand(worker string, attempts []api.Attempt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if box, ok := c.boxes[worker]; ok {
		box.handed = append(box.handed, attempts...)
	}
}

// arrived takes reported attempts off the list of those awaiting
// confirmation: a worker reports only what it received. Without this, a
// task that ran and reported between two lease requests would cost the
// second one a loop round to find it no longer running.
func (c *Controller) arrived(worker string, reports []api.Report) {
	c.mu.Lock()
	defer c.mu.Unlock()
	box, ok := c.boxes[worker]
	if !ok || len(box.handed) == 0 {
		return
	}
	reported := make(map[api.Attempt]bool, len(reports))
	for _, r := range reports {
		reported[r.Attempt] = true
	}
	box.handed = slices.DeleteFunc(box.handed, func(a api.Attempt) bool { return reported[a] })
}

// requeueUndelivered requeues the attempts a worker never received, if the
// server still counts them as running there: one the worker received,
// ran and reported is no longer running, and stays as it ended.
func (c *Controller) requeueUndelivered(ctx context.Context, worker string, lost []api.Attempt) error {
	_, err := c.do(ctx, func(t *txn) (any, error) {
		for _, a := range lost {
			_, rec := c.task(a.Job, a.Task)
			if rec == nil || rec.State != string(model.TaskRunning) || rec.Worker != worker || rec.Attempt != a.Attempt {
				continue
			}
			if s, w, _ := c.eng.TaskState(a.Job, a.Task); s != model.TaskRunning || w != worker {
				continue
			}
			c.cfg.Logger.Warn("a lease answer was lost on its way to the worker; requeueing", "worker", worker,
				"job", a.Job, "task", a.Task, "attempt", a.Attempt)
			if c.eng.Apply(engine.FinishTask{Job: a.Job, Task: a.Task, Outcome: model.Requeued, At: t.now, Code: model.ReasonLeaseLost,
				Message: fmt.Sprintf("the lease answer carrying attempt %d to worker %q never arrived", a.Attempt, worker)}) == nil {
				t.changed = true
			}
		}
		return nil, nil
	})
	return err
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

// Heartbeat records that a worker is alive. A worker the server does not
// know (it restarted, or declared the worker lost) gets ErrNotFound: it
// must register again and say what it still runs.
func (c *Controller) Heartbeat(worker string) error { return c.seen(worker) }

// seen records contact with a worker, or says it must register first.
func (c *Controller) seen(worker string) error {
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
// gave away) is acknowledged and ignored, so a worker may resend safely. A
// worker the server does not know gets ErrNotFound, so that it registers
// again (listing the attempts whose reports it holds) before resending.
//
// Every report that would change a running attempt must carry the secret
// issued with that attempt (secret.go); if one does not, the whole batch
// is refused with ErrForbidden and nothing of it is applied.
func (c *Controller) Report(ctx context.Context, worker string, reports []api.Report) error {
	if err := c.seen(worker); err != nil {
		return err
	}
	_, err := c.do(ctx, func(t *txn) (any, error) {
		if err := c.refuseForged(t, worker, reports); err != nil {
			return nil, err
		}
		for _, r := range reports {
			c.report(t, worker, r)
		}
		return nil, nil
	})
	if err == nil {
		c.arrived(worker, reports)
	}
	return err
}

// Limits on what a report brings to the store. A report is never refused
// for its size (the agent would drop the batch, and its attempts would not
// end): the output keeps its end, the error its start.
const (
	// MaxOutputBytes bounds the output tail kept per attempt; the agent
	// sends 64 KiB by default.
	MaxOutputBytes = 1 << 20
	// MaxReportErrorBytes bounds the error message of a report.
	MaxReportErrorBytes = 4 << 10
)

func (c *Controller) report(t *txn, worker string, r api.Report) {
	lj, rec := c.task(r.Job, r.Task)
	if !reportable(rec, worker, r.Attempt) {
		c.keepStoppedOutput(t, worker, r)
		return
	}
	r.Output, r.Error = lastBytes(r.Output, MaxOutputBytes), firstBytes(r.Error, MaxReportErrorBytes)
	if n := len(r.Result); n > spec.MaxResultBytes {
		// A worker that bounds nothing: the result is not stored, and the
		// tasks that would read it must not start without it.
		r.Result = nil
		if r.Error == "" && !r.Stopped {
			r.Error = fmt.Sprintf("the task's result is %d bytes, more than the limit of %d", n, spec.MaxResultBytes)
		}
	}
	outcome, msg, code := model.Succeeded, "", ""
	if r.Stopped {
		// The server did not stop this attempt (it would no longer be
		// running here): the worker stopped it, shutting down. That is not
		// the task's failure.
		outcome, msg, code = model.Requeued, fmt.Sprintf("worker %q stopped it: %s", worker, r.Error), model.ReasonWorkerStopped
		// So the worker is going: the requeued task must not be handed
		// back to it before it says it leaves (an agent that sent no
		// Stopping notice first).
		c.holdLeaving(t, worker)
	}
	if outcome == model.Succeeded && (r.ExitCode != 0 || r.Error != "") {
		outcome = model.Failed
		msg = fmt.Sprintf("exit code %d", r.ExitCode)
		if r.Error != "" {
			msg = r.Error
		}
	}
	if err := c.eng.Apply(engine.FinishTask{Job: r.Job, Task: r.Task, Outcome: outcome, At: t.now, Message: msg, Code: code}); err != nil {
		return // the engine no longer runs this attempt (cancelled or requeued in this round)
	}
	exit := r.ExitCode
	rec.ExitCode, rec.Output = &exit, r.Output
	// A usage that is not a quantity (a faulty worker) is not stored:
	// the store refuses it, and the round with it.
	rec.CPUSeconds, rec.PeakMemory = max(r.CPUSeconds, 0), max(r.PeakMemory, 0)
	t.measure(rec, r)
	if len(r.Result) > 0 {
		rec.Result = r.Result
	}
	t.changed = true
	rec.Ended = t.now
	t.touchTask(rec)
	if outcome == model.Succeeded {
		rec.State, rec.Reason, rec.Message = string(model.TaskSucceeded), "", ""
		t.event(EventTaskSucceeded, r.Job, r.Task, worker, model.Reason{}, attemptData(r.Attempt.Attempt))
		c.succeededCache(t, worker, r.Job, r.Task)
		c.observeRuntime(lj.rec.Queue, rec.Started, rec.Ended)
	}
}

// Workers lists the registered workers with how many tasks each runs.
func (c *Controller) Workers(ctx context.Context) ([]api.Worker, error) {
	v, err := c.read(ctx, func(t *txn) (any, error) {
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
	seen := lw.rec.LastSeen
	c.mu.Lock()
	if box, ok := c.boxes[lw.rec.Name]; ok && box.lastSeen.After(seen) {
		seen = box.lastSeen
	}
	c.mu.Unlock()
	return api.Worker{Name: lw.rec.Name, State: lw.rec.State, Resources: lw.reg.Resources, Labels: lw.reg.Labels,
		Slots: slots, Prefetch: lw.reg.Prefetch, Running: len(c.runningOn(lw.rec.Name)), CostPerHour: cost, LastSeen: seen.UTC(),
		DisabledBy: c.disabledBy(lw), Cache: c.cacheView(lw.rec.Name, c.cfg.Clock()), Unconfined: lw.reg.Unconfined}
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
			return nil, model.FieldErrors{{Path: "state", Msg: fmt.Sprintf("unknown state %q (known: ready, draining, disabled)", state)}}
		}
		switch {
		case lw.rec.State == workerLost:
			return nil, fmt.Errorf("%w: worker %q is lost; it takes a state again once it registers", ErrConflict, worker)
		case !lw.recovered.IsZero(), lw.leaving:
			// The engine holds it (disabled after a restart, draining
			// while it shuts down) until it registers again; this is the
			// state it comes back in.
		default:
			if err := c.eng.Apply(engine.SetWorkerState{Name: worker, State: state, At: t.now}); err != nil {
				return nil, err
			}
		}
		lw.rec.State = string(state)
		t.batch.Workers = append(t.batch.Workers, lw.rec)
		t.event(EventWorkerState, "", "", worker, model.Reason{Code: string(state)}, nil)
		c.noteState(t, worker, state, api.DisabledByManual)
		t.changed = true
		return c.workerView(lw), nil
	})
	if err != nil {
		return api.Worker{}, err
	}
	return v.(api.Worker), nil
}

// lastBytes returns the end of s, at most n bytes, starting on a character.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	start := len(s) - n
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[start:]
}

// firstBytes returns the start of s, at most n bytes, ending on a character.
func firstBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
