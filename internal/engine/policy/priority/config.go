package priority

import (
	"fmt"
	"math"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy/perjob"
	"github.com/allot-sched/allot/internal/model"
)

// Priority algorithms (seed 001). The names are configuration values.
const (
	// AlgorithmUsage divides slots by weight and serves jobs in order of
	// least weight-normalised usage over a sliding window.
	AlgorithmUsage = "usage"
	// AlgorithmTime serves jobs in creation order, each taking every slot it
	// can use (GridServer's serial service execution).
	AlgorithmTime = "time"
)

// Defaults and bounds of the priority policy. They are exported so
// that the docs, the config parser and the tests quote one source.
const (
	// DefaultPriorityLevels is GridServer's ten levels, 0-9.
	DefaultPriorityLevels = 10
	// MaxPriorityLevels bounds the weights table; GridServer warns that many
	// levels cost performance, and no seed needs more.
	MaxPriorityLevels = 1000
	// DefaultPreemptThreshold is the running time that weighs as much as one
	// priority level when choosing preemption victims (seed: 30 minutes).
	DefaultPreemptThreshold = 30 * time.Minute
	// DefaultPreemptablePercent is 0: urgent jobs take free slots first but
	// never preempt unless an operator opts in, because the seed warns that
	// preemption can hurt a grid's throughput badly.
	DefaultPreemptablePercent = 0
)

// Config configures the priority policy (seed 001, priority mode).
// Each job is its own group; its priority level picks its weight, and jobs
// marked urgent come before every other job.
type Config struct {
	// Levels is the number of priority levels, 0 to Levels-1; level 0 is
	// suspended. Default 10.
	Levels int `yaml:"levels,omitempty" json:"levels,omitempty" zero:"must be between 2 and 1000|leave levels out for the default, 10"`
	// Weights holds one weight per level. Default: linear, level k weighs k.
	Weights []float64 `yaml:"weights,omitempty" json:"weights,omitempty"`
	// Algorithm is "usage" (default) or "time".
	Algorithm string `yaml:"algorithm,omitempty" json:"algorithm,omitempty"`
	// SerialPriority serves higher levels first: a level gets slots only
	// when every job above it has all it can use.
	SerialPriority bool `yaml:"serialPriority,omitempty" json:"serialPriority,omitempty"`
	// Aggregation shares a level's weight among the jobs at that level, so
	// levels keep a known split however many jobs each runs.
	Aggregation bool `yaml:"aggregation,omitempty" json:"aggregation,omitempty"`
	// UsageWindow is how far back usage counts. Default 10m.
	UsageWindow time.Duration `yaml:"usageWindow,omitempty" json:"usageWindow,omitempty" zero:"must be above 0|leave it out for the default, 10m"`
	// PreemptDelay is how long an urgent job must have waited since
	// submission before it may preempt. Default 0.
	PreemptDelay time.Duration `yaml:"preemptDelay,omitempty" json:"preemptDelay,omitempty"`
	// PreemptablePercent caps preemption: urgent jobs may preempt only
	// while they run less than this percentage of the slots. 0 (default)
	// disables preemption.
	PreemptablePercent int `yaml:"preemptablePercent,omitempty" json:"preemptablePercent,omitempty"`
	// PreemptThreshold is the running time worth one priority level when
	// victims are chosen (victims minimise priority + running/threshold).
	// Default 30m.
	PreemptThreshold time.Duration `yaml:"preemptThreshold,omitempty" json:"preemptThreshold,omitempty" zero:"must be above 0|leave it out for the default, 30m"`
	// Affinity turns intrinsic affinity on: a worker that ran a job's tasks
	// is preferred for the job, because it holds the job's data. nil means
	// on; the Time algorithm never uses it (seed 001).
	Affinity *bool `yaml:"affinity,omitempty" json:"affinity,omitempty"`
	// AffinityWait is how long a ready task passes over free workers
	// without affinity, hoping one with affinity frees up. Default 0.
	AffinityWait time.Duration `yaml:"affinityWait,omitempty" json:"affinityWait,omitempty"`
}

// AffinityOn reports whether intrinsic affinity applies: on unless turned
// off, and only with the Usage algorithm.
func (c *Config) AffinityOn() bool {
	d := c.WithDefaults()
	return d.Algorithm == AlgorithmUsage && (d.Affinity == nil || *d.Affinity)
}

