package engine_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/scenario"
)

// explainScenario loads testdata/explain/NAME.yaml, runs the plan cycle,
// explains job and estimates its start on a fresh copy of the scenario.
func explainScenario(t *testing.T, name, job string) (engine.Explanation, engine.Estimate) {
	t.Helper()
	s, err := scenario.Load(filepath.Join("testdata", "explain", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Engine()
	if err != nil {
		t.Fatal(err)
	}
	e.Cycle(s.Start)
	x, ok := e.Explain(job)
	if !ok {
		t.Fatalf("Explain(%q): not found", job)
	}
	copyEng, err := s.Engine()
	if err != nil {
		t.Fatal(err)
	}
	return x, engine.EstimateStart(copyEng, job, s.Start, engine.WhatIf{})
}

func helpOf(x engine.Explanation, kind string) []string {
	var out []string
	for _, h := range x.Help {
		if h.Kind == kind {
			out = append(out, h.Message)
		}
	}
	return out
}

func removed(p *engine.PlacementExplain) map[string]int {
	out := map[string]int{}
	for _, f := range p.Removed {
		out[f.Filter] = f.Workers
	}
	return out
}

func hasHelp(t *testing.T, x engine.Explanation, kind, want string) {
	t.Helper()
	for _, m := range helpOf(x, kind) {
		if strings.Contains(m, want) {
			return
		}
	}
	t.Errorf("no %s help containing %q in %+v", kind, want, x.Help)
}

func TestExplainSections(t *testing.T) {
	cases := []struct {
		name, file, job string
		check           func(t *testing.T, x engine.Explanation, est engine.Estimate)
	}{
		{"no worker has enough GPU memory", "gpu-memory", "train", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			if len(x.Pending) != 1 || x.Pending[0].Tasks != 4 || x.Pending[0].Reason.Code != model.ReasonUnschedulable {
				t.Fatalf("pending = %+v, want one group of 4 unschedulable tasks", x.Pending)
			}
			p := x.Pending[0].Placement
			if got := removed(p); got[engine.FilterGPUMemory] != 3 || got[engine.FilterGPUs] != 1 || p.FitNow != 0 || p.Workers != 4 {
				t.Errorf("removed = %v, fitNow %d of %d; want 3 by gpu memory, 1 by gpus", got, p.FitNow, p.Workers)
			}
			if p.Closest == nil || p.Closest.Worker != "gpu-0" ||
				!slices.Equal(p.Closest.Lacks, []engine.Lack{{What: "gpu_memory", Need: "40960 MB", Have: "24576 MB"}}) {
				t.Errorf("closest = %+v, want gpu-0 lacking only GPU memory 40960 vs 24576 MB", p.Closest)
			}
			hasHelp(t, x, "smaller_request", "asking for 24576 MB of GPU memory instead of 40960 would start now on worker gpu-0")
			if est.Known {
				t.Errorf("estimate = %+v, want unknown: nothing can run the task", est)
			}
		}},
		{"fewer GPUs would start now on the free worker", "gpu-count", "wide", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			p := x.Pending[0].Placement
			if removed(p)[engine.FilterGPUs] != 3 || p.Closest == nil || p.Closest.Worker != "w3" {
				t.Errorf("placement = %+v, want 3 removed for GPUs and w3 (the free one) closest", p)
			}
			hasHelp(t, x, "smaller_request", "asking for 1 GPU instead of 2 would start now on worker w3")
		}},
		{"another share above its entitlement", "fairshare", "job-b", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			a := x.Allocation
			if a == nil || a.Policy != "fairshare" || a.Group != "b" || a.Running != 4 || a.Target != 5 || a.Entitled != 0.5 || a.GroupRank != 1 {
				t.Fatalf("allocation = %+v, want share b running 4 of target 5, entitled to 50%%, first in order", a)
			}
			hasHelp(t, x, "share_above_entitlement", "share a is above its entitlement (60% vs 50%)")
			hasHelp(t, x, "below_entitlement", "share b runs 40% of the pool, below its entitlement of 50%")
			if !est.Known || est.Wait() != 10*time.Minute {
				t.Errorf("estimate = %+v, want a start when the first tasks end, in 10 minutes", est)
			}
		}},
		{"own share above its entitlement ranks behind", "fairshare", "job-a", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			a := x.Allocation
			if a.GroupRank != 2 || len(a.GroupsAhead) != 1 || a.GroupsAhead[0].Group != "b" || a.Usage <= a.GroupsAhead[0].Usage {
				t.Errorf("allocation = %+v, want share a second, behind b's lower usage", a)
			}
			hasHelp(t, x, "share_above_entitlement", "share a (this job's) is at or above its entitlement (60% vs 50%)")
		}},
		{"help is said once for two shapes on one full pool", "fairshare-two-shapes", "job-b", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			ready := 0
			for _, p := range x.Pending {
				if p.State == model.TaskReady {
					ready++
				}
			}
			if h := helpOf(x, "share_above_entitlement"); ready != 2 || len(h) != 1 || !strings.Contains(h[0], "share a is above") {
				t.Errorf("%d ready groups, share help %q; want 2 groups and share a's help once", ready, h)
			}
		}},
		{"endpoint at capacity", "endpoint", "small", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			a := x.Admission
			if a == nil || a.Admitted || a.Load != 8 || a.LoadSource != "regions" || a.MaxCapacity != 40 || a.TargetCapacity != 32 ||
				a.InUse != 32 || a.Available != 0 || a.ThrottledSince.IsZero() || a.Reason.Code != model.ReasonThrottled {
				t.Fatalf("admission = %+v, want throttled: load 8, 32 of target 32 (max 40) in use", a)
			}
			if x.Allocation != nil || len(x.Pending) != 1 || x.Pending[0].State != model.TaskBlocked || x.Pending[0].Tasks != 2 {
				t.Errorf("pending = %+v, want both tasks blocked at admission and no allocation section", x.Pending)
			}
			hasHelp(t, x, "endpoint_capacity", "endpoint sls is at capacity: 32 of 32 in use (target 32 of max 40); the job needs 8")
			if !est.Known || est.Wait() != 20*time.Minute {
				t.Errorf("estimate = %+v, want admission when big ends, in 20 minutes", est)
			}
		}},
		{"waiting on a dependency", "dependency", "etl", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			var blocked *engine.PendingExplain
			for i := range x.Pending {
				if x.Pending[i].State == model.TaskBlocked {
					blocked = &x.Pending[i]
				}
			}
			want := []engine.Dependency{{Task: "extract-0", State: model.TaskRunning, Worker: "node"}, {Task: "extract-1", State: model.TaskReady}}
			if blocked == nil || blocked.Reason.Code != model.ReasonWaitingDependency || !slices.Equal(blocked.Dependencies, want) {
				t.Fatalf("blocked = %+v, want load waiting for extract-0 (running on node) and extract-1 (ready)", blocked)
			}
			hasHelp(t, x, "dependency", "parent task extract-0 is running on node")
			if x.Tasks != (engine.TaskCounts{Total: 3, Running: 1, Ready: 1, Blocked: 1}) {
				t.Errorf("tasks = %+v", x.Tasks)
			}
		}},
		{"priority rank inside the group", "priority", "report", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			a := x.Allocation
			if a.JobRank != 2 || len(a.JobsAhead) != 1 || a.JobsAhead[0].Job != "urgent-fix" || a.JobsAhead[0].Priority != 5 {
				t.Errorf("allocation = %+v, want report second, behind urgent-fix (priority 5)", a)
			}
			hasHelp(t, x, "priority", "raise its priority above 5")
			// The running task ends at 10 min, urgent-fix runs 10 min more.
			if !est.Known || est.Wait() != 20*time.Minute {
				t.Errorf("estimate = %+v, want 20 minutes", est)
			}
		}},
		{"first in rank needs no priority help", "priority", "urgent-fix", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			if x.Allocation.JobRank != 1 || len(helpOf(x, "priority")) != 0 {
				t.Errorf("allocation = %+v, help %+v; want rank 1 and no priority help", x.Allocation, x.Help)
			}
			if !est.Known || est.Wait() != 10*time.Minute {
				t.Errorf("estimate = %+v, want 10 minutes", est)
			}
		}},
		{"priority policy ranks by usage per weight, not by priority", "priority-usage", "high", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			a := x.Allocation
			if a == nil || a.GroupRank != 2 || len(a.GroupsAhead) != 1 || a.GroupsAhead[0].Group != "low" || !strings.Contains(a.RankBy, "usage per unit of weight") {
				t.Fatalf("allocation = %+v, want high second behind the older low (equal usage per weight)", a)
			}
			if h := helpOf(x, "priority"); len(h) != 0 {
				t.Errorf("priority help %q: without serial priority no priority is sure to rank first", h)
			}
		}},
		{"a suspended job is not ranked and is told the level that runs", "priority-usage", "off", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			a := x.Allocation
			if a == nil || a.GroupRank != 0 || a.Reason.Code != model.ReasonSuspended {
				t.Fatalf("allocation = %+v, want suspended and unranked", a)
			}
			hasHelp(t, x, "suspended", "priority 1 or more lets the job run")
		}},
		{"serial priority: a higher level would rank first", "priority-serial", "low", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			a := x.Allocation
			if a == nil || a.GroupRank != 2 || a.GroupsAhead[0].Group != "high" {
				t.Fatalf("allocation = %+v, want low second behind high", a)
			}
			hasHelp(t, x, "priority", "priority 6 would put it first")
		}},
		{"a level of weight 0 is suspended: the first weighted level runs", "priority-serial", "zero-weight", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			hasHelp(t, x, "suspended", "priority 2 or more lets the job run")
		}},
		{"classload ranks classes by their turn", "classload", "small-job", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			a := x.Allocation
			if a == nil || a.GroupRank != 2 || len(a.GroupsAhead) != 1 || a.GroupsAhead[0].Group != "big" {
				t.Fatalf("allocation = %+v, want class small second behind big (70%%)", a)
			}
		}},
		{"one worker busy for 10 more minutes", "busy-10m", "next", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			if !est.Known || est.Wait() != 10*time.Minute || est.Worker != "node" || est.Task != "t" || est.Ends != 1 {
				t.Errorf("estimate = %+v, want t on node in 10 minutes after 1 end", est)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, est := explainScenario(t, c.file, c.job)
			c.check(t, x, est)
		})
	}
}

