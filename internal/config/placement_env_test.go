package config

import (
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/spec"
)

func TestApplyEnvReadsSeed002sVariables(t *testing.T) {
	env := map[string]string{
		spec.EnvDispatchMode:          "fixed_pipeline",
		spec.EnvWorkerSelection:       "min_satisfying",
		spec.EnvContextReuse:          "false",
		spec.EnvWorkerCacheTTL:        "600",
		spec.EnvLambdaInference:       "0.3",
		spec.EnvLambdaTraining:        "0.9",
		spec.EnvLambdaOther:           "0.5",
		spec.EnvSelectionJitter:       "0.01",
		spec.EnvStageStickiness:       "true",
		spec.EnvElasticScaling:        "true",
		spec.EnvElasticIdle:           "120",
		spec.EnvElasticQueueMax:       "2",
		spec.EnvElasticQueueThreshold: "5",
		spec.EnvElasticMinActive:      "3",
		spec.EnvElasticPoll:           "10",
		spec.EnvElasticCooldown:       "90",
		spec.EnvDensityBucket:         "30",
	}
	var s spec.Scheduling
	if err := s.ApplyEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	p := s.Placement
	e := p.Elastic
	switch {
	case p.Mode != "fixed-pipeline" || p.Strategy != "min-satisfying":
		t.Errorf("mode %q strategy %q", p.Mode, p.Strategy)
	case p.EnableContextReuse == nil || *p.EnableContextReuse || p.CacheTTL == nil || time.Duration(*p.CacheTTL) != 10*time.Minute:
		t.Errorf("context reuse %v ttl %v", p.EnableContextReuse, p.CacheTTL)
	case *p.Lambda.Inference != 0.3 || *p.Lambda.Training != 0.9 || *p.Lambda.Other != 0.5 || *p.Jitter != 0.01 || !p.EnableStageStickiness:
		t.Errorf("lambda %+v jitter %v stickiness %v", p.Lambda, *p.Jitter, p.EnableStageStickiness)
	case !e.Enabled || *e.IdleSeconds != 120 || *e.QueueMaxForDisable != 2 || *e.QueueThresholdForEnable != 5 ||
		*e.MinActiveWorkers != 3 || *e.PollIntervalSeconds != 10 || *e.ToggleCooldownSeconds != 90:
		t.Errorf("elastic %+v", e)
	case p.DensityBucket == nil || time.Duration(*p.DensityBucket) != 30*time.Second:
		t.Errorf("density bucket %v", p.DensityBucket)
	}
	if _, err := Engine(s); err != nil {
		t.Errorf("the configuration the variables make is refused: %v", err)
	}
}
