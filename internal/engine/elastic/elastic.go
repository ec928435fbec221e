// Package elastic is the elastic coordinator of seed 002 as pure decisions:
// given its settings, the workers (state, idle since, last toggle) and the
// length of the ready queue, it says which workers to disable and which to
// enable. It reads no clock and keeps no goroutine, so the server's control
// loop and the simulator run the same rules, on their own poll interval.
//
// The rules:
//
//   - Disable: while the ready queue holds at most QueueMaxForDisable tasks,
//     a ready worker that has run nothing for IdleAfter is disabled, longest
//     idle first, as long as at least MinActiveWorkers stay ready.
//   - Enable: when the ready queue holds more than QueueThresholdForEnable
//     tasks, disabled workers are enabled, longest disabled first, until
//     their slots cover the excess (queue − threshold); and whenever fewer
//     than MinActiveWorkers are ready, disabled workers are enabled to reach
//     it.
//   - Cooldown: a worker toggled less than ToggleCooldown ago is left alone,
//     and a manual toggle (POST /v1/workers/{id}/elastic) is refused within
//     the cooldown too, so an operator and the coordinator cannot flap a
//     worker between them.
//
// Draining workers are neither enabled nor disabled: they finish their work
// and leave. QueueThresholdForEnable must be at least QueueMaxForDisable, so
// that no queue length both allows disabling and demands enabling.
package elastic

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// Config holds the six settings of seed 002 and the switch.
type Config struct {
	// Enabled runs the coordinator (ENABLE_ELASTIC_SCALING).
	Enabled bool `json:"enabled,omitempty"`
	// IdleAfter is how long a ready worker must have run nothing before it
	// may be disabled (idleSeconds, default 60).
	IdleAfter time.Duration `json:"idleSeconds,omitempty"`
	// QueueMaxForDisable is the largest ready-queue length at which idle
	// workers may still be disabled (default 0).
	QueueMaxForDisable int `json:"queueMaxForDisable,omitempty"`
	// QueueThresholdForEnable: a ready queue longer than this enables
	// disabled workers (default 0: any waiting task).
	QueueThresholdForEnable int `json:"queueThresholdForEnable,omitempty"`
	// MinActiveWorkers is how many workers stay ready (default 1).
	MinActiveWorkers int `json:"minActiveWorkers,omitempty"`
	// PollInterval is how often the coordinator runs (default 30s).
	PollInterval time.Duration `json:"pollIntervalSeconds,omitempty"`
	// ToggleCooldown is how long a worker stays as it was toggled before it
	// may be toggled again, automatically or by hand (default 60s).
	ToggleCooldown time.Duration `json:"toggleCooldownSeconds,omitempty"`
}

// Defaults of seed 002.
const (
	DefaultIdleAfter      = 60 * time.Second
	DefaultMinActive      = 1
	DefaultPollInterval   = 30 * time.Second
	DefaultToggleCooldown = 60 * time.Second
)

// DefaultConfig returns the seed's settings, switched off.
func DefaultConfig() Config {
	return Config{IdleAfter: DefaultIdleAfter, MinActiveWorkers: DefaultMinActive,
		PollInterval: DefaultPollInterval, ToggleCooldown: DefaultToggleCooldown}
}

// Validate checks c; errors name the setting as configuration spells it.
// A switched-off zero Config is valid.
func (c Config) Validate() error {
	var errs model.FieldErrors
	bad := func(field, format string, args ...any) {
		errs = append(errs, model.Invalid(field, format, args...))
	}
	if c.IdleAfter < 0 {
		bad("idleSeconds", "must not be negative (got %g)", c.IdleAfter.Seconds())
	}
	if c.QueueMaxForDisable < 0 {
		bad("queueMaxForDisable", "must not be negative (got %d)", c.QueueMaxForDisable)
	}
	if c.QueueThresholdForEnable < 0 {
		bad("queueThresholdForEnable", "must not be negative (got %d)", c.QueueThresholdForEnable)
	}
	if c.MinActiveWorkers < 0 {
		bad("minActiveWorkers", "must not be negative (got %d)", c.MinActiveWorkers)
	}
	if c.ToggleCooldown < 0 {
		bad("toggleCooldownSeconds", "must not be negative (got %g)", c.ToggleCooldown.Seconds())
	}
	switch {
	case c.PollInterval < 0:
		bad("pollIntervalSeconds", "must not be negative (got %g)", c.PollInterval.Seconds())
	case c.Enabled && c.PollInterval == 0:
		bad("pollIntervalSeconds", "must be above 0 when the coordinator is enabled")
	}
	if c.QueueThresholdForEnable < c.QueueMaxForDisable {
		bad("queueThresholdForEnable", "is %d, below queueMaxForDisable %d: a queue of %d tasks would both allow disabling idle workers and demand enabling them",
			c.QueueThresholdForEnable, c.QueueMaxForDisable, c.QueueMaxForDisable)
	}
	return errs.Err()
}

// Worker is what the coordinator needs to know about one worker.
type Worker struct {
	Name  string
	State model.WorkerState
	// Slots is how many tasks the worker runs at once (below 1 counts as
	// 1); Running how many it runs now.
	Slots, Running int
	// IdleSince is when the worker last became idle (its last task ended,
	// or it registered); the zero time means idle since ever.
	IdleSince time.Time
	// LastToggle is when the worker was last enabled or disabled; zero
	// means never, which no cooldown holds back.
	LastToggle time.Time
}

