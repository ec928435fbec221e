package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/spec"
)

// The commands of admission against endpoint capacity (seed 000;
// docs/endpoints.md): endpoints, throttling, dead letters.

func addEndpointCommands(root *cobra.Command) {
	f := &clientFlags{}
	for _, c := range []*cobra.Command{newEndpointsCmd(f), newThrottlingCmd(f), newDeadLettersCmd(f), newRedriveCmd(f)} {
		f.register(c)
		root.AddCommand(c)
	}
}

func newEndpointsCmd(f *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "endpoints",
		Short: "List endpoints with their capacity, load and scheduling metrics; `endpoints set|delete` changes one",
		Long: `endpoints lists every endpoint and production variant: its type, max and target
capacity (concurrent requests), the load of its admitted jobs, what is available,
utilisation, running (admitted) jobs, jobs waiting for admission (visible) and
received but not complete (buffered), and the counters of seed 000: throttles,
invocations (admission decisions) and errors (dead letters, failed queries).
The figures are those of the last scheduling cycle.`,
		Args: cobra.NoArgs,
		RunE: show(f, func(cmd *cobra.Command, _ []string, c *client.Client) (api.EndpointList, error) {
			return c.Endpoints(cmd.Context())
		}, endpointTable),
	}
	var file, variant string
	var instances int
	set := &cobra.Command{
		Use:   "set NAME (-f ENDPOINT.yaml | --instances N [--variant V])",
		Short: "Add or replace an endpoint at run time, or change its instance count",
		Long: `set replaces an endpoint with the endpoint block of a file (YAML or JSON, as in
the configuration file's endpoints list), or changes only the instance count of an
instance-backed endpoint (of one of its variants with --variant), as an autoscaler
would. The next scheduling cycle admits against the new capacity; the change is
stored and survives a restart.`,
		Example: `  allot endpoints set det -f det.yaml
  allot endpoints set det --instances 3
  allot endpoints set detector --variant candidate --instances 4`,
		Args: cobra.ExactArgs(1),
		RunE: show(f, func(cmd *cobra.Command, args []string, c *client.Client) (api.Endpoint, error) {
			var body any
			switch {
			case file != "" && cmd.Flags().Changed("instances"):
				return api.Endpoint{}, fmt.Errorf("-f and --instances: give one of them")
			case file != "":
				raw, err := os.ReadFile(file)
				if err != nil {
					return api.Endpoint{}, err
				}
				if err := yaml.Unmarshal(raw, &body); err != nil {
					return api.Endpoint{}, fmt.Errorf("%s: %w", file, err)
				}
			case cmd.Flags().Changed("instances"):
				l, err := c.Endpoints(cmd.Context())
				if err != nil {
					return api.Endpoint{}, err
				}
				if body, err = withInstances(l, args[0], variant, instances); err != nil {
					return api.Endpoint{}, err
				}
			default:
				return api.Endpoint{}, fmt.Errorf("give the endpoint with -f FILE, or --instances N")
			}
			return c.SetEndpoint(cmd.Context(), args[0], body)
		}, line(func(e api.Endpoint) string {
			if e.Stats == nil {
				return fmt.Sprintf("endpoint %s set", e.Name)
			}
			return fmt.Sprintf("endpoint %s set: max capacity %d, target %d", e.Name, e.Stats.MaxCapacity, e.Stats.TargetCapacity)
		})),
	}
	set.Flags().StringVarP(&file, "file", "f", "", "endpoint block (YAML or JSON)")
	set.Flags().IntVar(&instances, "instances", 0, "change only the instance count")
	set.Flags().StringVar(&variant, "variant", "", "with --instances: the variant to change")
	cmd.AddCommand(set, &cobra.Command{
		Use:   "delete NAME",
		Short: "Remove an endpoint: new jobs naming it are refused, its jobs run one at a time until they end",
		Args:  cobra.ExactArgs(1),
		RunE: f.run(func(cmd *cobra.Command, args []string, c *client.Client) error {
			if err := c.RemoveEndpoint(cmd.Context(), args[0]); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "endpoint %s removed\n", args[0])
			return err
		}),
	})
	return cmd
}

