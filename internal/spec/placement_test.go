package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/elastic"
	"github.com/allot-sched/allot/internal/engine/place"
)

func placementOf(t *testing.T, doc string) (place.Config, error) {
	t.Helper()
	var s Scheduling
	root, err := Decode([]byte(doc), &s)
	if err != nil {
		return place.Config{}, err
	}
	cfg, err := s.EngineConfig()
	if err != nil {
		return place.Config{}, WithLines(err, root)
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

func TestStickToIsCheckedAndDerived(t *testing.T) {
	run := func(t Task) Task { t.Run = "true"; return t }
	cases := []struct {
		name    string
		tasks   []Task
		want    string // StickTo of the last task
		wantErr string
	}{
		{"explicit", []Task{run(Task{Name: "sft"}), run(Task{Name: "ppo", Needs: []string{"sft"}, StickTo: "sft"})}, "sft", ""},
		{"from a checkpoint reference", []Task{run(Task{Name: "sft"}),
			{Name: "ppo", Needs: []string{"sft"}, Command: []string{"train", "--init=${tasks.sft.result.checkpoint_path}"}}}, "sft", ""},
		{"from an adapter reference in env", []Task{run(Task{Name: "lora"}),
			{Name: "eval", Needs: []string{"lora"}, Run: "eval", Env: map[string]string{"A": "${tasks.lora.result.adapterURI}"}}}, "lora", ""},
		{"other results do not stick", []Task{run(Task{Name: "prep"}),
			{Name: "train", Needs: []string{"prep"}, Run: "train ${tasks.prep.result.rows}"}}, "", ""},
		{"not a need", []Task{run(Task{Name: "a"}), run(Task{Name: "b", StickTo: "a"})}, "", "tasks[1].stickTo: \"a\" is not among the task's needs"},
		{"a counted parent", []Task{run(Task{Name: "a", Count: 3}), run(Task{Name: "b", Needs: []string{"a"}, StickTo: "a"})}, "", "stands for 3 tasks"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex, err := Job{Tasks: tc.tasks}.Expand("", time.Time{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ex.Job.Tasks[len(ex.Job.Tasks)-1].StickTo; got != tc.want {
				t.Fatalf("stickTo %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCountedTasksKeepTheirStage(t *testing.T) {
	ex, err := Job{Tasks: []Task{{Name: "shard", Count: 3}, {Name: "merge", Needs: []string{"shard"}}}}.Expand("", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	ts := ex.Job.Tasks
	if ts[0].Stage != "shard" || ts[2].StageName() != "shard" || ts[3].Stage != "" || ts[3].StageName() != "merge" {
		t.Fatalf("stages %q %q %q", ts[0].Stage, ts[2].Stage, ts[3].Stage)
	}
}
