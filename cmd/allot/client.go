package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
)

// clientFlags are the flags every client command shares.
type clientFlags struct {
	server string
	token  tokenFlag
	ca     string
	output string
}

func (f *clientFlags) register(cmd *cobra.Command) {
	server := os.Getenv("ALLOT_SERVER")
	if server == "" {
		server = "http://" + defaultListen
	}
	cmd.PersistentFlags().StringVar(&f.server, "server", server,
		"server URL, or the URLs of a cluster's replicas separated by commas: calls go to the leader (env ALLOT_SERVER)")
	// The environment is read when the flag is not given, not as the flag's
	// default: a default is printed by --help, and this one is a secret.
	cmd.PersistentFlags().Var(&f.token, "token", "bearer token (env ALLOT_TOKEN)")
	cmd.PersistentFlags().StringVar(&f.ca, "ca", os.Getenv("ALLOT_CA"), "PEM file of the CA that signed an https server's certificate (env ALLOT_CA)")
	cmd.PersistentFlags().StringVarP(&f.output, "output", "o", "table", "output format: table, json or yaml")
}

// checkOutput refuses an -o the commands cannot print.
func (f *clientFlags) checkOutput() error {
	switch f.output {
	case "table", "json", "yaml":
		return nil
	}
	return fmt.Errorf("-o: unknown output %q (known: table, json, yaml)", f.output)
}

func (f *clientFlags) client() (*client.Client, error) {
	if err := f.checkOutput(); err != nil {
		return nil, err
	}
	opts := []client.Option{client.WithToken(f.token.value())}
	if f.ca != "" {
		pool, err := client.LoadCA(f.ca)
		if err != nil {
			return nil, fmt.Errorf("--ca: %w", err)
		}
		opts = append(opts, client.WithRootCAs(pool))
	}
	return client.New(f.server, opts...)
}

// print writes v as JSON or YAML, or calls table for the table form.
func (f *clientFlags) print(w io.Writer, v any, table func(io.Writer) error) error {
	switch f.output {
	case "json":
		return writeJSON(w, v)
	case "yaml":
		// Through JSON, so YAML keys are the API's field names.
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		var generic any
		if err := yaml.Unmarshal(b, &generic); err != nil {
			return err
		}
		out, err := yaml.Marshal(generic)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	return table(w)
}

// run is the RunE of a client command: it builds the client, then runs fn.
func (f *clientFlags) run(fn func(cmd *cobra.Command, args []string, c *client.Client) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := f.client()
		if err != nil {
			return err
		}
		return fn(cmd, args, c)
	}
}

// show is the RunE of a command that makes one call and prints its answer,
// with table for -o table: most client commands.
func show[T any](f *clientFlags, call func(cmd *cobra.Command, args []string, c *client.Client) (T, error), table func(io.Writer, T) error) func(*cobra.Command, []string) error {
	return f.run(func(cmd *cobra.Command, args []string, c *client.Client) error {
		v, err := call(cmd, args, c)
		if err != nil {
			return err
		}
		return f.print(cmd.OutOrStdout(), v, func(w io.Writer) error { return table(w, v) })
	})
}

// line is a table printer that writes one line.
func line[T any](text func(T) string) func(io.Writer, T) error {
	return func(w io.Writer, v T) error {
		_, err := fmt.Fprintln(w, text(v))
		return err
	}
}

func addClientCommands(root *cobra.Command) {
	f := &clientFlags{}
	cmds := []*cobra.Command{newSubmitCmd(f), newGetCmd(f), newListCmd(f), newCancelCmd(f), newPriorityCmd(f), newLogsCmd(f),
		newEventsCmd(f), newWorkersCmd(f), newQueuesCmd(f), newTokensCmd(f)}
	cmds = append(cmds, newHoldCmd(f), newReleaseCmd(f), newUpdateCmd(f))
	for _, c := range cmds {
		f.register(c)
		root.AddCommand(c)
	}
}