func TestExplainUnknownJob(t *testing.T) {
	e, err := engine.New(engine.Config{Queues: []engine.QueueConfig{{Name: "q"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Explain("nope"); ok {
		t.Error("Explain of an unknown job answered")
	}
	if est := engine.EstimateStart(e, "nope", time.Time{}, engine.WhatIf{}); est.Known {
		t.Errorf("estimate of an unknown job = %+v", est)
	}
}

func TestExplainGroupsAThousandIdenticalTasks(t *testing.T) {
	e, err := engine.New(engine.Config{Queues: []engine.QueueConfig{{Name: "q"}}})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := e.Apply(engine.AddWorker{Worker: model.Worker{Name: "w", Slots: 10}, At: at}); err != nil {
		t.Fatal(err)
	}
	tasks := make([]model.Task, 1000)
	for i := range tasks {
		tasks[i] = model.Task{Name: "t" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + time.Duration(i).String()}
	}
	if err := e.Apply(engine.SubmitJob{Job: model.Job{ID: "big", Queue: "q", Submitted: at, Tasks: tasks}}); err != nil {
		t.Fatal(err)
	}
	e.Cycle(at)
	x, _ := e.Explain("big")
	if len(x.Pending) != 1 || x.Pending[0].Tasks != 990 || len(x.Pending[0].Examples) != 3 || x.Tasks.Running != 10 {
		t.Errorf("pending = %+v, running %d; want one entry of 990 tasks with 3 examples", x.Pending, x.Tasks.Running)
	}
}

func TestEstimateIsDeterministicAndBounded(t *testing.T) {
	s, err := scenario.Load(filepath.Join("testdata", "explain", "gpu-count.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(w engine.WhatIf) engine.Estimate {
		e, err := s.Engine()
		if err != nil {
			t.Fatal(err)
		}
		return engine.EstimateStart(e, "wide", s.Start, w)
	}
	if a, b := run(engine.WhatIf{}), run(engine.WhatIf{}); a != b {
		t.Errorf("two estimates differ: %+v vs %+v", a, b)
	}
	if est := run(engine.WhatIf{MaxCycles: 3}); est.Known || est.Cycles != 3 || !strings.Contains(est.Note, "3 simulated cycles") {
		t.Errorf("with 3 cycles at most: %+v", est)
	}
	if est := run(engine.WhatIf{Horizon: 30 * time.Minute}); est.Known || !strings.Contains(est.Note, "horizon") {
		t.Errorf("with a 30-minute horizon: %+v", est)
	}
}

func TestExplainBoundsShapesExplained(t *testing.T) {
	e, err := engine.New(engine.Config{Queues: []engine.QueueConfig{{Name: "q"}}})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := e.Apply(engine.AddWorker{Worker: model.Worker{Name: "w", Slots: 1, Capacity: model.Resources{MilliCPU: 1000}}, At: at}); err != nil {
		t.Fatal(err)
	}
	const shapes = engine.MaxPendingGroups + 10
	tasks := make([]model.Task, shapes)
	for i := range tasks {
		tasks[i] = model.Task{Name: fmt.Sprintf("t%02d", i), Resources: model.Resources{MilliCPU: int64(2000 + i)}}
	}
	if err := e.Apply(engine.SubmitJob{Job: model.Job{ID: "many", Queue: "q", Submitted: at, Tasks: tasks}}); err != nil {
		t.Fatal(err)
	}
	e.Cycle(at)
	x, _ := e.Explain("many")
	if len(x.Pending) != engine.MaxPendingGroups || x.MoreGroups != 10 || x.Tasks.Ready != shapes {
		t.Errorf("pending %d groups, %d more, %d ready; want %d, 10 more, %d ready", len(x.Pending), x.MoreGroups, x.Tasks.Ready, engine.MaxPendingGroups, shapes)
	}
}
