package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/spec"
)

func decodeScheduling(t *testing.T, doc string) (spec.Scheduling, error) {
	t.Helper()
	var s spec.Scheduling
	root, err := spec.Decode([]byte(doc), &s)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	_, err = Engine(s)
	return s, spec.WithLines(err, root)
}

func TestThrottlingAndEndpointsBlocks(t *testing.T) {
	s, err := decodeScheduling(t, `
throttling:
  capacityTargetPercentage: 0.8
  tileWorkersPerInstance: 2
  starvationWait: 0
endpoints:
  - name: det
    type: instance-backed
    instances: 3
    instanceConcurrency: 5
  - name: ab
    type: serverless
    variants:
      - {name: current, weight: 70, maxConcurrency: 10}
      - {name: candidate, maxConcurrency: 4}
`)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := Engine(s)
	got := cfg.Admission
	want := admit.Settings{Enabled: true, CapacityTargetPercentage: 0.8, DefaultInstanceConcurrency: 2,
		DefaultHTTPEndpointConcurrency: 10, TileWorkersPerInstance: 2, StarvationWait: 0}
	if got.Settings != want {
		t.Errorf("settings %+v, want %+v", got.Settings, want)
	}
	if len(got.Endpoints) != 2 || got.Endpoints[1].Variants[1].Weight != 1 || got.Endpoints[1].Variants[0].Weight != 70 {
		t.Fatalf("endpoints %+v", got.Endpoints)
	}
	if c := admit.MaxCapacity(got.Endpoints[0], admit.Variants(got.Endpoints[0])[0], got.Settings); c != 15 {
		t.Errorf("det capacity %d, want 15", c)
	}
	// Omitted, every setting is the seed's default.
	empty, err := decodeScheduling(t, "queues: []\n")
	if err != nil {
		t.Fatal(err)
	}
	if cfg, _ := Engine(empty); cfg.Admission.Settings != admit.Defaults() {
		t.Errorf("defaults %+v", cfg.Admission.Settings)
	}
}

func TestInvalidThrottlingIsReportedWithFieldAndLine(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"target above 1.5", "throttling:\n  capacityTargetPercentage: 1.6\n", "line 2: throttling.capacityTargetPercentage: must be between 0.0 and 1.5 (got 1.6)"},
		{"negative instances", "endpoints:\n  - name: e\n    type: instance-backed\n    instances: -1\n", "line 4: endpoints[0].instances: must not be negative (got -1)"},
		{"negative concurrency", "endpoints:\n  - name: e\n    type: instance-backed\n    instances: 1\n    instanceConcurrency: -2\n", "line 5: endpoints[0].instanceConcurrency: must not be negative"},
		{"weights all zero", "endpoints:\n  - name: e\n    type: http\n    variants:\n      - {name: a, weight: 0}\n      - {name: b, weight: 0}\n", "line 4: endpoints[0].variants: the weights of the variants are all zero"},
		{"duplicate endpoint", "endpoints:\n  - {name: e, type: http}\n  - {name: e, type: http}\n", "line 3: endpoints[1].name: endpoint \"e\" is already defined at endpoints[0]"},
		{"duplicate variant", "endpoints:\n  - name: e\n    type: http\n    variants: [{name: a}, {name: a}]\n", "endpoints[0].variants[1].name: variant \"a\" is already defined"},
		{"unknown type", "endpoints:\n  - {name: e, type: lambda}\n", "endpoints[0].type: unknown endpoint type \"lambda\""},
		{"unknown field", "throttling:\n  throttle: true\n", `unknown field "throttle"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s spec.Scheduling
			root, err := spec.Decode([]byte(tc.doc), &s)
			if err == nil {
				_, err = Engine(s)
				err = spec.WithLines(err, root)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestApplyEnvOverlaysTheSeedsVariables(t *testing.T) {
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	var s spec.Scheduling
	s.Throttling.TileWorkersPerInstance = 8 // the file says 8; the environment wins
	err := s.ApplyEnv(env(map[string]string{
		"SCHEDULER_THROTTLING_ENABLED": "False", "CAPACITY_TARGET_PERCENTAGE": "0.5", "DEFAULT_INSTANCE_CONCURRENCY": "3",
		"DEFAULT_HTTP_ENDPOINT_CONCURRENCY": "20", "TILE_WORKERS_PER_INSTANCE": "6", "SCHEDULER_STARVATION_WAIT": "90s",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := admit.Settings{Enabled: false, CapacityTargetPercentage: 0.5, DefaultInstanceConcurrency: 3,
		DefaultHTTPEndpointConcurrency: 20, TileWorkersPerInstance: 6, StarvationWait: 90 * time.Second}
	if got := ThrottlingSettings(s.Throttling); got != want {
		t.Errorf("settings %+v, want %+v", got, want)
	}

	var untouched spec.Scheduling
	if err := untouched.ApplyEnv(env(nil)); err != nil || ThrottlingSettings(untouched.Throttling) != admit.Defaults() {
		t.Errorf("no variables: %v, %+v", err, ThrottlingSettings(untouched.Throttling))
	}

	err = s.ApplyEnv(env(map[string]string{"SCHEDULER_THROTTLING_ENABLED": "maybe", "CAPACITY_TARGET_PERCENTAGE": "1.6",
		"TILE_WORKERS_PER_INSTANCE": "-1", "DEFAULT_INSTANCE_CONCURRENCY": "two"}))
	var list spec.Errors
	if !errors.As(err, &list) || len(list) != 4 {
		t.Fatalf("err = %v, want 4 problems", err)
	}
	for _, name := range []string{"SCHEDULER_THROTTLING_ENABLED", "CAPACITY_TARGET_PERCENTAGE", "TILE_WORKERS_PER_INSTANCE", "DEFAULT_INSTANCE_CONCURRENCY"} {
		if !strings.Contains(err.Error(), name+": ") {
			t.Errorf("no error names %s: %v", name, err)
		}
	}
}