func newSubmitCmd(f *clientFlags) *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:   "submit FILE|DIR",
		Short: "Submit a job from a YAML or JSON file (- reads standard input), or many at once",
		Long: `Submit a job from a YAML or JSON file (- reads standard input).

A file of several YAML documents (separated by ---), an NDJSON file (.ndjson or
.jsonl, one JSON job a line) or a directory (every *.yaml, *.yml, *.json,
*.ndjson and *.jsonl file in it, in name order) submits every job it holds in
bulk calls: each job is created or refused on its own, one line per job is
printed, and the command fails if any was not created.`,
		Example: `  allot submit examples/jobs/pipeline.yaml --wait
  cat job.json | allot submit -
  allot submit jobs.ndjson
  allot submit jobs/`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			if info, err := os.Stat(args[0]); args[0] != "-" && err == nil && info.IsDir() {
				docs, err := readJobDir(args[0])
				if err != nil {
					return err
				}
				return bulkSubmit(cmd, f, c, docs, wait)
			}
			var body []byte
			if args[0] == "-" {
				body, err = io.ReadAll(cmd.InOrStdin())
			} else {
				body, err = os.ReadFile(args[0])
			}
			if err != nil {
				return err
			}
			if docs, err := splitJobFile(args[0], body); err == nil && (len(docs) > 1 || isNDJSON(args[0])) {
				return bulkSubmit(cmd, f, c, docs, wait)
			}
			ct := "application/yaml"
			if strings.EqualFold(filepath.Ext(args[0]), ".json") {
				ct = "application/json"
			}
			job, err := c.SubmitJob(cmd.Context(), body, ct)
			if err != nil {
				return err
			}
			if job.State == api.AdmissionDeadLettered {
				// Stored, but it takes no capacity until its inputs are
				// fixed and it is redriven: not a success for a script.
				if err := f.print(cmd.OutOrStdout(), job, func(w io.Writer) error { return jobTable(w, job) }); err != nil {
					return err
				}
				return fmt.Errorf("job %s is dead-lettered; fix its inputs, then run `allot redrive %s`", job.ID, job.ID)
			}
			if !wait {
				return f.print(cmd.OutOrStdout(), job, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "submitted %s to queue %s (%d tasks)\n", job.ID, job.Queue, total(job.Counts))
					return err
				})
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "submitted %s\n", job.ID)
			final, err := waitForJob(cmd.Context(), c, job.ID, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if err := f.print(cmd.OutOrStdout(), final, func(w io.Writer) error { return jobTable(w, final) }); err != nil {
				return err
			}
			if final.State != "succeeded" {
				return fmt.Errorf("job %s %s", final.ID, final.State)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the job ends, showing progress; exit non-zero unless it succeeded")
	return cmd
}

// bulkSubmit is `allot submit` of many jobs; --wait follows one job only.
func bulkSubmit(cmd *cobra.Command, f *clientFlags, c *client.Client, docs []jobDocument, wait bool) error {
	if wait {
		return fmt.Errorf("--wait follows one job; %d jobs were given", len(docs))
	}
	return runBulkSubmit(cmd.Context(), f, c, cmd.OutOrStdout(), docs)
}

func total(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

func terminal(state string) bool {
	return state == "succeeded" || state == "failed" || state == "cancelled"
}

// waitForJob polls a job until it ends, drawing a progress bar on w.
func waitForJob(ctx context.Context, c *client.Client, id string, w io.Writer) (api.Job, error) {
	tty := isTerminal(w)
	last := ""
	for {
		job, err := c.Job(ctx, id)
		if err != nil && !client.Retryable(err) {
			return api.Job{}, err
		}
		if err == nil {
			line := progressLine(job)
			switch {
			case tty:
				fmt.Fprintf(w, "\r%s", line)
			case line != last:
				fmt.Fprintln(w, line)
			}
			last = line
			if terminal(job.State) {
				if tty {
					fmt.Fprintln(w)
				}
				return job, nil
			}
		}
		select {
		case <-ctx.Done():
			return api.Job{}, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func progressLine(j api.Job) string {
	n := total(j.Counts)
	done := j.Counts["succeeded"] + j.Counts["failed"] + j.Counts["cancelled"]
	const width = 30
	filled := 0
	if n > 0 {
		filled = done * width / n
	}
	bar := strings.Repeat("#", filled) + strings.Repeat(".", width-filled)
	return fmt.Sprintf("[%s] %d/%d done · %d running · %d failed · %s", bar, done, n, j.Counts["running"], j.Counts["failed"], j.State)
}

func newGetCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "get JOB",
		Short: "Show a job with its tasks, and why each pending task waits",
		Args:  cobra.ExactArgs(1),
		RunE: show(f, func(cmd *cobra.Command, args []string, c *client.Client) (api.Job, error) {
			return c.Job(cmd.Context(), args[0])
		}, jobTable),
	}
}

func jobTable(w io.Writer, j api.Job) error {
	fmt.Fprintf(w, "job %s  queue %s  state %s", j.ID, j.Queue, j.State)
	if j.Share != "" {
		fmt.Fprintf(w, "  share %s", j.Share)
	}
	if j.Submitter != "" {
		fmt.Fprintf(w, "  submitter %s", j.Submitter)
	}
	fmt.Fprintf(w, "  submitted %s\n", j.Submitted.Format(time.RFC3339))
	if j.HeldBy != "" {
		fmt.Fprintf(w, "held by %s: starts nothing until released (allot release %s)\n", j.HeldBy, j.ID)
	}
	if a := j.Admission; a != nil {
		fmt.Fprintf(w, "endpoint %s", a.Endpoint)
		if a.Variant != "" {
			fmt.Fprintf(w, "  variant %s", a.Variant)
		}
		if a.LoadSource != "" {
			fmt.Fprintf(w, "  load %d (%s)", a.Load, a.LoadSource)
		}
		fmt.Fprintf(w, "  admission %s", a.State)
		if a.Reason != nil {
			fmt.Fprintf(w, ": %s", a.Reason.Message)
		}
		fmt.Fprintln(w)
	}
	if len(j.Tasks) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTATE\tATTEMPT\tWORKER\tEXIT\tCPU\tPEAK MEM\tREASON")
	for _, t := range j.Tasks {
		exit := ""
		if t.ExitCode != nil {
			exit = fmt.Sprint(*t.ExitCode)
		}
		reason := ""
		if t.Reason != nil {
			reason = t.Reason.Code + ": " + t.Reason.Message
		}
		cpu, peak := "", ""
		if t.CPUSeconds > 0 {
			cpu = fmt.Sprintf("%.2fs", t.CPUSeconds)
		}
		if t.PeakMemory > 0 {
			peak = fmt.Sprintf("%.1fMi", float64(t.PeakMemory)/(1<<20))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.State, t.Attempt, t.Worker, exit, cpu, peak, reason)
	}
	return tw.Flush()
}

func newListCmd(f *clientFlags) *cobra.Command {
	var (
		filter client.JobFilter
		all    bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs, newest first",
		Long: `List jobs, newest first (--sort submitted: oldest first), at most --limit of them.
When there are more, a line on standard error says how many and how to see them:
a larger --limit, --all for every job, or --after with the last page's cursor.`,
		Example: `  allot list --state running,pending
  allot list --queue batch --share analytics
  allot list --all --sort submitted`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			if filter.Limit <= 0 && !all {
				return fmt.Errorf("--limit %d: give a positive number, or --all for every job", filter.Limit)
			}
			list, err := listJobs(cmd.Context(), c, filter, all)
			if err != nil {
				return err
			}
			if err := f.print(cmd.OutOrStdout(), list, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "JOB\tQUEUE\tSHARE\tPRIORITY\tSTATE\tSUBMITTER\tSUBMITTED")
				for _, j := range list.Jobs {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", j.ID, j.Queue, j.Share, j.Priority, j.State, j.Submitter,
						j.Submitted.Format(time.RFC3339))
				}
				return tw.Flush()
			}); err != nil {
				return err
			}
			if list.Next != 0 {
				return moreJobsHint(cmd, c, filter, list.Next)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&filter.State, "state", "", "only jobs in these states (comma-separated: pending, running, succeeded, failed, cancelled, dead_lettered)")
	cmd.Flags().StringVar(&filter.Queue, "queue", "", "only jobs of this queue")
	cmd.Flags().StringVar(&filter.Share, "share", "", "only jobs of this share")
	cmd.Flags().StringVar(&filter.Sort, "sort", "-submitted", "order: -submitted (newest first) or submitted (oldest first)")
	cmd.Flags().IntVar(&filter.Limit, "limit", 100, "at most this many jobs (at most 1000; --all for every job)")
	cmd.Flags().BoolVar(&all, "all", false, "every job that matches, however many (ignores --limit)")
	cmd.Flags().Int64Var(&filter.After, "after", 0, "page: the jobs after this cursor, in --sort order (the number the previous page's hint gives)")
	return cmd
}

// maxListPage is the largest page GET /v1/jobs answers.
const maxListPage = 1000

// listJobs reads filter.Limit jobs (every job with all) in pages the API
// accepts, so that a --limit above the API's page size is honoured rather
// than cut to a page. Next is the cursor after the last job read, 0 when
// none is left.
func listJobs(ctx context.Context, c *client.Client, filter client.JobFilter, all bool) (api.JobList, error) {
	want := filter.Limit
	var list api.JobList
	for {
		page := filter
		page.Limit = maxListPage
		if !all {
			page.Limit = min(want-len(list.Jobs), maxListPage)
		}
		more, err := c.Jobs(ctx, page)
		if err != nil {
			return api.JobList{}, err
		}
		list.Jobs, list.Next = append(list.Jobs, more.Jobs...), more.Next
		if list.Next == 0 || (!all && len(list.Jobs) >= want) {
			return list, nil
		}
		filter.After = list.Next
	}
}

// moreJobsHint tells on standard error that the list was cut, how many
// jobs were left out and how to see them: a list that silently stops at
// its limit reads as if it were all there is. It counts at most one more
// page, so a long history costs one request, not all of them.
func moreJobsHint(cmd *cobra.Command, c *client.Client, filter client.JobFilter, next int64) error {
	rest := filter
	rest.After, rest.Limit = next, maxListPage
	more, err := c.Jobs(cmd.Context(), rest)
	if err != nil {
		return err
	}
	n := fmt.Sprint(len(more.Jobs))
	if more.Next != 0 {
		n = fmt.Sprintf("over %d", len(more.Jobs))
	}
	if len(more.Jobs) == 0 {
		return nil // the page ended exactly at the last job
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s more: --limit / --all (next page: --after %d)\n", n, next)
	return nil
}

func newCancelCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel JOB",
		Short: "Cancel a job: waiting tasks end, running tasks are stopped",
		Args:  cobra.ExactArgs(1),
		RunE: show(f, func(cmd *cobra.Command, args []string, c *client.Client) (api.Job, error) {
			return c.Cancel(cmd.Context(), args[0])
		}, line(func(j api.Job) string { return "cancelled " + j.ID })),
	}
}

