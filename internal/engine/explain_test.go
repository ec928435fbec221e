package engine_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/scenario"
)

// step moves a scenario on after its plan cycle, as a server's state moves
// between cycles: at `at` after time zero it submits jobs of the scenario
// held back until then, reports tasks ("job/task") succeeded, drains or
// removes workers, and runs a cycle unless noCycle. Jobs a step omits are
// never submitted.
type step struct {
	at      time.Duration
	omit    []string
	submit  []string
	finish  []string
	drain   []string
	remove  []string
	noCycle bool
}

// explainSteps loads testdata/explain/NAME.yaml, runs the plan cycle and
// the steps, explains job on the engine they leave, and estimates its start
// from the last step's time on a second engine: without steps a fresh copy
// of the scenario, as `allot explain -f` does, else one taken through the
// same steps. It returns the explained engine too, so that a test can run
// the next cycle and check a claim.
func explainSteps(t *testing.T, name, job string, steps []step) (engine.Explanation, engine.Estimate, *engine.Engine) {
	t.Helper()
	s, err := scenario.Load(filepath.Join("testdata", "explain", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e, at := stepScenario(t, s, steps, true)
	x, ok := e.Explain(job)
	if !ok {
		t.Fatalf("Explain(%q): not found", job)
	}
	// Without steps the copy is the scenario at time zero, as `allot
	// explain -f` estimates; with steps it has run the same cycles, and
	// EstimateStart starts with one more.
	copyEng, _ := stepScenario(t, s, steps, false)
	return x, engine.EstimateStart(copyEng, job, at, engine.WhatIf{}), e
}

// stepScenario builds the scenario's engine at time zero (as
// scenario.Engine does, leaving out the jobs a step submits), runs the
// plan cycle (always when there are steps, else if plan) and then the
// steps; it returns the engine and the last step's time.
func stepScenario(t *testing.T, s *scenario.Scenario, steps []step, plan bool) (*engine.Engine, time.Time) {
	t.Helper()
	apply := func(e *engine.Engine, ev engine.Event) {
		t.Helper()
		if err := e.Apply(ev); err != nil {
			t.Fatalf("%T: %v", ev, err)
		}
	}
	held := map[string]bool{}
	for _, st := range steps {
		for _, id := range slices.Concat(st.submit, st.omit) {
			held[id] = true
		}
	}
	e, err := engine.New(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range s.Workers {
		apply(e, engine.AddWorker{Worker: w, At: s.Start})
	}
	jobs := map[string]model.Job{}
	for _, j := range s.Jobs {
		jobs[j.ID] = j
		if !held[j.ID] {
			j.Submitted = s.Start
			apply(e, engine.SubmitJob{Job: j})
		}
	}
	for _, r := range s.Running {
		apply(e, r)
	}
	for _, q := range slices.Sorted(maps.Keys(s.History)) {
		apply(e, engine.SetHistory{Queue: q, History: s.History[q], At: s.Start})
	}
	if !plan && len(steps) == 0 {
		return e, s.Start
	}
	e.Cycle(s.Start)
	at := s.Start
	for _, st := range steps {
		at = s.Start.Add(st.at)
		for _, id := range st.submit {
			j, ok := jobs[id]
			if !ok {
				t.Fatalf("step: no job %q in the scenario", id)
			}
			j.Submitted = at
			apply(e, engine.SubmitJob{Job: j})
		}
		for _, jt := range st.finish {
			jobID, task, _ := strings.Cut(jt, "/")
			apply(e, engine.FinishTask{Job: jobID, Task: task, Outcome: model.Succeeded, At: at})
		}
		for _, w := range st.drain {
			apply(e, engine.SetWorkerState{Name: w, State: model.WorkerDraining, At: at})
		}
		for _, w := range st.remove {
			apply(e, engine.RemoveWorker{Name: w, At: at})
		}
		if !st.noCycle {
			e.Cycle(at)
		}
	}
	return e, at
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
		// steps move the scenario on after its plan cycle (see step);
		// next, when set, checks a claim of the explanation against the
		// cycle that follows it.
		steps []step
		next  func(t *testing.T, d *engine.Decisions)
	}{
		{"no worker has enough GPU memory", "gpu-memory", "train", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			if len(x.Pending) != 1 || x.Pending[0].Tasks != 4 || x.Pending[0].Reason.Code != model.ReasonUnschedulable {
				t.Fatalf("pending = %+v, want one group of 4 unschedulable tasks", x.Pending)
			}
			p := x.Pending[0].Placement
			if got := removed(p); got[place.FilterGPUMemory.String()] != 3 || got[place.FilterGPUs.String()] != 1 || p.FitNow != 0 || p.Workers != 4 {
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
		}, nil, nil},
		{"fewer GPUs would start now on the free worker", "gpu-count", "wide", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			p := x.Pending[0].Placement
			if removed(p)[place.FilterGPUs.String()] != 3 || p.Closest == nil || p.Closest.Worker != "w3" {
				t.Errorf("placement = %+v, want 3 removed for GPUs and w3 (the free one) closest", p)
			}
			hasHelp(t, x, "smaller_request", "asking for 1 GPU instead of 2 would start now on worker w3")
		}, nil, nil},
		{"another share above its entitlement", "fairshare", "job-b", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			a := x.Allocation
			if a == nil || a.Policy != "fairshare" || a.Group != "b" || a.Running != 4 || a.Target != 5 || a.Figure("entitled") != 0.5 || a.GroupRank != 1 {
				t.Fatalf("allocation = %+v, want share b running 4 of target 5, entitled to 50%%, first in order", a)
			}
			hasHelp(t, x, "share_above_entitlement", "share a is above its entitlement (60% vs 50%)")
			hasHelp(t, x, "below_entitlement", "share b runs 40% of the pool, below its entitlement of 50%")
			if !est.Known || est.Wait() != 10*time.Minute {
				t.Errorf("estimate = %+v, want a start when the first tasks end, in 10 minutes", est)
			}
		}, nil, nil},
		{"own share above its entitlement ranks behind", "fairshare", "job-a", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			a := x.Allocation
			if a.GroupRank != 2 || len(a.GroupsAhead) != 1 || a.GroupsAhead[0].Group != "b" || a.Figure("usage") <= a.GroupsAhead[0].Figure.Value {
				t.Errorf("allocation = %+v, want share a second, behind b's lower usage", a)
			}
			hasHelp(t, x, "share_above_entitlement", "share a (this job's) is at or above its entitlement (60% vs 50%)")
		}, nil, nil},
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
		}, nil, nil},
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
		}, nil, nil},
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
		}, nil, nil},
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
		}, nil, nil},
		{"first in rank needs no priority help", "priority", "urgent-fix", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			if x.Allocation.JobRank != 1 || len(helpOf(x, "priority")) != 0 {
				t.Errorf("allocation = %+v, help %+v; want rank 1 and no priority help", x.Allocation, x.Help)
			}
			if !est.Known || est.Wait() != 10*time.Minute {
				t.Errorf("estimate = %+v, want 10 minutes", est)
			}
		}, nil, nil},
		{"priority policy ranks by usage per weight, not by priority", "priority-usage", "high", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			a := x.Allocation
			if a == nil || a.GroupRank != 2 || len(a.GroupsAhead) != 1 || a.GroupsAhead[0].Group != "low" || !strings.Contains(a.RankBy, "usage per unit of weight") {
				t.Fatalf("allocation = %+v, want high second behind the older low (equal usage per weight)", a)
			}
			if h := helpOf(x, "priority"); len(h) != 0 {
				t.Errorf("priority help %q: without serial priority no priority is sure to rank first", h)
			}
		}, nil, nil},
		{"a suspended job is not ranked and is told the level that runs", "priority-usage", "off", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			a := x.Allocation
			if a == nil || a.GroupRank != 0 || a.Reason.Code != model.ReasonSuspended {
				t.Fatalf("allocation = %+v, want suspended and unranked", a)
			}
			hasHelp(t, x, "suspended", "priority 1 or more lets the job run")
		}, nil, nil},
		{"serial priority: a higher level would rank first", "priority-serial", "low", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			a := x.Allocation
			if a == nil || a.GroupRank != 2 || a.GroupsAhead[0].Group != "high" {
				t.Fatalf("allocation = %+v, want low second behind high", a)
			}
			hasHelp(t, x, "priority", "priority 6 would put it first")
		}, nil, nil},
		{"a level of weight 0 is suspended: the first weighted level runs", "priority-serial", "zero-weight", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			hasHelp(t, x, "suspended", "priority 2 or more lets the job run")
		}, nil, nil},
		{"classload ranks classes by their turn", "classload", "small-job", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			a := x.Allocation
			if a == nil || a.GroupRank != 2 || len(a.GroupsAhead) != 1 || a.GroupsAhead[0].Group != "big" {
				t.Fatalf("allocation = %+v, want class small second behind big (70%%)", a)
			}
		}, nil, nil},
		{"one worker busy for 10 more minutes", "busy-10m", "next", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			if !est.Known || est.Wait() != 10*time.Minute || est.Worker != "node" || est.Task != "t" || est.Ends != 1 {
				t.Errorf("estimate = %+v, want t on node in 10 minutes after 1 end", est)
			}
		}, nil, nil},
		{"stage stickiness: the task waits for its parent's busy worker", "sticky", "ft", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			if len(x.Pending) != 1 || x.Pending[0].Reason.Code != model.ReasonStickyWorkerBusy {
				t.Fatalf("pending = %+v, want eval waiting with sticky_worker_busy", x.Pending)
			}
			p := x.Pending[0].Placement
			end := time.Date(2026, 1, 1, 2, 10, 0, 0, time.UTC)
			a := p.Assigned
			if a == nil || a.Worker != "gpu-0" || a.By != engine.AssignedSticky || a.Parent != "sft" || a.Free || a.OthersFree != 2 ||
				!a.NextEnd.Equal(end) || len(a.Running) != 1 || a.Running[0].Job != "other" || a.Running[0].Task != "main" {
				t.Fatalf("assigned = %+v, want gpu-0 (ran sft) busy with other/main until 02:10, 2 other workers free", a)
			}
			if p.FitNow != 0 || removed(p)[place.FilterAssigned.String()] != 3 || p.Closest == nil || p.Closest.Worker != "gpu-0" {
				t.Errorf("placement = %+v, want the 3 other workers removed as not assigned, gpu-0 closest", p)
			}
			hasHelp(t, x, "assigned_worker", "waits for worker gpu-0, which ran it (stage stickiness); gpu-0 is busy running other/main (expected to end at 2026-01-01T02:10:00Z)")
			for _, h := range x.Help {
				if h.Kind != "assigned_worker" || strings.Contains(h.Message, "gpu-1") || strings.Contains(h.Message, "gpu-3") {
					t.Errorf("help %+v: a pinned task is told about its own worker only", h)
				}
			}
			if !est.Known || est.Worker != "gpu-0" || est.Wait() != 2*time.Hour {
				t.Errorf("estimate = %+v, want eval on gpu-0 when main ends, in 2 hours", est)
			}
		}, []step{{at: 10 * time.Minute, finish: []string{"ft/sft", "other/prep"}}}, func(t *testing.T, d *engine.Decisions) {
			for _, st := range d.Starts {
				if st.Job == "ft" {
					t.Errorf("eval started on %s although its parent's worker is busy", st.Worker)
				}
			}
		}},
		{"stage stickiness: a removed parent's worker no longer holds the task", "sticky", "ft", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			p := x.Pending[0].Placement
			if p.Assigned != nil || !strings.Contains(p.NotAssigned, "worker gpu-0, which ran its parent sft, was removed; the task is placed like any other") {
				t.Fatalf("placement = %+v, want no assigned worker and a note that gpu-0 was removed", p)
			}
			if r := x.Pending[0].Reason.Code; r != model.ReasonNoFreeSlot {
				t.Errorf("reason %s, want no_free_slot: placed normally, every ready worker is busy", r)
			}
			if !est.Known || est.Worker != "gpu-2" || est.Wait() != 50*time.Minute {
				t.Errorf("estimate = %+v, want eval on gpu-2 when bg ends, in 50 minutes", est)
			}
		}, []step{{at: 10 * time.Minute, finish: []string{"ft/sft", "other/prep"}, remove: []string{"gpu-0"}, drain: []string{"gpu-3"}}}, nil},
		{"fixed pipeline: the shards wait for their type's busy worker", "pipeline", "etl", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			if len(x.Pending) != 1 || x.Pending[0].Tasks != 2 || x.Pending[0].Reason.Code != model.ReasonAssignedWorkerBusy {
				t.Fatalf("pending = %+v, want shard-1 and shard-2 waiting with assigned_worker_busy", x.Pending)
			}
			a := x.Pending[0].Placement.Assigned
			if a == nil || a.Worker != "node-0" || a.By != engine.AssignedPipeline || a.Type != "shard" || a.Free || a.OthersFree != 2 ||
				!a.NextEnd.Equal(time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)) {
				t.Fatalf("assigned = %+v, want node-0 (type shard) busy until 00:10, 2 other workers free", a)
			}
			hasHelp(t, x, "assigned_worker", "task type shard is assigned to worker node-0 (fixed-pipeline mode): its tasks wait for that worker; node-0 is busy running etl/shard-0")
			if h := helpOf(x, "smaller_request"); len(h) != 0 {
				t.Errorf("smaller_request help %q for a task whose worker has no free slot", h)
			}
			if !est.Known || est.Worker != "node-0" || est.Wait() != 10*time.Minute {
				t.Errorf("estimate = %+v, want shard-1 on node-0 in 10 minutes", est)
			}
		}, nil, func(t *testing.T, d *engine.Decisions) {
			if len(d.Starts) != 0 {
				t.Errorf("starts %+v: the shards should wait for node-0", d.Starts)
			}
		}},
		{"fixed pipeline: a draining type worker holds the tasks for good", "pipeline", "etl", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			a := x.Pending[0].Placement.Assigned
			if a == nil || a.Worker != "node-0" || a.State != model.WorkerDraining || a.RunningTotal != 0 {
				t.Fatalf("assigned = %+v, want node-0 draining, running nothing", a)
			}
			hasHelp(t, x, "enable_worker", "setting worker node-0 ready would let the task run there")
			if est.Known || est.Cycles != 1 || !strings.Contains(est.Note, "nothing will change") {
				t.Errorf("estimate = %+v, want unknown after one cycle: nothing will change", est)
			}
		}, []step{{at: 10 * time.Minute, finish: []string{"etl/shard-0"}, drain: []string{"node-0"}}}, nil},
		{"affinity wait: the task passes over a free worker until the wait ends", "affinity", "train", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			if len(x.Pending) != 1 || x.Pending[0].Reason.Code != model.ReasonAffinityWait {
				t.Fatalf("pending = %+v, want step-1 in an affinity wait", x.Pending)
			}
			aw := x.Pending[0].Placement.AffinityWait
			until := time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC)
			if aw == nil || !aw.Until.Equal(until) || !aw.ReadySince.Equal(until.Add(-30*time.Minute)) || aw.WaitSeconds != 1800 ||
				aw.AffinityWorkers != 1 || aw.PassedOver != 1 {
				t.Fatalf("affinity wait = %+v, want until 00:30 (ready at 00:00, 30m), 1 worker with affinity, 1 passed over", aw)
			}
			hasHelp(t, x, "affinity_wait", "passes over 1 free worker(s) that fit, waiting for one of the 1 worker(s) that ran tasks of job train, until 2026-01-01T00:30:00Z")
			hasHelp(t, x, "affinity_wait", "from then on it takes a free worker")
			if !est.Known || est.Worker != "node-b" || est.Wait() != 23*time.Minute {
				t.Errorf("estimate = %+v, want step-1 on node-b at 00:30, in 23 minutes", est)
			}
		}, []step{{at: 7 * time.Minute, finish: []string{"train/step-0"}, submit: []string{"late"}}}, func(t *testing.T, d *engine.Decisions) {
			if len(d.Starts) != 0 {
				t.Errorf("starts %+v: step-1 should keep passing over node-b", d.Starts)
			}
		}},
		{"affinity wait with nothing running: the estimate goes to its end", "affinity", "train", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			if aw := x.Pending[0].Placement.AffinityWait; aw == nil || aw.PassedOver != 1 {
				t.Fatalf("affinity wait = %+v, want node-b passed over", aw)
			}
			// A 5-minute tick from 00:07 would first see the wait over at
			// 00:32; the estimate runs a cycle at its end, 00:30.
			if !est.Known || est.Worker != "node-b" || est.Wait() != 23*time.Minute || est.Cycles != 2 || !strings.Contains(est.Note, "affinity wait") {
				t.Errorf("estimate = %+v, want step-1 on node-b in 23 minutes, after 2 cycles", est)
			}
		}, []step{{at: 7 * time.Minute, omit: []string{"late"}, finish: []string{"train/step-0"}, drain: []string{"node-a"}}}, nil},
		{"nothing served before it wants the free worker: would start now", "ahead", "wide", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			hasHelp(t, x, "smaller_request", "asking for 1 GPU instead of 2 would start now on worker w3")
		}, []step{{omit: []string{"infer"}, noCycle: true}}, nil},
		{"a higher-priority queue's ready task takes the free worker first", "ahead", "wide", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			hasHelp(t, x, "smaller_request", "asking for 1 GPU instead of 2 would fit worker w3, which is free now, but the cycle serves first 1 ready task(s) of queue hi (priority 10) that fit it")
			for _, m := range helpOf(x, "smaller_request") {
				if strings.Contains(m, "would start now") {
					t.Errorf("help %q claims a start that infer takes first", m)
				}
			}
		}, []step{{submit: []string{"infer"}, noCycle: true}}, func(t *testing.T, d *engine.Decisions) {
			if len(d.Starts) != 1 || d.Starts[0].Job != "infer" || d.Starts[0].Worker != "w3" {
				t.Errorf("starts %+v, want infer on w3: the claim the help avoided", d.Starts)
			}
		}},
		{"priority policy: the estimate stops once nothing will change", "priority-never", "gpu-job", func(t *testing.T, x engine.Explanation, est engine.Estimate) {
			// Time zero, a tick at 5m, other's end at 10m; then nothing
			// runs and no time-based rule applies.
			if est.Known || est.Cycles != 3 || est.Ends != 1 || !strings.HasPrefix(est.Note, "unknown: nothing will change") {
				t.Errorf("estimate = %+v, want unknown after 3 cycles and 1 end: nothing will change", est)
			}
		}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, est, e := explainSteps(t, c.file, c.job, c.steps)
			c.check(t, x, est)
			if c.next != nil {
				c.next(t, e.Cycle(e.Now()))
			}
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

// TestEstimateStopsWhenNothingWillChange runs, under every policy, a job
// that no worker can ever run behind two that can: once their attempts
// have ended nothing runs, and none of the policies' time-based
// rules (rebalance durations, usage windows, preemption delays) acts on an
// idle fleet, so the estimate stops there rather than at the horizon. A job
// of the same queue that can run is still estimated, so the early stop is
// not a blanket "unknown".
func TestEstimateStopsWhenNothingWillChange(t *testing.T) {
	policies := map[string]string{
		"fifo":      `{kind: fifo}`,
		"fairshare": `{kind: fairshare, fairshare: {shares: [{share: s}]}}`,
		"priority":  `{kind: priority, priority: {preemptablePercent: 50}}`,
		"sla":       `{kind: sla, sla: {groups: [{name: g, value: 1}], preemption: true}}`,
		"classload": `{kind: classload, classload: {classes: [{name: c, percent: 100}], requestorMap: [{class: c, pattern: ".*"}], rebalanceThreshold: 1, rebalanceMinimumDuration: 1m}}`,
	}
	for _, name := range slices.Sorted(maps.Keys(policies)) {
		t.Run(name, func(t *testing.T) {
			s, err := scenario.Parse([]byte(`
queues: [{name: q, policy: ` + policies[name] + `}]
workers: [{name: node}]
jobs:
  - {id: other, share: s, slaGroup: g, requestor: r, priority: 5, tasks: [{name: t, running: 1, runningFor: 20m, duration: 30m}]}
  - {id: never, share: s, slaGroup: g, requestor: r, priority: 5, tasks: [{name: t, duration: 1h, resources: {gpus: 1}}]}
  - {id: next, share: s, slaGroup: g, requestor: r, priority: 5, tasks: [{name: t, duration: 1h}]}
`))
			if err != nil {
				t.Fatal(err)
			}
			estimate := func(job string) engine.Estimate {
				e, err := s.Engine()
				if err != nil {
					t.Fatal(err)
				}
				return engine.EstimateStart(e, job, s.Start, engine.WhatIf{})
			}
			// Cycles at time zero and every 5 minutes until next ends at
			// 01:10 (other's end at 00:10 among them): 15, then nothing runs.
			if est := estimate("never"); est.Known || est.Cycles != 15 || est.Ends != 2 || !strings.HasPrefix(est.Note, "unknown: nothing will change") {
				t.Errorf("never: %+v, want unknown once next has ended (15 cycles, 2 ends): nothing will change", est)
			}
			if est := estimate("next"); !est.Known || est.Wait() != 10*time.Minute {
				t.Errorf("next: %+v, want a start when other ends, in 10 minutes", est)
			}
		})
	}
}

// TestExplainChangesNoDecision explains pinned tasks and an affinity wait,
// for which Explain asks placement itself, and checks that the next cycle
// decides exactly what it decides without the explanation.
func TestExplainChangesNoDecision(t *testing.T) {
	cases := []struct {
		file, job string
		steps     []step
	}{
		{"sticky", "ft", []step{{at: 10 * time.Minute, finish: []string{"ft/sft", "other/prep"}}}},
		{"pipeline", "etl", nil},
		{"affinity", "train", []step{{at: 7 * time.Minute, finish: []string{"train/step-0"}, submit: []string{"late"}}}},
		{"ahead", "wide", []step{{submit: []string{"infer"}, noCycle: true}}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			s, err := scenario.Load(filepath.Join("testdata", "explain", c.file+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			next := func(explain bool) string {
				e, at := stepScenario(t, s, c.steps, true)
				if explain {
					if _, ok := e.Explain(c.job); !ok {
						t.Fatalf("Explain(%q): not found", c.job)
					}
				}
				var out []string
				for _, d := range []*engine.Decisions{e.Cycle(at), e.Cycle(at.Add(30 * time.Minute))} {
					out = append(out, fmt.Sprintf("%+v %+v %+v", d.Starts, d.Deferred, d.Pending))
				}
				return strings.Join(out, "\n")
			}
			if with, without := next(true), next(false); with != without {
				t.Errorf("the cycles after Explain differ:\n%s\nwithout it:\n%s", with, without)
			}
		})
	}
}
