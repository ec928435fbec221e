package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/scenario"
)

func newExplainCmd() *cobra.Command {
	f := &clientFlags{}
	var file string
	cmd := &cobra.Command{
		Use:   "explain JOB",
		Short: "Explain why a job is not running, and when it should start",
		Long: `explain says why a job's waiting tasks are not running: admission (endpoint
capacity and load), allocation (its group's running slots, target, usage and
entitlement, its rank), placement (how many workers each filter removed, the
closest worker and what it lacks, and for a task waiting for free GPU devices
which tasks hold them) and dependencies; what would help; and an estimated
start from a short simulation of the current state with the production engine.
Identical waiting tasks are grouped.

With -f, explain works offline on a scenario file: it runs one plan cycle at
the scenario's time zero and explains JOB there. docs/explain.md describes
every section and the estimate's assumptions.`,
		Example: `  allot explain train-42
  allot explain train-42 -o json
  allot explain -f internal/engine/testdata/explain/gpu-memory.yaml train`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var x api.Explanation
			if file != "" {
				if err := f.checkOutput(); err != nil {
					return err
				}
				var err error
				if x, err = explainScenario(file, args[0]); err != nil {
					return err
				}
			} else {
				c, err := f.client()
				if err != nil {
					return err
				}
				if x, err = c.Explain(cmd.Context(), args[0]); err != nil {
					return err
				}
			}
			return f.print(cmd.OutOrStdout(), x, func(w io.Writer) error { return writeExplanation(w, x) })
		},
	}
	f.register(cmd)
	cmd.Flags().StringVarP(&file, "file", "f", "", "explain JOB of this scenario file offline, after one plan cycle")
	return cmd
}

// explainScenario explains job after one plan cycle of the scenario, and
// estimates its start on a second engine built from the same scenario.
func explainScenario(file, job string) (api.Explanation, error) {
	s, err := scenario.Load(file)
	if err != nil {
		return api.Explanation{}, err
	}
	e, err := s.Engine()
	if err != nil {
		return api.Explanation{}, err
	}
	e.Cycle(s.Start)
	x, ok := e.Explain(job)
	if !ok {
		return api.Explanation{}, fmt.Errorf("%s: no job %q in the scenario", file, job)
	}
	whatIf, err := s.Engine()
	if err != nil {
		return api.Explanation{}, err
	}
	est := engine.EstimateStart(whatIf, job, s.Start, engine.WhatIf{})
	x.Estimate = &est
	return control.APIExplanation(x)
}

