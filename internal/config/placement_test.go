package config

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/elastic"
	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/spec"
)

func placementOf(t *testing.T, doc string) (place.Config, error) {
	t.Helper()
	var s spec.Scheduling
	root, err := spec.Decode([]byte(doc), &s)
	if err != nil {
		return place.Config{}, err
	}
	cfg, err := Engine(s)
	if err != nil {
		return place.Config{}, spec.WithLines(err, root)
	}
	return cfg.Placement, nil
}

func TestPlacementDefaults(t *testing.T) {
	cfg, err := placementOf(t, "queues: [{name: q}]\n")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != "" || cfg.Strategy != "best" || cfg.Elastic != elastic.DefaultConfig() {
		t.Fatalf("defaults %+v", cfg)
	}
	// The baselines default to first-fit, as the seed's do.
	cfg, err = placementOf(t, "placement: {mode: static-worker}\n")
	if err != nil || cfg.Strategy != "first-fit" {
		t.Fatalf("static-worker: %+v, %v", cfg, err)
	}
}

func TestPlacementBlock(t *testing.T) {
	cfg, err := placementOf(t, `
placement:
  mode: adaptive
  strategy: min-satisfying
  enableContextReuse: false
  cacheTTL: 30m
  lambda: {inference: 0.2, training: 0.9, other: 0.5}
  jitter: 0.01
  enableStageStickiness: true
  mergeMax: 8
  elastic:
    enabled: true
    idleSeconds: 120
    queueMaxForDisable: 1
    queueThresholdForEnable: 4
    minActiveWorkers: 2
    pollIntervalSeconds: 15
    toggleCooldownSeconds: 90
`)
	if err != nil {
		t.Fatal(err)
	}
	want := elastic.Config{Enabled: true, IdleAfter: 2 * time.Minute, QueueMaxForDisable: 1, QueueThresholdForEnable: 4,
		MinActiveWorkers: 2, PollInterval: 15 * time.Second, ToggleCooldown: 90 * time.Second}
	if cfg.Strategy != "min-satisfying" || *cfg.ContextReuse || cfg.CacheTTL != 30*time.Minute || *cfg.Lambda.Training != 0.9 ||
		*cfg.Jitter != 0.01 || !cfg.StageStickiness || cfg.MergeMax != 8 || cfg.Elastic != want {
		t.Fatalf("config %+v elastic %+v", cfg, cfg.Elastic)
	}
}

func TestPlacementErrorsNameTheField(t *testing.T) {
	cases := []struct {
		doc  string
		want string
	}{
		{"placement: {lambda: {training: 1.2}}", "placement.lambda.training: must be between 0 and 1"},
		{"placement: {lambda: {inference: -0.5}}", "placement.lambda.inference: must be between 0 and 1"},
		{"placement: {jitter: -0.001}", "placement.jitter: must be a number of at least 0"},
		{"placement: {cacheTTL: -5m}", "placement.cacheTTL"},
		{"placement: {cacheTTL: 0}", "placement.cacheTTL: must be above 0"},
		{"placement: {mode: fastest}", "placement.mode: unknown dispatcher mode"},
		{"placement: {strategy: worst-fit}", "placement.strategy: unknown selection strategy"},
		{"placement: {mergeMax: 0}", "placement.mergeMax: must be at least 1"},
		{"placement: {elastic: {minActiveWorkers: -1}}", "placement.elastic.minActiveWorkers: must not be negative"},
		{"placement: {elastic: {idleSeconds: -3}}", "placement.elastic.idleSeconds: must be a number of seconds"},
		{"placement: {elastic: {enabled: true, pollIntervalSeconds: 0}}", "placement.elastic.pollIntervalSeconds: must be above 0"},
		{"placement: {elastic: {queueMaxForDisable: 5, queueThresholdForEnable: 2}}", "placement.elastic.queueThresholdForEnable: is 2, below queueMaxForDisable 5"},
		{"placement: {elastic: {minActive: 1}}", "minActive"},
	}
	for _, tc := range cases {
		_, err := placementOf(t, tc.doc+"\n")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.doc, err, tc.want)
		}
	}
	// All problems at once, each on its line.
	_, err := placementOf(t, "placement:\n  mode: x\n  jitter: -1\n")
	if err == nil || !strings.Contains(err.Error(), "line 2: placement.mode") || !strings.Contains(err.Error(), "line 3: placement.jitter") {
		t.Errorf("two problems: %v", err)
	}
}
