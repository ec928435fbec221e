package spec

import (
	"strings"
	"testing"
	"time"
)

func TestApplyEnvReadsSeed002sVariables(t *testing.T) {
	env := map[string]string{
		EnvDispatchMode:          "fixed_pipeline",
		EnvWorkerSelection:       "min_satisfying",
		EnvContextReuse:          "false",
		EnvWorkerCacheTTL:        "600",
		EnvLambdaInference:       "0.3",
		EnvLambdaTraining:        "0.9",
		EnvLambdaOther:           "0.5",
		EnvSelectionJitter:       "0.01",
		EnvStageStickiness:       "true",
		EnvElasticScaling:        "true",
		EnvElasticIdle:           "120",
		EnvElasticQueueMax:       "2",
		EnvElasticQueueThreshold: "5",
		EnvElasticMinActive:      "3",
		EnvElasticPoll:           "10",
		EnvElasticCooldown:       "90",
		EnvDensityBucket:         "30",
	}
	var s Scheduling
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
	if _, err := s.EngineConfig(); err != nil {
		t.Errorf("the configuration the variables make is refused: %v", err)
	}
}

func TestApplyEnvRefusesBadSeed002ValuesNamingTheVariable(t *testing.T) {
	bad := map[string]string{
		EnvDispatchMode:     "fastest",
		EnvWorkerSelection:  "random",
		EnvLambdaTraining:   "1.5",
		EnvSelectionJitter:  "-1",
		EnvElasticMinActive: "-2",
		EnvElasticPoll:      "0",
		EnvContextReuse:     "maybe",
		EnvWorkerCacheTTL:   "soon",
		EnvDensityBucket:    "90000", // above a day: refused here, naming the variable
	}
	var s Scheduling
	err := s.ApplyEnv(func(k string) (string, bool) { v, ok := bad[k]; return v, ok })
	if err == nil {
		t.Fatal("bad values accepted")
	}
	for name := range bad {
		if !strings.Contains(err.Error(), name+": ") {
			t.Errorf("the error does not name %s:\n%v", name, err)
		}
	}
	if !strings.Contains(err.Error(), EnvDensityBucket+`: "90000" is not a number of seconds from 1 to 86400`) {
		t.Errorf("the density bucket's error: %v", err)
	}
	if s.Placement.Mode != "" || s.Placement.Lambda.Training != nil || s.Placement.Elastic.MinActiveWorkers != nil {
		t.Errorf("a refused value was kept: %+v", s.Placement)
	}
}