// WithDefaults returns c with every unset field at its default. A nil c is
// the all-default configuration. It does not validate.
func (c *Config) WithDefaults() Config {
	var out Config
	if c != nil {
		out = *c
		out.Weights = append([]float64(nil), c.Weights...)
	}
	if out.Levels == 0 {
		out.Levels = DefaultPriorityLevels
	}
	if len(out.Weights) == 0 && out.Levels > 0 && out.Levels <= MaxPriorityLevels {
		out.Weights = make([]float64, out.Levels)
		for k := range out.Weights {
			out.Weights[k] = float64(k)
		}
	}
	if out.Algorithm == "" {
		out.Algorithm = AlgorithmUsage
	}
	if out.UsageWindow == 0 {
		out.UsageWindow = perjob.DefaultUsageWindow
	}
	if out.PreemptThreshold == 0 {
		out.PreemptThreshold = DefaultPreemptThreshold
	}
	return out
}

// Validate checks c and returns the first problem as a *model.FieldError
// naming the offending field from the block's key, e.g. "priority.weights[3]"
// "must not be negative". A nil c is valid (defaults).
func (c *Config) Validate() error {
	if c == nil {
		return nil
	}
	levels := c.Levels
	switch {
	case levels == 0:
		levels = DefaultPriorityLevels
	case levels < 2:
		return model.Invalid("priority.levels", "%d is too few; want at least 2 (level 0 is suspended)", c.Levels)
	case levels > MaxPriorityLevels:
		return model.Invalid("priority.levels", "%d is too many; want at most %d", c.Levels, MaxPriorityLevels)
	}
	if len(c.Weights) > 0 {
		if len(c.Weights) != levels {
			return model.Invalid("priority.weights", "has %d entries, want %d (one per level)", len(c.Weights), levels)
		}
		positive := false
		for k, w := range c.Weights {
			switch {
			case math.IsNaN(w) || math.IsInf(w, 0):
				return model.Invalid(fmt.Sprintf("priority.weights[%d]", k), "must be a finite number")
			case w < 0:
				return model.Invalid(fmt.Sprintf("priority.weights[%d]", k), "must not be negative")
			case k == 0 && w != 0:
				return model.Invalid("priority.weights[0]", "level 0 is suspended, so its weight must be 0 (got %g)", w)
			case w > 0:
				positive = true
			}
		}
		if !positive {
			return model.Invalid("priority.weights", "every weight is 0, so every job would be suspended")
		}
	}
	switch c.Algorithm {
	case "", AlgorithmUsage, AlgorithmTime:
	default:
		return model.Invalid("priority.algorithm", "unknown algorithm %q (want %q or %q)", c.Algorithm, AlgorithmUsage, AlgorithmTime)
	}
	if c.Aggregation && c.Algorithm == AlgorithmTime {
		return model.Invalid("priority.aggregation", "applies to the %q algorithm only, not %q", AlgorithmUsage, AlgorithmTime)
	}
	if err := perjob.CheckWindow("priority.usageWindow", c.UsageWindow); err != nil {
		return err
	}
	if c.PreemptDelay < 0 {
		return model.Invalid("priority.preemptDelay", "must not be negative (got %s)", c.PreemptDelay)
	}
	if c.PreemptablePercent < 0 || c.PreemptablePercent > 100 {
		return model.Invalid("priority.preemptablePercent", "must be 0-100 (got %d)", c.PreemptablePercent)
	}
	if c.PreemptThreshold < 0 {
		return model.Invalid("priority.preemptThreshold", "must not be negative (got %s)", c.PreemptThreshold)
	}
	if c.AffinityWait < 0 {
		return model.Invalid("priority.affinityWait", "must not be negative (got %s)", c.AffinityWait)
	}
	return nil
}

// CheckJob checks that j's priority is one of the configured levels, so a
// job the policy cannot weigh is rejected at submission rather than
// silently clamped; the error is a *model.FieldError on the job's
// "priority". A nil c checks against the default levels.
func (c *Config) CheckJob(j *model.Job) error {
	levels := c.WithDefaults().Levels
	if j.Priority < 0 || j.Priority >= levels {
		return model.Invalid("priority", "%d is outside levels 0-%d", j.Priority, levels-1)
	}
	return nil
}