// withInstances returns the configured endpoint name with the instance
// count of the endpoint (or of its variant) changed.
func withInstances(l api.EndpointList, name, variant string, n int) (spec.Endpoint, error) {
	for _, e := range l.Endpoints {
		if e.Name != name {
			continue
		}
		if e.Config == nil {
			return spec.Endpoint{}, fmt.Errorf("endpoint %q is not configured (it was removed); set it with -f", name)
		}
		out := *e.Config
		if len(out.Variants) == 0 {
			if variant != "" {
				return spec.Endpoint{}, fmt.Errorf("--variant: endpoint %q has no variants", name)
			}
			out.Instances = n
			return out, nil
		}
		var names []string
		out.Variants = append([]spec.Variant(nil), out.Variants...)
		for i := range out.Variants {
			names = append(names, out.Variants[i].Name)
			if out.Variants[i].Name == variant {
				out.Variants[i].Instances = n
				return out, nil
			}
		}
		return spec.Endpoint{}, fmt.Errorf("--variant: endpoint %q has variants %s; name one", name, strings.Join(names, ", "))
	}
	return spec.Endpoint{}, fmt.Errorf("no endpoint %q", name)
}

// endpointTable prints one line per endpoint, and one per variant of an
// endpoint that has several.
func endpointTable(w io.Writer, l api.EndpointList) error {
	fmt.Fprintln(w, throttlingLine(l.Throttling))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ENDPOINT\tVARIANT\tTYPE\tMAX\tTARGET\tLOAD\tAVAILABLE\tUTIL%\tRUNNING\tVISIBLE\tBUFFERED\tTHROTTLES\tINVOCATIONS\tERRORS")
	for _, e := range l.Endpoints {
		typ := "-"
		if e.Config != nil {
			typ = e.Config.Type
		} else if e.Stats != nil {
			typ = "(removed)"
		}
		if e.Stats == nil {
			fmt.Fprintf(tw, "%s\t\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\n", e.Name, typ)
			continue
		}
		s := e.Stats
		if len(s.Variants) == 1 && s.Variants[0].Variant == "" {
			fmt.Fprintf(tw, "%s\t\t%s\t%s\n", e.Name, typ, variantCells(s.Variants[0]))
			continue
		}
		var sum api.VariantStats
		for _, v := range s.Variants {
			sum.MaxCapacity += v.MaxCapacity
			sum.TargetCapacity += v.TargetCapacity
			sum.Load += v.Load
			sum.Available += v.Available
			sum.RunningJobs += v.RunningJobs
			sum.Visible += v.Visible
			sum.Buffered += v.Buffered
			sum.Throttles += v.Throttles
			sum.Invocations += v.Invocations
		}
		sum.Utilization, sum.Errors = s.Utilization, s.Errors
		fmt.Fprintf(tw, "%s\t*\t%s\t%s\n", e.Name, typ, variantCells(sum))
		for _, v := range s.Variants {
			name := v.Variant
			if !v.Configured {
				name += " (removed)"
			}
			fmt.Fprintf(tw, "\t%s\t\t%s\n", name, variantCells(v))
		}
	}
	return tw.Flush()
}

func variantCells(v api.VariantStats) string {
	return fmt.Sprintf("%d\t%d\t%d\t%d\t%.0f\t%d\t%d\t%d\t%d\t%d\t%d", v.MaxCapacity, v.TargetCapacity, v.Load, v.Available,
		v.Utilization, v.RunningJobs, v.Visible, v.Buffered, v.Throttles, v.Invocations, v.Errors)
}

func throttlingLine(t spec.Throttling) string {
	on := "off"
	if t.ThrottlingEnabled == nil || *t.ThrottlingEnabled {
		on = "on"
	}
	pct := 1.0
	if t.CapacityTargetPercentage != nil {
		pct = *t.CapacityTargetPercentage
	}
	wait := "off"
	if t.StarvationWait != nil && *t.StarvationWait > 0 {
		wait = time.Duration(*t.StarvationWait).String()
	}
	return fmt.Sprintf("throttling %s, capacity target %g (%g%% of max), instance concurrency %d, http concurrency %d, tile workers %d, starvation wait %s",
		on, pct, pct*100, t.DefaultInstanceConcurrency, t.DefaultHTTPEndpointConcurrency, t.TileWorkersPerInstance, wait)
}

