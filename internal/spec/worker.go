package spec

import (
	"fmt"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// Limits of a worker entry or registration.
const (
	// MaxWorkersPerEntry bounds the count of one worker entry.
	MaxWorkersPerEntry = 1_000_000
	// MaxSlots bounds the slots of one worker.
	MaxSlots = 100_000
	// MaxCostPerHour bounds a worker's cost; costs are summed over the
	// fleet.
	MaxCostPerHour = 1_000_000
	// MaxCached bounds the models and datasets a worker lists as cached.
	MaxCached = 1_000
)

// Worker is a worker, or with Count a set of identical workers, as written
// in a scenario or reported by an agent at registration.
type Worker struct {
	Name string `yaml:"name" json:"name"`
	// Count expands the entry into Count workers named name-0, name-1, ...
	// (zero-padded); absent, the entry is one worker, and 0 is none.
	Count     *int              `yaml:"count,omitempty" json:"count,omitempty"`
	Resources Resources         `yaml:"resources,omitempty" json:"resources,omitempty"`
	Labels    map[string]string `yaml:"labels,omitempty" json:"labels,omitempty"`
	// Slots 0 is one slot to Go code (a registration that leaves it out);
	// a document that writes 0 is refused (its zero tag).
	Slots       int      `yaml:"slots,omitempty" json:"slots,omitempty" zero:"must be at least 1|leave slots out for one; to keep a worker from taking tasks, set state: disabled"`
	CostPerHour *float64 `yaml:"costPerHour,omitempty" json:"costPerHour,omitempty"`
	State       string   `yaml:"state,omitempty" json:"state,omitempty"`
	// Cached names models and datasets the worker holds (context reuse).
	Cached []string `yaml:"cached,omitempty" json:"cached,omitempty"`
}

// DefaultCostPerHour is a worker's cost when it reports none (seed 002).
const DefaultCostPerHour = 1.0

// Expand checks w and expands it into workers; now stamps cache hints.
func (w Worker) Expand(path string, now time.Time) ([]model.Worker, error) {
	var c errs
	p := func(f string) string { return join(path, f) }
	if !validName(w.Name) {
		c.add(p("name"), "%.40q is not a valid name: %s", w.Name, model.NameRule)
	}
	n := 1
	if w.Count != nil {
		n = *w.Count
	}
	if n < 0 || n > MaxWorkersPerEntry {
		c.add(p("count"), "must be between 0 and %d", MaxWorkersPerEntry)
	}
	switch {
	case w.Slots < 0:
		c.add(p("slots"), "must not be negative")
	case w.Slots > MaxSlots:
		c.add(p("slots"), "must be at most %d (got %d)", MaxSlots, w.Slots)
	}
	cost := DefaultCostPerHour
	if w.CostPerHour != nil {
		if cost = *w.CostPerHour; !(cost >= 0 && cost <= MaxCostPerHour) { // NaN too
			c.add(p("costPerHour"), "must be a number from 0 to %d (got %g)", MaxCostPerHour, cost)
		}
	}
	state := model.WorkerState(w.State)
	switch state {
	case "":
		state = model.WorkerReady
	case model.WorkerReady, model.WorkerDraining, model.WorkerDisabled:
	default:
		c.add(p("state"), "unknown state %q (known: ready, draining, disabled)", w.State)
	}
	checkLabels(&c, p("labels"), w.Labels)
	if len(w.Cached) > MaxCached {
		c.add(p("cached"), "has %d entries, more than %d", len(w.Cached), MaxCached)
	}
	for i, name := range w.Cached {
		if name == "" || len(name) > MaxLabelValueLen {
			c.add(p(fmt.Sprintf("cached[%d]", i)), "must be 1 to %d bytes", MaxLabelValueLen)
		}
	}
	checkResources(&c, p("resources"), w.Resources)
	if err := c.err(); err != nil {
		return nil, err
	}
	slots := w.Slots
	if slots == 0 {
		slots = 1
	}
	var cached map[string]time.Time
	if len(w.Cached) > 0 {
		cached = make(map[string]time.Time, len(w.Cached))
		for _, name := range w.Cached {
			cached[name] = now
		}
	}
	out := make([]model.Worker, 0, n)
	names := expandNames(w.Name, n)
	if n == 0 {
		names = nil // count: 0 is no worker
	}
	for _, name := range names {
		out = append(out, model.Worker{Name: name, Capacity: w.Resources.Model(), Labels: model.Labels(w.Labels),
			Slots: slots, CostPerHour: cost, State: state, Cached: cached})
	}
	return out, nil
}