func newPriorityCmd(f *clientFlags) *cobra.Command {
	var urgent bool
	cmd := &cobra.Command{
		Use:   "priority JOB LEVEL",
		Short: "Change a job's priority at run time (--urgent for urgent priority)",
		Example: `  allot priority nightly 7
  allot priority hotfix 9 --urgent`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			level, err := strconv.Atoi(args[1])
			if err != nil {
				return fmt.Errorf("LEVEL: %q is not an integer", args[1])
			}
			job, err := c.SetPriority(cmd.Context(), args[0], level, urgent)
			if err != nil {
				return err
			}
			return f.print(cmd.OutOrStdout(), job, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "job %s now has priority %d (urgent: %v)\n", job.ID, job.Priority, job.Urgent)
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&urgent, "urgent", false, "urgent priority (the priority policy may preempt for it)")
	return cmd
}

func newLogsCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "logs JOB [TASK]",
		Short: "Print the output tail of a job's tasks (of their last attempt)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			logs, err := c.Logs(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if len(args) == 2 {
				var keep []api.TaskLog
				for _, t := range logs.Tasks {
					if t.Task == args[1] {
						keep = append(keep, t)
					}
				}
				if len(keep) == 0 {
					return fmt.Errorf("job %s has no output for task %q", args[0], args[1])
				}
				logs.Tasks = keep
			}
			return f.print(cmd.OutOrStdout(), logs, func(w io.Writer) error {
				for _, t := range logs.Tasks {
					fmt.Fprintf(w, "==> %s (attempt %d) <==\n%s", t.Task, t.Attempt, t.Output)
					if t.Output != "" && !strings.HasSuffix(t.Output, "\n") {
						fmt.Fprintln(w)
					}
				}
				return nil
			})
		},
	}
}