// writeExplanation prints an explanation as sections for people.
func writeExplanation(w io.Writer, x api.Explanation) error {
	p := &printer{w: w}
	c := x.Tasks
	p.line("job %s (queue %s): %d task(s): %s", x.Job, x.Queue, c.Total, taskCounts(c))
	if e := x.Estimate; e != nil {
		switch {
		case c.Ready+c.Blocked == 0:
			p.line("no task waits: nothing to estimate")
		case e.Known:
			sure := ""
			if e.Confidence != "" {
				sure = ", confidence " + e.Confidence
			}
			p.line("estimated start: in %s (%s) — task %s on worker %s%s", e.Wait().Round(time.Second), e.Start.Format(time.RFC3339), e.Task, e.Worker, sure)
		default:
			p.line("estimated start: unknown (see the estimate section)")
		}
	}
	if a := x.Admission; a != nil {
		p.section("admission")
		where := a.Endpoint
		if a.Variant != "" {
			where += ", variant " + a.Variant
		}
		state := "admitted"
		switch {
		case !a.Admitted && !a.ThrottledSince.IsZero():
			state = "throttled since " + a.ThrottledSince.Format(time.RFC3339)
		case !a.Admitted:
			state = "waiting for admission"
		case a.SingleJobException:
			state = "admitted by the single-job exception"
		}
		p.line("  endpoint %s: %s", where, state)
		p.line("  capacity: %d of target %d in use (max %d), %d available; the job's load is %d (%s)",
			a.InUse, a.TargetCapacity, a.MaxCapacity, a.Available, a.Load, a.LoadSource)
		res := "none"
		if a.ReservedFor != "" {
			res = "held by job " + a.ReservedFor
		}
		p.line("  jobs: %d running, %d waiting; starvation reservation: %s", a.RunningJobs, a.WaitingJobs, res)
		if a.Reason.Code != "" {
			p.line("  reason: %s: %s", a.Reason.Code, a.Reason.Message)
		}
	}
	if a := x.Allocation; a != nil {
		p.section("allocation")
		target := "-"
		if a.Target >= 0 {
			target = fmt.Sprint(a.Target)
		}
		p.line("  queue %s, policy %s, group %s: %d running, %d waiting, target %s; pool %d slots, %d free",
			a.Queue, a.Policy, a.Group, a.Running, a.Waiting, target, a.Slots, a.Free)
		if a.Summary != "" {
			p.line("  %s", a.Summary)
		}
		if a.GroupRank > 0 {
			var ahead []string
			for _, g := range a.GroupsAhead {
				s := fmt.Sprintf("%s (%d running, %d waiting, priority %d", g.Group, g.Running, g.Waiting, g.Priority)
				if g.Urgent {
					s += ", urgent"
				}
				if f := g.Figure; f != nil {
					s += fmt.Sprintf(", %s %.4g", f.Name, f.Value)
				}
				ahead = append(ahead, s+")")
			}
			by := ""
			if a.RankBy != "" {
				by = " (" + a.RankBy + ")"
			}
			p.line("  group rank %d%s%s", a.GroupRank, by, aheadList(ahead))
		}
		var jobs []string
		for _, j := range a.JobsAhead {
			jobs = append(jobs, fmt.Sprintf("%s (priority %d, %d running, %d waiting)", j.Job, j.Priority, j.Running, j.Waiting))
		}
		p.line("  job rank %d in its group (priority %d)%s", a.JobRank, a.Priority, aheadList(jobs))
		if a.Reason.Code != "" {
			p.line("  group reason: %s: %s", a.Reason.Code, a.Reason.Message)
		}
	}
	if g := x.Gang; g != nil {
		p.section("gang")
		p.line("  %s: %d tasks, minAvailable %d; needs %d at once; %d running, %d ready; %d could start now, %d at most",
			g.Name, g.Tasks, g.MinAvailable, g.Need, g.Running, g.Ready, g.Free, g.Capacity)
		p.line("  %s", g.Message)
	}
	if len(x.Pending) > 0 {
		p.section("pending")
	}
	for _, pe := range x.Pending {
		names := strings.Join(pe.Examples, ", ")
		if pe.Tasks > len(pe.Examples) {
			names += ", …"
		}
		p.line("  %d %s task(s) (%s): %s: %s", pe.Tasks, pe.State, names, pe.Reason.Code, pe.Reason.Message)
		if pl := pe.Placement; pl != nil {
			need := pl.Needs.String()
			if len(pl.Selector) > 0 {
				need += " on " + pl.Selector.String()
			}
			p.line("    placement: needs %s; %d worker(s), %d fit now", need, pl.Workers, pl.FitNow)
			for _, r := range pl.Removed {
				p.line("      %d removed by %s: %s", r.Workers, r.Filter, r.Why)
			}
			if cl := pl.Closest; cl != nil {
				var lacks []string
				for _, l := range cl.Lacks {
					lacks = append(lacks, fmt.Sprintf("%s (needs %s, has %s)", l.What, l.Need, l.Have))
				}
				p.line("      closest: %s (%s) lacks %s", cl.Worker, cl.State, strings.Join(lacks, "; "))
			}
			writeAssigned(p, pl)
			writeGPUDevices(p, pl.GPUDevices)
		}
		if len(pe.Dependencies) > 0 {
			var deps []string
			for _, d := range pe.Dependencies {
				s := fmt.Sprintf("%s (%s", d.Task, d.State)
				if d.Worker != "" {
					s += " on " + d.Worker
				}
				deps = append(deps, s+")")
			}
			p.line("    waits for: %s", strings.Join(deps, ", "))
		}
	}
	if x.MoreGroups > 0 {
		p.line("  … and %d more group(s) of waiting tasks", x.MoreGroups)
	}
	if len(x.Help) > 0 {
		p.section("what would help")
		for _, h := range x.Help {
			p.line("  - %s", h.Message)
		}
	}
	if e := x.Estimate; e != nil {
		p.section("estimate")
		p.line("  %s (simulated %d cycle(s) and %d attempt end(s), horizon %s)", e.Note, e.Cycles, e.Ends,
			time.Duration(e.HorizonSeconds*float64(time.Second)))
	}
	return p.err
}

