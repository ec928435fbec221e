package control

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/elastic"
	"github.com/allot-sched/allot/internal/model"
)

// The elastic coordinator of seed 002 in the server: on a loop tick, once
// per placement.elastic.pollIntervalSeconds of the loop's clock, it switches
// idle workers off and disabled ones back on (package elastic decides), and
// an operator toggles a worker by hand under the same cooldown.

// toggleData is the data of a worker_state event written by a toggle.
type toggleData struct {
	State model.WorkerState `json:"state"`
	By    string            `json:"by"` // elastic or manual
}

// pollElastic runs the coordinator when its poll is due. It runs on ticks,
// before the cycle, so a worker it enables takes tasks in the same round.
func (c *Controller) pollElastic(t *txn) {
	co := c.pl.coord
	cfg := co.Config()
	if !cfg.Enabled || t.now.Before(c.pl.nextPoll) {
		return
	}
	c.pl.nextPoll = t.now.Add(cfg.PollInterval)
	ws := slices.DeleteFunc(c.eng.ElasticWorkers(), func(w elastic.Worker) bool {
		// A worker rebuilt after a restart is held disabled until it
		// registers again, one shutting down is held draining, and one an operator disabled stays so until
		// an operator enables it: neither is the coordinator's to undo.
		lw := c.workers[w.Name]
		return lw == nil || !lw.recovered.IsZero() || lw.leaving ||
			(w.State == model.WorkerDisabled && c.disabledBy(lw) != api.DisabledByElastic)
	})
	for _, a := range co.Poll(t.now, ws, c.eng.ReadyTasks()) {
		if err := c.toggle(t, a.Worker, a.State, api.DisabledByElastic, "elastic coordinator: "+a.Reason); err != nil {
			c.cfg.Logger.Error("elastic toggle", "worker", a.Worker, "state", a.State, "err", err)
			continue
		}
		c.cfg.Logger.Info("elastic toggle", "worker", a.Worker, "state", a.State, "reason", a.Reason)
	}
}

// toggle switches a worker to ready or disabled and records who did it and
// why.
func (c *Controller) toggle(t *txn, name string, state model.WorkerState, by, why string) error {
	lw, ok := c.workers[name]
	if !ok {
		return fmt.Errorf("%w: worker %q", ErrNotFound, name)
	}
	if err := c.eng.Apply(engine.SetWorkerState{Name: name, State: state, At: t.now}); err != nil {
		return err
	}
	lw.rec.State = string(state)
	t.batch.Workers = append(t.batch.Workers, lw.rec)
	c.noteState(t, name, state, by)
	t.event(EventWorkerState, "", "", name, model.Reason{Code: string(state), Message: why}, toggleData{State: state, By: by})
	t.changed = true
	return nil
}

// ToggleElastic disables (enabled false) or enables a worker by hand, as
// POST /v1/workers/{name}/elastic does. The coordinator's toggle cooldown
// holds: a worker toggled, by hand or not, less than toggleCooldownSeconds
// ago is refused with ErrConflict (wrapping elastic.ErrCooldown), and the
// toggle starts a cooldown of its own. A worker already in the asked state
// is answered as it is.
func (c *Controller) ToggleElastic(ctx context.Context, worker string, enabled bool) (api.Worker, error) {
	v, err := c.do(ctx, func(t *txn) (any, error) {
		lw, ok := c.workers[worker]
		if !ok {
			return nil, fmt.Errorf("%w: worker %q", ErrNotFound, worker)
		}
		switch {
		case lw.rec.State == workerLost:
			return nil, fmt.Errorf("%w: worker %q is lost; it can be toggled once it registers again", ErrConflict, worker)
		case !lw.recovered.IsZero():
			return nil, fmt.Errorf("%w: worker %q has not registered since the server restarted", ErrConflict, worker)
		case lw.leaving:
			return nil, fmt.Errorf("%w: worker %q is shutting down", ErrConflict, worker)
		case lw.rec.State == string(model.WorkerDraining):
			return nil, fmt.Errorf("%w: worker %q is draining; POST /v1/workers/%s/state with {\"state\":\"ready\"} takes it back", ErrConflict, worker, worker)
		}
		state := model.WorkerDisabled
		if enabled {
			state = model.WorkerReady
		}
		if lw.rec.State == string(state) {
			return c.workerView(lw), nil
		}
		ew := elastic.Worker{Name: worker}
		for _, w := range c.eng.ElasticWorkers() {
			if w.Name == worker {
				ew = w
				break
			}
		}
		if err := c.pl.coord.Toggle(ew, t.now); err != nil {
			return nil, cooldownError(err, ew, t.now, c.pl.coord.Config().ToggleCooldown)
		}
		verb := "disabled"
		if enabled {
			verb = "enabled"
		}
		if err := c.toggle(t, worker, state, api.DisabledByManual, "manual: "+verb+" by an operator"); err != nil {
			return nil, err
		}
		return c.workerView(lw), nil
	})
	if err != nil {
		return api.Worker{}, err
	}
	return v.(api.Worker), nil
}

// cooldownError says, in whole seconds where it can, how long ago the
// worker was toggled and how long is left, naming the setting.
func cooldownError(err error, w elastic.Worker, now time.Time, cooldown time.Duration) error {
	if !errors.Is(err, elastic.ErrCooldown) || w.LastToggle.IsZero() {
		return fmt.Errorf("%w: %w (placement.elastic.toggleCooldownSeconds is %s)", ErrConflict, err, cooldown)
	}
	ago := now.Sub(w.LastToggle)
	left := max(cooldown-ago, 0)
	return fmt.Errorf("%w: worker %q was toggled %s ago; placement.elastic.toggleCooldownSeconds is %s: try again in %s: %w",
		ErrConflict, w.Name, roundUp(ago, false), cooldown, roundUp(left, true), elastic.ErrCooldown)
}

// roundUp rounds d to a tenth of a second, up when up is set.
func roundUp(d time.Duration, up bool) time.Duration {
	const step = 100 * time.Millisecond
	if up && d%step != 0 {
		return d - d%step + step
	}
	return d - d%step
}
