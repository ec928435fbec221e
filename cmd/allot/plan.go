package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/scenario"
)

func newPlanCmd() *cobra.Command {
	var file, output string
	cmd := &cobra.Command{
		Use:   "plan -f SCENARIO",
		Short: "Run one scheduling cycle over a scenario and print the decisions",
		Long: `plan loads a scenario (workers, jobs, tasks already running, policy history),
runs one scheduling cycle at the scenario's time zero with the production engine,
and prints what it decided: tasks to start and where, tasks to stop and why, a
reason for every task still pending, and a summary per group.`,
		Example: `  allot plan -f examples/classload-entitlement.yaml
  allot plan -f examples/fifo.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkReportOutput(output); err != nil {
				return err
			}
			s, err := scenario.Load(file)
			if err != nil {
				return err
			}
			e, err := s.Engine()
			if err != nil {
				return err
			}
			d := e.Cycle(s.Start)
			switch output {
			case "json":
				return writeJSON(cmd.OutOrStdout(), d)
			case "yaml":
				return asYAML(cmd.OutOrStdout(), func(w io.Writer) error { return writeJSON(w, d) })
			}
			return writePlanTable(cmd.OutOrStdout(), d)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "scenario file (YAML or JSON)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

// checkReportOutput refuses an -o that plan and sim cannot print; "table"
// and "text" are the same, the human form.
func checkReportOutput(output string) error {
	switch output {
	case "table", "text", "json", "yaml":
		return nil
	}
	return fmt.Errorf("-o: unknown output %q (known: table, json, yaml)", output)
}

// asYAML writes as YAML what writeJSON writes as JSON, so that the keys
// and values of -o yaml are those of -o json.
func asYAML(w io.Writer, writeJSON func(io.Writer) error) error {
	var b bytes.Buffer
	if err := writeJSON(&b); err != nil {
		return err
	}
	var generic any
	if err := yaml.Unmarshal(b.Bytes(), &generic); err != nil {
		return err
	}
	out, err := yaml.Marshal(generic)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writePlanTable prints the per-group summary, then starts and stops counted
// per job and worker class, then pending reasons.
func writePlanTable(w io.Writer, d *engine.Decisions) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tGROUP\tRUNNING\tWAITING\tTARGET\tSTARTS\tSTOPS")
	for _, g := range d.Groups {
		target := "-"
		if g.Target >= 0 {
			target = fmt.Sprint(g.Target)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%d\n", g.Queue, g.Group, g.Running, g.Waiting, target, g.Starts, g.Stops)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d starts, %d stops\n", len(d.Starts), len(d.Stops))
	perJob := map[string]int{}
	for _, s := range d.Starts {
		perJob[s.Job]++
	}
	jobs := make([]string, 0, len(perJob))
	for j := range perJob {
		jobs = append(jobs, j)
	}
	sort.Strings(jobs)
	for _, j := range jobs {
		fmt.Fprintf(w, "  start %d task(s) of %s\n", perJob[j], j)
	}
	for _, s := range d.Stops {
		fmt.Fprintf(w, "  stop %s/%s on %s: %s (%s)\n", s.Job, s.Task, s.Worker, s.Reason.Code, s.Reason.Message)
	}
	if len(d.Pending) > 0 {
		fmt.Fprintln(w, "\npending:")
		for _, p := range d.Pending {
			fmt.Fprintf(w, "  %s: %d task(s): %s: %s\n", p.Job, p.Tasks, p.Reason.Code, p.Reason.Message)
		}
	}
	return nil
}