// writeAssigned prints the worker pinned tasks wait for, why a pin does
// not hold, and an affinity wait.
func writeAssigned(p *printer, pl *api.PlacementExplain) {
	if a := pl.Assigned; a != nil {
		by := "static-worker mode: the job's worker"
		switch a.By {
		case api.AssignedSticky:
			by = "stage stickiness: it ran parent " + a.Parent
		case api.AssignedPipeline:
			by = "fixed-pipeline mode: task type " + a.Type
		}
		state := string(a.State)
		switch {
		case a.Free:
			state += ", can take it now"
		case a.State == model.WorkerReady:
			state += ", busy"
		}
		p.line("      waits for worker %s (%s): %s; passes over %d other free worker(s)", a.Worker, by, state, a.OthersFree)
		if a.RunningTotal > 0 {
			var run []string
			for _, r := range a.Running {
				end := "no declared duration"
				if !r.ExpectedEnd.IsZero() {
					end = "expected to end " + r.ExpectedEnd.Format(time.RFC3339)
				}
				run = append(run, fmt.Sprintf("%s/%s (%s)", r.Job, r.Task, end))
			}
			if more := a.RunningTotal - len(a.Running); more > 0 {
				run = append(run, fmt.Sprintf("%d more", more))
			}
			p.line("      %s runs %d task(s) in %d slot(s): %s", a.Worker, a.RunningTotal, a.Slots, strings.Join(run, ", "))
		}
	}
	if pl.NotAssigned != "" {
		p.line("      %s", pl.NotAssigned)
	}
	if aw := pl.AffinityWait; aw != nil {
		p.line("      affinity wait: passes over %d free worker(s) until %s (affinityWait %s since it became ready at %s), waiting for one of the %d worker(s) that ran the job's tasks; then it takes a free worker",
			aw.PassedOver, aw.Until.Format(time.RFC3339), time.Duration(aw.WaitSeconds*float64(time.Second)), aw.ReadySince.Format(time.RFC3339), aw.AffinityWorkers)
	}
}

// writeGPUDevices prints, for tasks that wait for free GPU devices, the
// devices of the workers that would fit them and the tasks holding them.
func writeGPUDevices(p *printer, g *api.GPUDeviceWait) {
	if g == nil {
		return
	}
	p.line("      gpu devices: each task needs %d free on one worker; %d worker(s) that fit it have fewer:", g.Need, len(g.Workers)+g.More)
	for _, w := range g.Workers {
		s := "worker " + w.Worker + ": "
		if len(w.Held) > 0 {
			s += plural("device", len(w.Held)) + " " + deviceIndices(w.Held) + " held by " + deviceHolders(w.Held)
		} else {
			s += "no device held"
		}
		if len(w.Free) > 0 {
			s += "; " + plural("device", len(w.Free)) + " " + model.DeviceList(w.Free) + " free"
		}
		s += fmt.Sprintf("; needs %d free", g.Need)
		if !w.FreeBy.IsZero() {
			s += "; enough expected free at " + w.FreeBy.Format(time.RFC3339)
		}
		p.line("        %s", s)
	}
	if g.More > 0 {
		p.line("        … and %d more worker(s)", g.More)
	}
}

// deviceIndices lists the held devices' indices: "0,1".
func deviceIndices(hs []api.DeviceHolder) string {
	ds := make([]int, len(hs))
	for i, h := range hs {
		ds[i] = h.Device
	}
	return model.DeviceList(ds)
}

// deviceHolders names the tasks holding devices, each once, in device
// order: "train/t-0, train/t-1". When there are several and one holds
// more than one device, each task's devices follow it: "train/big (0,1),
// eval/t (2)".
func deviceHolders(hs []api.DeviceHolder) string {
	var names []string
	devices := map[string][]int{}
	several := false
	for _, h := range hs {
		n := h.Job + "/" + h.Task
		if _, ok := devices[n]; !ok {
			names = append(names, n)
		} else {
			several = true
		}
		devices[n] = append(devices[n], h.Device)
	}
	if several && len(names) > 1 {
		for i, n := range names {
			names[i] = n + " (" + model.DeviceList(devices[n]) + ")"
		}
	}
	return strings.Join(names, ", ")
}

func plural(word string, n int) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func taskCounts(c api.TaskCounts) string {
	var parts []string
	for _, k := range []struct {
		n    int
		name string
	}{{c.Running, "running"}, {c.Ready, "ready"}, {c.Blocked, "blocked"}, {c.Succeeded, "succeeded"}, {c.Failed, "failed"}, {c.Cancelled, "cancelled"}} {
		if k.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", k.n, k.name))
		}
	}
	return strings.Join(parts, ", ")
}

func aheadList(items []string) string {
	if len(items) == 0 {
		return ""
	}
	return "; ahead: " + strings.Join(items, ", ")
}

// printer writes lines and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}

func (p *printer) section(name string) { p.line("\n%s:", name) }
