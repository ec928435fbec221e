package config

import (
	"math"
	"time"

	"github.com/allot-sched/allot/internal/engine/elastic"
	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/spec"
)

// Placement checks p and turns it into the engine's placement
// configuration, with the defaults of seed 002 filled in. Errors carry field
// paths under "placement".
func Placement(p spec.Placement) (place.Config, error) {
	var c errs
	cfg := place.Config{Mode: p.Mode, Strategy: p.Strategy, ContextReuse: p.EnableContextReuse, Jitter: p.Jitter,
		StageStickiness: p.EnableStageStickiness,
		Lambda:          place.Lambda{Inference: p.Lambda.Inference, Training: p.Lambda.Training, Other: p.Lambda.Other}}
	if cfg.Strategy == "" {
		// The adaptive mode ranks by score; the baselines take the first
		// compatible worker, as the seed's do.
		cfg.Strategy = place.FirstFit.String()
		if p.Mode == "" || p.Mode == place.Adaptive.String() {
			cfg.Strategy = place.Best.String()
		}
	}
	if p.CacheTTL != nil {
		if *p.CacheTTL == 0 {
			c.add("placement.cacheTTL", "must be above 0; to ignore cache hints, set enableContextReuse: false")
		}
		cfg.CacheTTL = time.Duration(*p.CacheTTL)
	}
	if p.MergeMax != nil {
		if *p.MergeMax < 1 {
			c.add("placement.mergeMax", "must be at least 1 (got %d); 1 turns merging off", *p.MergeMax)
		} else {
			cfg.MergeMax = *p.MergeMax
		}
	}
	if b := p.DensityBucket; b != nil && (time.Duration(*b) < time.Second || time.Duration(*b) > 24*time.Hour) {
		c.add("placement.densityBucket", "must be between 1s and 24h (got %s)", time.Duration(*b))
	}
	el, ok := elasticConfig(p.Elastic, &c)
	cfg.Elastic = el
	if ok {
		if err := cfg.Validate(); err != nil {
			c.addErr("placement", err)
		}
	}
	if err := c.err(); err != nil {
		return place.Config{}, err
	}
	return cfg, nil
}

// elasticConfig turns the `placement.elastic:` block into the
// coordinator's settings; ok is false when a value could not be converted
// (the error is recorded in c).
func elasticConfig(e spec.Elastic, c *errs) (elastic.Config, bool) {
	cfg := elastic.DefaultConfig()
	cfg.Enabled = e.Enabled
	ok := true
	seconds := func(field string, v *float64, dst *time.Duration) {
		if v == nil {
			return
		}
		if !(*v >= 0) || math.IsInf(*v, 0) || *v > 1e9 {
			c.add("placement.elastic."+field, "must be a number of seconds of at least 0 (got %g)", *v)
			ok = false
			return
		}
		*dst = time.Duration(*v * float64(time.Second))
	}
	seconds("idleSeconds", e.IdleSeconds, &cfg.IdleAfter)
	seconds("pollIntervalSeconds", e.PollIntervalSeconds, &cfg.PollInterval)
	seconds("toggleCooldownSeconds", e.ToggleCooldownSeconds, &cfg.ToggleCooldown)
	for _, n := range []struct {
		v   *int
		dst *int
	}{{e.QueueMaxForDisable, &cfg.QueueMaxForDisable}, {e.QueueThresholdForEnable, &cfg.QueueThresholdForEnable},
		{e.MinActiveWorkers, &cfg.MinActiveWorkers}} {
		if n.v != nil {
			*n.dst = *n.v
		}
	}
	return cfg, ok
}