func newEventsCmd(f *clientFlags) *cobra.Command {
	var follow bool
	var job string
	var after int64
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Print the event log; --follow streams new events as they happen",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			show := func(e api.Event) error {
				if f.output == "json" {
					b, _ := json.Marshal(e)
					_, err := fmt.Fprintln(w, string(b))
					return err
				}
				return eventLine(w, e)
			}
			if follow {
				return c.FollowEvents(cmd.Context(), after, job, show)
			}
			evs, err := c.Events(cmd.Context(), after, job, 1000)
			if err != nil {
				return err
			}
			for _, e := range evs {
				if err := show(e); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep streaming new events")
	cmd.Flags().StringVar(&job, "job", "", "only events of this job")
	cmd.Flags().Int64Var(&after, "after", 0, "only events after this id")
	return cmd
}

func eventLine(w io.Writer, e api.Event) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s %-16s", e.ID, e.At.Format("15:04:05.000"), e.Kind)
	for _, kv := range [][2]string{{"job", e.Job}, {"task", e.Task}, {"worker", e.Worker}, {"reason", e.Reason}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, " %s=%s", kv[0], kv[1])
		}
	}
	if e.Message != "" {
		fmt.Fprintf(&b, " %q", e.Message)
	}
	_, err := fmt.Fprintln(w, b.String())
	return err
}

