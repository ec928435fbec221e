package spec

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// Environment variables of seed 002 that ApplyEnv reads into the placement
// block. The seed spells modes and strategies with underscores
// (static_worker, first_fit); both spellings are accepted.
const (
	EnvDispatchMode          = "ORCHESTRATOR_DISPATCH_MODE"
	EnvWorkerSelection       = "ORCHESTRATOR_WORKER_SELECTION"
	EnvContextReuse          = "ENABLE_CONTEXT_REUSE"
	EnvWorkerCacheTTL        = "WORKER_CACHE_TTL_SEC"
	EnvLambdaInference       = "SCHEDULER_LAMBDA_INFERENCE"
	EnvLambdaTraining        = "SCHEDULER_LAMBDA_TRAINING"
	EnvLambdaOther           = "SCHEDULER_LAMBDA_OTHER"
	EnvSelectionJitter       = "SCHEDULER_SELECTION_JITTER"
	EnvStageStickiness       = "ENABLE_STAGE_WEIGHT_STICKINESS"
	EnvElasticScaling        = "ENABLE_ELASTIC_SCALING"
	EnvElasticIdle           = "ELASTIC_AUTO_DISABLE_IDLE_SEC"
	EnvElasticQueueMax       = "ELASTIC_AUTO_DISABLE_QUEUE_MAX"
	EnvElasticQueueThreshold = "ELASTIC_AUTO_ENABLE_QUEUE_THRESHOLD"
	EnvElasticMinActive      = "ELASTIC_AUTO_MIN_ACTIVE_WORKERS"
	EnvElasticPoll           = "ELASTIC_AUTO_POLL_INTERVAL_SEC"
	EnvElasticCooldown       = "ELASTIC_AUTO_TOGGLE_COOLDOWN_SEC"
	EnvDensityBucket         = "HOST_METRICS_DENSITY_BUCKET_SEC"
)

// seedModeNames maps the seed's spellings of modes and strategies to
// Allot's.
var seedModeNames = map[string]string{
	"static_worker":      "static-worker",
	"fixed_pipeline":     "fixed-pipeline",
	"static_round_robin": "round-robin",
	"round_robin":        "round-robin",
	"first_fit":          "first-fit",
	"min_satisfying":     "min-satisfying",
}

// CheckDispatchMode refuses a dispatcher mode the engine does not know,
// with the engine's message (place.ParseMode); empty is the default.
func CheckDispatchMode(name string) error {
	if name == "" || slices.Contains(model.DispatchModes, name) {
		return nil
	}
	return fmt.Errorf("unknown dispatcher mode %q (known: %s)", name, strings.Join(model.DispatchModes, ", "))
}

// CheckSelectionStrategy refuses a selection strategy the engine does not
// know, with the engine's message (place.ParseStrategy).
func CheckSelectionStrategy(name string) error {
	if name == "" || slices.Contains(model.SelectionStrategies, name) {
		return nil
	}
	return fmt.Errorf("unknown selection strategy %q (known: best, first-fit, min-satisfying)", name)
}

// applyPlacementEnv overlays seed 002's variables onto p, checking each
// value where it is read so that an error names the variable.
func applyPlacementEnv(c *errs, get func(string) (string, bool), p *Placement) {
	name := func(v string) string {
		if n, ok := seedModeNames[strings.ToLower(v)]; ok {
			return n
		}
		return strings.ToLower(v)
	}
	if v, ok := get(EnvDispatchMode); ok {
		if err := CheckDispatchMode(name(v)); err != nil {
			c.add(EnvDispatchMode, "%v", err)
		} else {
			p.Mode = name(v)
		}
	}
	if v, ok := get(EnvWorkerSelection); ok {
		if err := CheckSelectionStrategy(name(v)); err != nil {
			c.add(EnvWorkerSelection, "%v", err)
		} else {
			p.Strategy = name(v)
		}
	}
	boolVar := func(env string, set func(bool)) {
		if v, ok := get(env); ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				c.add(env, "%q is not true or false", v)
				return
			}
			set(b)
		}
	}
	// number reads a float within [lo, hi].
	number := func(env string, lo, hi float64, set func(float64)) {
		if v, ok := get(env); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || f < lo || f > hi {
				c.add(env, "%q is not a number from %g to %g", v, lo, hi)
				return
			}
			set(f)
		}
	}
	count := func(env string, set func(int)) {
		if v, ok := get(env); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				c.add(env, "%q is not a whole number of at least 0", v)
				return
			}
			set(n)
		}
	}
	// seconds reads a whole or fractional number of seconds within
	// [lo, hi], as the seed's *_SEC variables are.
	seconds := func(env string, lo, hi float64, set func(float64)) {
		if v, ok := get(env); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || f < lo || f > hi {
				c.add(env, "%q is not a number of seconds from %s to %s", v,
					strconv.FormatFloat(lo, 'f', -1, 64), strconv.FormatFloat(hi, 'f', -1, 64))
				return
			}
			set(f)
		}
	}
	const day, year = 24 * 3600, 365 * 24 * 3600
	boolVar(EnvContextReuse, func(b bool) { p.EnableContextReuse = &b })
	seconds(EnvWorkerCacheTTL, 1, year, func(f float64) {
		d := Duration(time.Duration(f * float64(time.Second)))
		p.CacheTTL = &d
	})
	number(EnvLambdaInference, 0, 1, func(f float64) { p.Lambda.Inference = &f })
	number(EnvLambdaTraining, 0, 1, func(f float64) { p.Lambda.Training = &f })
	number(EnvLambdaOther, 0, 1, func(f float64) { p.Lambda.Other = &f })
	number(EnvSelectionJitter, 0, 1, func(f float64) { p.Jitter = &f })
	boolVar(EnvStageStickiness, func(b bool) { p.EnableStageStickiness = b })
	e := &p.Elastic
	boolVar(EnvElasticScaling, func(b bool) { e.Enabled = b })
	seconds(EnvElasticIdle, 0, year, func(f float64) { e.IdleSeconds = &f })
	count(EnvElasticQueueMax, func(n int) { e.QueueMaxForDisable = &n })
	count(EnvElasticQueueThreshold, func(n int) { e.QueueThresholdForEnable = &n })
	count(EnvElasticMinActive, func(n int) { e.MinActiveWorkers = &n })
	seconds(EnvElasticPoll, 1, day, func(f float64) { e.PollIntervalSeconds = &f })
	seconds(EnvElasticCooldown, 0, day, func(f float64) { e.ToggleCooldownSeconds = &f })
	seconds(EnvDensityBucket, 1, day, func(f float64) {
		d := Duration(time.Duration(f * float64(time.Second)))
		p.DensityBucket = &d
	})
}
