package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/scenario"
	"github.com/allot-sched/allot/internal/sim"
	"github.com/allot-sched/allot/internal/sim/report"
	"github.com/allot-sched/allot/internal/sim/trace"
	"github.com/allot-sched/allot/internal/spec"
)

func newSimCmd() *cobra.Command {
	var (
		file, swfFile, output, plot, groupBy, policyKind string
		density, densityPlot                             string
		horizon, sample, cycleEvery, densityBucket       time.Duration
		workers, limit                                   int
		swf                                              trace.SWFOptions
		tracePriority                                    int
		traceSLAGroup                                    string
		azure, azureEndpoints, azureAssign               string
		throttling                                       bool
	)
	cmd := &cobra.Command{
		Use:   "sim (-f SCENARIO | --trace FILE.swf[.gz] | --azure FILE.csv)",
		Short: "Simulate a scenario or a workload trace over virtual time with the production engine",
		Long: `sim runs the scheduling engine on a virtual clock: jobs arrive at their submitAt
(or trace submit time), tasks run for their duration, and every scheduling event
triggers a cycle of the same engine the server runs. It prints per-group
utilisation, wait-time percentiles, share of slots over time, Jain's fairness index,
the distance from the weighted max-min fair allocation (mean and p95 share of the
pool) and the makespan; --plot draws slots per group and both fairness measures
over time as SVG.

With --trace it replays a Standard Workload Format log: each job becomes a job of
one task per processor, SWF fields map to share, requestor and queue by flags.
With --azure it replays an Azure LLM inference trace: each request becomes a job
of one task whose run time follows from its tokens, sent to the scenario's
endpoints in turn (--azure-endpoints), with a load of 1 request; the endpoint
table shows peak concurrency against target and the admission waits. The queues,
policies, endpoints and workers come from -f when given; otherwise one queue with
--policy on --workers one-slot workers.`,
		Example: `  allot sim -f examples/fairshare-weights.yaml --plot slots.svg
  allot sim -f examples/placement-elastic.yaml --density density.json --density-plot density.svg
  allot sim --trace NASA-iPSC-1993-3.1-cln.swf.gz --workers 128
  allot sim --trace LCG-2005-1.swf.gz --policy fairshare --share-field user -o json
  allot sim -f examples/endpoints-azure.yaml --azure AzureLLMInferenceTrace_conv.csv --throttling=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" && swfFile == "" && azure == "" {
				return fmt.Errorf("give a scenario (-f) or a trace (--trace, --azure)")
			}
			if err := checkReportOutput(output); err != nil {
				return err
			}
			in := sim.Input{Start: scenario.DefaultStart}
			if file != "" {
				s, err := scenario.Load(file)
				if err != nil {
					return err
				}
				in = sim.Input{Config: s.Config, Workers: s.Workers, Jobs: s.Jobs, History: s.History, Running: s.Running, Start: s.Start,
					Inputs: s.Inputs}
			}
			if azure != "" {
				if err := addAzure(cmd, &in, file != "", azure, azureEndpoints, azureAssign, limit, workers, policyKind); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("throttling") {
				in.Config.Admission.Enabled = throttling
			}
			if swfFile != "" {
				if file == "" && azure == "" {
					in.Config = engine.Config{Queues: []engine.QueueConfig{{Name: "default", Policy: policy.Config{Kind: policyKind}}}}
					swf.Queue = "default"
				}
				swf.Start = in.Start
				jobs, info, err := trace.LoadSWFFile(swfFile, swf)
				if err != nil {
					return err
				}
				for i := range jobs {
					// SWF has no priority or SLA group; the priority and sla
					// policies leave jobs without them waiting.
					jobs[i].Priority, jobs[i].SLAGroup = tracePriority, traceSLAGroup
				}
				in.Jobs = append(in.Jobs, jobs...)
				if file == "" && azure == "" {
					n := workers
					if n == 0 {
						n = max(info.MaxProcs, info.MaxNodes, 1)
					}
					for i := range n {
						in.Workers = append(in.Workers, model.Worker{Name: fmt.Sprintf("node-%04d", i), Slots: 1, CostPerHour: spec.DefaultCostPerHour})
					}
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "trace %s: %d jobs, %d tasks (%d records skipped), %d workers\n",
					swfFile, info.Jobs, info.Tasks, info.Skipped, len(in.Workers))
			}
			opt := sim.Options{Horizon: horizon, SampleEvery: sample, GroupBy: groupBy, CycleEvery: cycleEvery}
			if density != "" || densityPlot != "" {
				if densityBucket <= 0 {
					return fmt.Errorf("--density-bucket: must be above 0 (got %s)", densityBucket)
				}
				opt.DensityBucket = densityBucket
			}
			if isTerminal(cmd.ErrOrStderr()) {
				opt.Progress = func(done, total int) {
					fmt.Fprintf(cmd.ErrOrStderr(), "\rsimulating: %d/%d jobs ended", done, total)
					if done == total {
						fmt.Fprintln(cmd.ErrOrStderr())
					}
				}
			}
			res, err := sim.Run(in, opt)
			if err != nil {
				return err
			}
			if plot != "" {
				if err := writeFile(plot, func(w io.Writer) error { return report.WriteSVG(w, res) }); err != nil {
					return err
				}
			}
			if density != "" {
				if err := writeFile(density, func(w io.Writer) error { return report.WriteDensityJSON(w, res.Density) }); err != nil {
					return err
				}
			}
			if densityPlot != "" {
				title := "Task and worker density"
				if file != "" {
					title += " — " + file
				}
				if err := writeFile(densityPlot, func(w io.Writer) error { return report.WriteDensitySVG(w, res.Density, title) }); err != nil {
					return err
				}
			}
			switch output {
			case "json":
				return report.WriteJSON(cmd.OutOrStdout(), res)
			case "yaml":
				return asYAML(cmd.OutOrStdout(), func(w io.Writer) error { return report.WriteJSON(w, res) })
			}
			return report.WriteText(cmd.OutOrStdout(), res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "scenario file (YAML or JSON)")
	f.StringVar(&swfFile, "trace", "", "Standard Workload Format trace to replay (.swf or .swf.gz)")
	f.StringVarP(&output, "output", "o", "text", "output format: text, json or yaml")
	f.StringVar(&plot, "plot", "", "write slots per group over time to this SVG file")
	f.StringVar(&density, "density", "", "write the task/worker density series (tasks submitted and started, active and enabled workers per bucket) to this JSON file")
	f.StringVar(&densityPlot, "density-plot", "", "draw the task/worker density series to this SVG file")
	f.DurationVar(&densityBucket, "density-bucket", 60*time.Second, "bucket size of the density series")
	f.StringVar(&groupBy, "group-by", "", "key of per-group metrics: group (the policy's), share, requestor or queue")
	f.DurationVar(&horizon, "horizon", 0, "stop after this much virtual time (0: until every job ended)")
	f.DurationVar(&sample, "sample", 0, "sampling interval of the time series (0: automatic)")
	f.DurationVar(&cycleEvery, "cycle-every", 0, "also run a cycle on this fixed period, as a server's tick does (0: only on events)")
	f.IntVar(&workers, "workers", 0, "with --trace and no -f: one-slot workers to simulate (0: the trace's MaxProcs)")
	f.StringVar(&policyKind, "policy", "fifo", "with --trace and no -f: the queue's policy kind")
	f.StringVar(&swf.ShareField, "share-field", "user", "SWF field that becomes the job's share: user, group, executable, queue, partition or none")
	f.StringVar(&swf.ClassField, "class-field", "none", "SWF field that becomes the job's requestor (classload classes)")
	f.StringVar(&swf.QueueField, "queue-field", "none", "SWF field that becomes the job's queue (the scenario must define those queues)")
	f.IntVar(&limit, "limit", 0, "replay only the first N jobs of the trace")
	f.IntVar(&tracePriority, "trace-priority", 0, "with --trace: the priority of every trace job (the priority policy suspends level 0)")
	f.StringVar(&traceSLAGroup, "trace-sla-group", "", "with --trace: the SLA group of every trace job (the sla policy runs only jobs of its groups)")
	f.StringVar(&azure, "azure", "", "Azure LLM inference trace to replay (CSV: TIMESTAMP, ContextTokens, GeneratedTokens)")
	f.StringVar(&azureEndpoints, "azure-endpoints", "", "with --azure: comma-separated endpoints the requests go to (default: every endpoint of the scenario)")
	f.StringVar(&azureAssign, "azure-assign", trace.AssignRoundRobin, "with --azure: how requests map to endpoints: round-robin or hash")
	f.BoolVar(&throttling, "throttling", true, "override the scenario's throttling.throttlingEnabled")
	cmd.PreRun = func(*cobra.Command, []string) { swf.Limit = limit }
	return cmd
}

// addAzure loads an Azure LLM trace into in. Requests go to the named
// endpoints, or every endpoint the scenario defines; without a scenario, the
// queue is one --policy queue on --workers one-slot workers (default 64).
func addAzure(cmd *cobra.Command, in *sim.Input, haveScenario bool, path, endpoints, assign string, limit, workers int, policyKind string) error {
	opt := trace.AzureOptions{Start: in.Start, Assign: assign, Limit: limit}
	if !haveScenario {
		in.Config = engine.Config{Queues: []engine.QueueConfig{{Name: "default", Policy: policy.Config{Kind: policyKind}}}}
		n := workers
		if n == 0 {
			n = 64
		}
		for i := range n {
			in.Workers = append(in.Workers, model.Worker{Name: fmt.Sprintf("node-%04d", i), Slots: 1, CostPerHour: spec.DefaultCostPerHour})
		}
	}
	opt.Queue = in.Config.Queues[0].Name
	if endpoints != "" {
		opt.Endpoints = strings.Split(endpoints, ",")
	} else {
		for _, ep := range in.Config.Admission.Endpoints {
			opt.Endpoints = append(opt.Endpoints, ep.Name)
		}
	}
	jobs, info, err := trace.LoadAzureLLMFile(path, opt)
	if err != nil {
		return err
	}
	in.Jobs = append(in.Jobs, jobs...)
	fmt.Fprintf(cmd.ErrOrStderr(), "azure %s: %d requests over %s to endpoints %v, %.0f s of work\n",
		path, info.Requests, info.Last.Sub(info.First).Round(time.Second), opt.Endpoints, info.WorkSeconds)
	return nil
}

// writeFile creates path and fills it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