func newWorkersCmd(f *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "List workers; `workers drain|disable|enable NAME` changes one",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			ws, err := c.Workers(cmd.Context())
			if err != nil {
				return err
			}
			return f.print(cmd.OutOrStdout(), ws, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "WORKER\tSTATE\tRUNNING\tSLOTS\tCPU\tMEMORY\tGPUS\tCGROUPS\tLABELS\tLAST SEEN")
				for _, wk := range ws {
					confined := "yes"
					if wk.Unconfined != "" {
						confined = "no"
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%g\t%dMi\t%d\t%s\t%s\t%s\n", wk.Name, workerStateText(wk), wk.Running, wk.Slots,
						float64(wk.Resources.CPU)/1000, int64(wk.Resources.Memory), wk.Resources.GPUs, confined, labels(wk.Labels),
						wk.LastSeen.Format(time.RFC3339))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				// Why, for each worker that does not hold its tasks to
				// their limits.
				for _, wk := range ws {
					if wk.Unconfined != "" {
						fmt.Fprintf(w, "worker %s runs tasks unconfined: %s\n", wk.Name, wk.Unconfined)
					}
				}
				return nil
			})
		},
	}
	for _, s := range []struct{ verb, state, short string }{
		{"drain", "draining", "Let a worker finish its tasks and take no new ones"},
		{"disable", "disabled", "Switch a worker off: it takes no new tasks and leaves cost figures"},
		{"enable", "ready", "Let a drained or disabled worker take tasks again"},
	} {
		cmd.AddCommand(&cobra.Command{
			Use:   s.verb + " WORKER",
			Short: s.short,
			Args:  cobra.ExactArgs(1),
			RunE: show(f, func(cmd *cobra.Command, args []string, c *client.Client) (api.Worker, error) {
				return c.SetWorkerState(cmd.Context(), args[0], s.state)
			}, line(func(wk api.Worker) string { return "worker " + wk.Name + " is " + wk.State })),
		})
	}
	cmd.AddCommand(newWorkersElasticCmd(f))
	return cmd
}

