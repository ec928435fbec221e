package spec

import (
	"strings"
	"testing"
	"time"
)

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