// Action changes one worker's state.
type Action struct {
	Worker string            `json:"worker"`
	State  model.WorkerState `json:"state"` // ready or disabled
	Reason string            `json:"reason"`
}

// ErrCooldown refuses a toggle within the cooldown.
var ErrCooldown = errors.New("toggle cooldown")

// cooled reports whether w may be toggled at now.
func (c Config) cooled(w Worker, now time.Time) bool {
	return w.LastToggle.IsZero() || now.Sub(w.LastToggle) >= c.ToggleCooldown
}

// CheckToggle says whether w may be toggled at now, by hand or not: an error
// wrapping ErrCooldown says how long is left.
func (c Config) CheckToggle(w Worker, now time.Time) error {
	if c.cooled(w, now) {
		return nil
	}
	left := c.ToggleCooldown - now.Sub(w.LastToggle)
	return fmt.Errorf("worker %q was toggled %s ago; wait %s: %w", w.Name, now.Sub(w.LastToggle), left, ErrCooldown)
}

// Decide returns the toggles due at now, given the workers in a stable order
// (registration order) and the ready-queue length. Disables come first,
// then enables; each list follows the rules' order (longest idle or longest
// disabled first, then the input order). It returns nothing when the
// coordinator is switched off.
func (c Config) Decide(now time.Time, workers []Worker, queue int) []Action {
	if !c.Enabled {
		return nil
	}
	ready := 0
	for _, w := range workers {
		if w.State == model.WorkerReady {
			ready++
		}
	}
	var out []Action
	if queue <= c.QueueMaxForDisable && ready > c.MinActiveWorkers {
		var idle []int
		for i, w := range workers {
			if w.State == model.WorkerReady && w.Running == 0 && now.Sub(w.IdleSince) >= c.IdleAfter && c.cooled(w, now) {
				idle = append(idle, i)
			}
		}
		slices.SortStableFunc(idle, func(a, b int) int { return workers[a].IdleSince.Compare(workers[b].IdleSince) })
		for _, i := range idle {
			if ready <= c.MinActiveWorkers {
				break
			}
			w := workers[i]
			out = append(out, Action{Worker: w.Name, State: model.WorkerDisabled,
				Reason: fmt.Sprintf("idle for %s with %d tasks queued (queueMaxForDisable %d)", now.Sub(w.IdleSince).Round(time.Second), queue, c.QueueMaxForDisable)})
			ready--
		}
	}
	var off []int
	for i, w := range workers {
		if w.State == model.WorkerDisabled && c.cooled(w, now) {
			off = append(off, i)
		}
	}
	if len(off) == 0 {
		return out
	}
	slices.SortStableFunc(off, func(a, b int) int { return workers[a].LastToggle.Compare(workers[b].LastToggle) })
	need := queue - c.QueueThresholdForEnable // slots to bring back
	for _, i := range off {
		w := workers[i]
		var reason string
		switch {
		case ready < c.MinActiveWorkers:
			reason = fmt.Sprintf("%d workers ready, below minActiveWorkers %d", ready, c.MinActiveWorkers)
		case need > 0:
			reason = fmt.Sprintf("%d tasks queued, above queueThresholdForEnable %d", queue, c.QueueThresholdForEnable)
		default:
			return out
		}
		out = append(out, Action{Worker: w.Name, State: model.WorkerReady, Reason: reason})
		ready++
		need -= max(1, w.Slots)
	}
	return out
}

// Coordinator is Config plus the memory of when it, or an operator, last
// toggled each worker: what a control loop keeps between polls.
type Coordinator struct {
	cfg  Config
	last map[string]time.Time
}

// New returns a coordinator, or the validation error.
func New(cfg Config) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Coordinator{cfg: cfg, last: map[string]time.Time{}}, nil
}

// Config returns the coordinator's settings.
func (c *Coordinator) Config() Config { return c.cfg }

// withLast fills w.LastToggle from memory when the memory is later.
func (c *Coordinator) withLast(w Worker) Worker {
	if t, ok := c.last[w.Name]; ok && t.After(w.LastToggle) {
		w.LastToggle = t
	}
	return w
}

// Poll decides the toggles due at now and remembers them as done: the
// caller applies every returned action.
func (c *Coordinator) Poll(now time.Time, workers []Worker, queue int) []Action {
	if !c.cfg.Enabled {
		return nil
	}
	ws := make([]Worker, len(workers))
	for i, w := range workers {
		ws[i] = c.withLast(w)
	}
	acts := c.cfg.Decide(now, ws, queue)
	for _, a := range acts {
		c.last[a.Worker] = now
	}
	return acts
}

// Toggle checks a manual toggle of w against the cooldown and, when it is
// allowed, remembers it. The caller then applies the state change.
func (c *Coordinator) Toggle(w Worker, now time.Time) error {
	if err := c.cfg.CheckToggle(c.withLast(w), now); err != nil {
		return err
	}
	c.last[w.Name] = now
	return nil
}

// Forget drops what the coordinator remembers of a worker that left.
func (c *Coordinator) Forget(name string) { delete(c.last, name) }