func labels(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

func newQueuesCmd(f *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "List queues with their policies; `queues set-policy QUEUE FILE` changes one",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			qs, err := c.Queues(cmd.Context())
			if err != nil {
				return err
			}
			return f.print(cmd.OutOrStdout(), qs, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "QUEUE\tPRIORITY\tRUNNING\tWAITING\tPOLICY")
				for _, q := range qs {
					var pol bytes.Buffer
					if json.Compact(&pol, q.Policy) != nil {
						pol.Write(q.Policy)
					}
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", q.Name, q.Priority, q.Running, q.Waiting, pol.String())
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				for _, q := range qs {
					if q.Status != nil {
						fmt.Fprintf(w, "\n%s:\n", q.Name)
						printStatus(w, q.Status)
					}
				}
				return nil
			})
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "set-policy QUEUE FILE",
		Short: "Replace a queue's policy at run time with a policy block (YAML or JSON)",
		Example: `  allot queues set-policy batch fairshare.yaml   # kind: fairshare
                                                  # fairshare: {shares: [...]}`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			raw, err := os.ReadFile(args[1])
			if err != nil {
				return err
			}
			var block any
			if err := yaml.Unmarshal(raw, &block); err != nil {
				return fmt.Errorf("%s: %w", args[1], err)
			}
			q, err := c.SetPolicy(cmd.Context(), args[0], block)
			if err != nil {
				return err
			}
			return f.print(cmd.OutOrStdout(), q, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "queue %s now runs %s\n", q.Name, string(q.Policy))
				return err
			})
		},
	})
	return cmd
}

// printStatus prints a policy's report (a list of records, one per group)
// as a table with one column per field.
func printStatus(w io.Writer, status any) {
	raw, _ := json.Marshal(status)
	var rows []map[string]any
	if json.Unmarshal(raw, &rows) != nil || len(rows) == 0 {
		fmt.Fprintf(w, "  %s\n", raw)
		return
	}
	var cols []string
	for k := range rows[0] {
		cols = append(cols, k)
	}
	sort.Strings(cols)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  "+strings.ToUpper(strings.Join(cols, "\t")))
	for _, r := range rows {
		vals := make([]string, len(cols))
		for i, c := range cols {
			switch v := r[c].(type) {
			case float64:
				vals[i] = strconv.FormatFloat(v, 'g', 4, 64)
			default:
				vals[i] = fmt.Sprint(v)
			}
		}
		fmt.Fprintln(tw, "  "+strings.Join(vals, "\t"))
	}
	_ = tw.Flush()
}

// tokenFlag is a --token flag: the flag when given (even empty, which
// means no token), else ALLOT_TOKEN. The environment is not the flag's
// default because --help prints defaults, and this one is a secret.
type tokenFlag struct {
	v   string
	set bool
}

func (f *tokenFlag) String() string { return "" }
func (f *tokenFlag) Type() string   { return "string" }
func (f *tokenFlag) Set(v string) error {
	f.v, f.set = v, true
	return nil
}

func (f *tokenFlag) value() string {
	if f.set {
		return f.v
	}
	return os.Getenv("ALLOT_TOKEN")
}
