package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
)

func runExplain(t *testing.T, args ...string) string {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"explain"}, args...))
	if err := root.Execute(); err != nil {
		t.Fatalf("allot explain %v: %v\n%s", args, err, out.String())
	}
	return out.String()
}

const explainData = "../../internal/engine/testdata/explain/"

func TestExplainCommandPrintsEachSection(t *testing.T) {
	cases := []struct {
		name, file, job string
		want            []string
	}{
		{"placement with the closest worker and a smaller request", "gpu-memory.yaml", "train", []string{
			"job train (queue default): 4 task(s): 4 ready",
			"\npending:\n  4 ready task(s) (step-0, step-1, step-2, …): unschedulable:",
			"      1 removed by gpus: fewer than 2 GPUs\n      3 removed by gpu_memory: GPUs with less than 40960 MB each\n",
			"      closest: gpu-0 (ready) lacks gpu_memory (needs 40960 MB, has 24576 MB)",
			"  - asking for 24576 MB of GPU memory instead of 40960 would start now on worker gpu-0",
			"estimated start: unknown",
		}},
		{"admission figures", "endpoint.yaml", "small", []string{
			"\nadmission:\n  endpoint sls: throttled since 2026-01-01T00:00:00Z\n",
			"  capacity: 32 of target 32 in use (max 40), 0 available; the job's load is 8 (regions)",
			"  - endpoint sls is at capacity: 32 of 32 in use (target 32 of max 40); the job needs 8",
			"estimated start: in 20m0s (2026-01-01T00:20:00Z) — task region-0 on worker node-1",
		}},
		{"fairshare allocation", "fairshare.yaml", "job-b", []string{
			"  queue batch, policy fairshare, group b: 4 running, 4 waiting, target 5; pool 10 slots, 0 free",
			"  usage 4 (weight factor 1); runs 40% of the pool, entitled to 50%",
			"  - share a is above its entitlement (60% vs 50%)",
		}},
		{"dependencies", "dependency.yaml", "etl", []string{
			"  1 blocked task(s) (load): waiting_dependency:",
			"    waits for: extract-0 (running on node), extract-1 (ready)",
		}},
		{"the worker pinned tasks wait for", "pipeline.yaml", "etl", []string{
			"      2 removed by not_assigned_worker: the tasks may only run on worker node-0, which task type shard is assigned to (fixed-pipeline mode)",
			"      waits for worker node-0 (fixed-pipeline mode: task type shard): ready, busy; passes over 2 other free worker(s)",
			"      node-0 runs 1 task(s) in 1 slot(s): etl/shard-0 (expected to end 2026-01-01T00:10:00Z)",
			"  - task type shard is assigned to worker node-0 (fixed-pipeline mode): its tasks wait for that worker",
		}},
		{"rank and priority", "priority.yaml", "report", []string{
			"  job rank 2 in its group (priority 0); ahead: urgent-fix (priority 5, 0 running, 1 waiting)",
			"  - 1 job(s) of group all are ahead of this one; raise its priority above 5",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := runExplain(t, "-f", explainData+c.file, c.job)
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestExplainCommandJSON(t *testing.T) {
	out := runExplain(t, "-f", explainData+"busy-10m.yaml", "next", "-o", "json")
	var x api.Explanation
	if err := json.Unmarshal([]byte(out), &x); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if x.Job != "next" || x.Estimate == nil || !x.Estimate.Known || x.Estimate.WaitSeconds != 600 {
		t.Errorf("explanation = %+v, want next starting in 600 s", x)
	}
}

func TestExplainCommandUnknownJob(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"explain", "-f", explainData + "busy-10m.yaml", "nope"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), `no job "nope"`) {
		t.Errorf("err = %v, want no job \"nope\"", err)
	}
}

// A job whose tasks all run has nothing to estimate, which is not the same
// as an unknown start.
func TestExplainOfARunningJobSaysNothingWaits(t *testing.T) {
	var out bytes.Buffer
	x := api.Explanation{Job: "j", Queue: "q", Tasks: api.TaskCounts{Total: 2, Running: 2},
		Estimate: &api.Estimate{Note: "no task of the job waits"}}
	if err := writeExplanation(&out, x); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "no task waits: nothing to estimate") || strings.Contains(out.String(), "unknown") {
		t.Errorf("output:\n%s", out.String())
	}
}