func newThrottlingCmd(f *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "throttling",
		Short: "Show the throttling settings; `throttling set` changes them at run time",
		Args:  cobra.NoArgs,
		RunE: show(f, func(cmd *cobra.Command, _ []string, c *client.Client) (spec.Throttling, error) {
			return c.Throttling(cmd.Context())
		}, line(throttlingLine)),
	}
	var enabled bool
	var pct float64
	var instConc, httpConc, tileWorkers, perCycle int
	var wait time.Duration
	set := &cobra.Command{
		Use:   "set [--enabled=BOOL] [--target-percentage P] [...]",
		Short: "Change throttling settings at run time; the others keep their values",
		Example: `  allot throttling set --target-percentage 0.8
  allot throttling set --enabled=false`,
		Args: cobra.NoArgs,
		RunE: show(f, func(cmd *cobra.Command, _ []string, c *client.Client) (spec.Throttling, error) {
			t, err := c.Throttling(cmd.Context())
			if err != nil {
				return t, err
			}
			fl := cmd.Flags()
			if fl.Changed("enabled") {
				t.ThrottlingEnabled = &enabled
			}
			if fl.Changed("target-percentage") {
				t.CapacityTargetPercentage = &pct
			}
			if fl.Changed("default-instance-concurrency") {
				t.DefaultInstanceConcurrency = instConc
			}
			if fl.Changed("default-http-endpoint-concurrency") {
				t.DefaultHTTPEndpointConcurrency = httpConc
			}
			if fl.Changed("tile-workers-per-instance") {
				t.TileWorkersPerInstance = tileWorkers
			}
			if fl.Changed("starvation-wait") {
				d := spec.Duration(wait)
				t.StarvationWait = &d
			}
			if fl.Changed("admissions-per-cycle") {
				t.AdmissionsPerCycle = perCycle
			}
			return c.SetThrottling(cmd.Context(), t)
		}, line(throttlingLine)),
	}
	fl := set.Flags()
	fl.BoolVar(&enabled, "enabled", true, "the capacity check (SCHEDULER_THROTTLING_ENABLED)")
	fl.Float64Var(&pct, "target-percentage", 1, "capacity target percentage, 0.0-1.5 (CAPACITY_TARGET_PERCENTAGE)")
	fl.IntVar(&instConc, "default-instance-concurrency", admit.DefaultInstanceConcurrency, "requests per instance when the endpoint does not say")
	fl.IntVar(&httpConc, "default-http-endpoint-concurrency", admit.DefaultHTTPEndpointConcurrency, "capacity of an http endpoint")
	fl.IntVar(&tileWorkers, "tile-workers-per-instance", admit.DefaultTileWorkersPerInstance, "multiplies a job's regions into its load")
	fl.DurationVar(&wait, "starvation-wait", admit.DefaultStarvationWait, "throttled this long, the oldest job reserves its variant (0: off)")
	fl.IntVar(&perCycle, "admissions-per-cycle", 0, "jobs admitted per cycle at most (0: no cap)")
	cmd.AddCommand(set)
	return cmd
}

func newDeadLettersCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "deadletters",
		Short: "List jobs refused at submission because an input could not be read",
		Args:  cobra.NoArgs,
		RunE: show(f, func(cmd *cobra.Command, _ []string, c *client.Client) (api.DeadLetterList, error) {
			return c.DeadLetters(cmd.Context())
		}, deadLetterTable),
	}
}

func deadLetterTable(w io.Writer, l api.DeadLetterList) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tQUEUE\tENDPOINT\tSINCE\tREASON")
	for _, d := range l.DeadLetters {
		ep := d.Endpoint
		if ep == "" {
			ep = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Job, d.Queue, ep, d.At.Format(time.RFC3339), d.Reason.Message)
	}
	return tw.Flush()
}

func newRedriveCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "redrive JOB",
		Short: "Check a dead-lettered job's inputs again and submit it",
		Args:  cobra.ExactArgs(1),
		RunE: f.run(func(cmd *cobra.Command, args []string, c *client.Client) error {
			r, err := c.Redrive(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if !r.Redriven && f.output == "table" {
				why := ""
				if r.Job.Admission != nil && r.Job.Admission.Reason != nil {
					why = ": " + r.Job.Admission.Reason.Message
				}
				return fmt.Errorf("job %s is still dead-lettered%s", r.Job.ID, why)
			}
			return f.print(cmd.OutOrStdout(), r, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "job %s submitted again\n", r.Job.ID)
				return err
			})
		}),
	}
}
