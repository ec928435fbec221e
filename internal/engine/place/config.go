package place

import (
	"fmt"
	"math"
	"time"

	"github.com/allot-sched/allot/internal/engine/elastic"
	"github.com/allot-sched/allot/internal/model"
)

// Mode is a dispatcher mode of seed 002: how a ready task finds its worker.
// The modes are mutually exclusive; the non-adaptive ones are the seed's
// baselines, kept so that runs can compare the adaptive dispatcher against
// them.
type Mode uint8

const (
	// Adaptive ranks the feasible free workers by context reuse, then by the
	// λ score with jitter (or by the configured strategy), pins tasks to
	// their parent's worker (stage stickiness) and merges tasks into
	// batches.
	Adaptive Mode = iota
	// StaticWorker binds each job to the worker its first task ran on, for
	// the job's whole life: the job's tasks run only there, and no other
	// job's task runs there until every task of the job has ended.
	StaticWorker
	// FixedPipeline assigns each task type, for good, to the first worker
	// that ran a task of that type; tasks of the type wait while that worker
	// is busy or unavailable.
	FixedPipeline
	// RoundRobin hands each task to the next worker with a free slot after
	// the previous choice, in registration order, without checking the
	// task's resources.
	RoundRobin
)

var modeNames = [...]string{Adaptive: "adaptive", StaticWorker: "static-worker", FixedPipeline: "fixed-pipeline", RoundRobin: "round-robin"}

// ParseMode reads a mode name as written in configuration; "" is adaptive.
func ParseMode(name string) (Mode, error) {
	if name == "" {
		return Adaptive, nil
	}
	for m, n := range modeNames {
		if n == name {
			return Mode(m), nil
		}
	}
	return 0, fmt.Errorf("unknown dispatcher mode %q (known: adaptive, static-worker, fixed-pipeline, round-robin)", name)
}

// String returns the configuration name of m.
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// Defaults of seed 002.
const (
	DefaultCacheTTL        = time.Hour
	DefaultJitter          = 1e-3
	DefaultLambdaInference = 0.4
	DefaultLambdaTraining  = 0.8
	DefaultLambdaOther     = 0.5
	DefaultMergeMax        = 4
	// MaxMergeMax bounds a merged batch.
	MaxMergeMax = 1024
)

// Lambda holds λ per task category: the weight of throughput against cost
// in the score. nil takes the default.
type Lambda struct {
	Inference *float64 `json:"inference,omitempty"`
	Training  *float64 `json:"training,omitempty"`
	Other     *float64 `json:"other,omitempty"`
}

// Config configures placement: the dispatcher mode, the selection strategy
// and the adaptive dispatcher's knobs. The zero value is the adaptive mode
// with first-fit selection and every other default of seed 002; a
// configuration file leaves the strategy empty to get best (see
// internal/spec), which is the adaptive mode's own default.
type Config struct {
	// Mode: adaptive (""), static-worker, fixed-pipeline or round-robin.
	Mode string `json:"mode,omitempty"`
	// Strategy: best, first-fit ("" in the engine) or min-satisfying.
	Strategy string `json:"strategy,omitempty"`
	// ContextReuse prefers workers with a fresh cache hint of the task's
	// model or dataset (adaptive mode); nil means on.
	ContextReuse *bool `json:"enableContextReuse,omitempty"`
	// CacheTTL is how long a cache hint stays fresh; 0 means an hour.
	CacheTTL time.Duration `json:"cacheTTL,omitempty"`
	Lambda   Lambda        `json:"lambda,omitzero"`
	// Jitter scales the deterministic tie-breaking term; nil means 1e-3.
	Jitter *float64 `json:"jitter,omitempty"`
	// StageStickiness pins a task naming StickTo to its parent's worker
	// (adaptive mode).
	StageStickiness bool `json:"enableStageStickiness,omitempty"`
	// MergeMax bounds a merged batch (adaptive mode); 0 means 4, 1 turns
	// merging off.
	MergeMax int `json:"mergeMax,omitempty"`
	// Elastic configures the elastic coordinator. The engine only carries
	// it: the control loop and the simulator run the coordinator.
	Elastic elastic.Config `json:"elastic,omitzero"`
}

// settings is a Config with defaults applied and names parsed.
type settings struct {
	mode     Mode
	strategy Strategy
	reuse    bool
	ttl      time.Duration
	lambda   [3]float64 // by categoryIndex
	jitter   float64
	sticky   bool
	mergeMax int
}

// Validate checks c. Errors name the field, relative to the placement
// block ("lambda.training: must be between 0 and 1"), all at once.
func (c Config) Validate() error {
	_, err := c.settings()
	return err
}

func (c Config) settings() (settings, error) {
	var errs model.FieldErrors
	s := settings{reuse: true, ttl: DefaultCacheTTL, jitter: DefaultJitter, sticky: c.StageStickiness, mergeMax: DefaultMergeMax,
		lambda: [3]float64{DefaultLambdaInference, DefaultLambdaTraining, DefaultLambdaOther}}
	var err error
	if s.mode, err = ParseMode(c.Mode); err != nil {
		errs = append(errs, model.Invalid("mode", "%v", err))
	}
	if s.strategy, err = ParseStrategy(c.Strategy); err != nil {
		errs = append(errs, model.Invalid("strategy", "%v", err))
	}
	if c.ContextReuse != nil {
		s.reuse = *c.ContextReuse
	}
	switch {
	case c.CacheTTL < 0:
		errs = append(errs, model.Invalid("cacheTTL", "must not be negative (got %s)", c.CacheTTL))
	case c.CacheTTL > 0:
		s.ttl = c.CacheTTL
	}
	for i, l := range []struct {
		name string
		v    *float64
	}{{"inference", c.Lambda.Inference}, {"training", c.Lambda.Training}, {"other", c.Lambda.Other}} {
		if l.v == nil {
			continue
		}
		if v := *l.v; !(v >= 0 && v <= 1) {
			errs = append(errs, model.Invalid("lambda."+l.name, "must be between 0 and 1 (got %g)", v))
			continue
		}
		s.lambda[i] = *l.v
	}
	if c.Jitter != nil {
		if v := *c.Jitter; !(v >= 0) || math.IsInf(v, 0) {
			errs = append(errs, model.Invalid("jitter", "must be a number of at least 0 (got %g)", v))
		} else {
			s.jitter = v
		}
	}
	switch {
	case c.MergeMax < 0 || c.MergeMax > MaxMergeMax:
		errs = append(errs, model.Invalid("mergeMax", "must be between 0 and %d (got %d); 1 turns merging off, 0 takes the default %d", MaxMergeMax, c.MergeMax, DefaultMergeMax))
	case c.MergeMax > 0:
		s.mergeMax = c.MergeMax
	}
	if err := c.Elastic.Validate(); err != nil {
		errs = append(errs, model.FieldErrorsOf("elastic", err)...)
	}
	return s, errs.Err()
}

// categoryIndex maps a task category to its λ slot; an empty or unknown
// category is "other".
func categoryIndex(c model.Category) int {
	switch c {
	case model.CategoryInference:
		return 0
	case model.CategoryTraining:
		return 1
	}
	return 2
}
