package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/model"
)

// clientFlags are the flags every client command shares.
type clientFlags struct {
	server string
	token  tokenFlag
	ca     string
	output string
	// noHeaders leaves tables' header lines out; format is output parsed
	// (output.go).
	noHeaders bool
	format    format
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
	cmd.PersistentFlags().StringVarP(&f.output, "output", "o", "table",
		"output format: table, wide, json, yaml, jsonpath=EXPR, jsonpath-file=FILE, go-template=TEMPLATE or go-template-file=FILE")
	cmd.PersistentFlags().BoolVar(&f.noHeaders, "no-headers", false, "leave the header line out of tables")
	completeFlags(cmd, f)
}

// checkOutput refuses an -o the commands cannot print, and parses the
// others (output.go).
func (f *clientFlags) checkOutput() error {
	fm, err := parseFormat(f.output)
	if err != nil {
		return err
	}
	f.format = fm
	return nil
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
	c, err := client.New(f.server, opts...)
	if err != nil {
		return nil, fmt.Errorf("--server (or ALLOT_SERVER): %w", err)
	}
	return c, nil
}

// print writes v in the -o form (output.go), or calls table for the table
// forms.
func (f *clientFlags) print(w io.Writer, v any, table func(io.Writer) error) error {
	return f.format.write(w, v, table)
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
	cmds := []*cobra.Command{newSubmitCmd(f), newGetCmd(f), newListCmd(f), newCancelCmd(f), newRequeueCmd(f), newPriorityCmd(f), newLogsCmd(f),
		newEventsCmd(f), newWorkersCmd(f), newQueuesCmd(f), newTokensCmd(f), newUsageCmd(f)}
	cmds = append(cmds, newHoldCmd(f), newReleaseCmd(f), newUpdateCmd(f))
	for _, c := range cmds {
		f.register(c)
		root.AddCommand(c)
	}
}

// wrapSource is the name `allot submit --wrap` gives its document.
const wrapSource = "--wrap.json"

func newSubmitCmd(f *clientFlags) *cobra.Command {
	var wait, strict bool
	var opts submitOptions
	cmd := &cobra.Command{
		Use:   "submit FILE|DIR|- | --wrap COMMAND",
		Short: "Submit a job from a YAML or JSON file (- reads standard input), or many at once",
		Long: `Submit a job from a YAML or JSON file (- reads standard input).

A file of several YAML documents (separated by ---), an NDJSON file (.ndjson or
.jsonl, one JSON job a line) or a directory (every *.yaml, *.yml, *.json,
*.ndjson and *.jsonl file in it, in name order) submits every job it holds in
bulk calls: each job is created or refused on its own, one line per job is
printed, and the command fails if any was not created.

--wrap 'COMMAND' submits a job of one task that runs COMMAND with sh -c,
shaped by --name, --count, --cpu, --memory, --gpus and --timeout. --set
KEY=VALUE fills the variables ${{ KEY }} of a job file; --id and --id-prefix
give the job a new ID (to submit the same file again); --queue, --share and
--dependency set those fields over the file's (docs/jobs.md).`,
		Example: `  allot submit examples/jobs/pipeline.yaml --wait
  cat job.json | allot submit -
  allot submit jobs.ndjson
  allot submit jobs/
  allot submit --wrap 'make test' --cpu 2 --memory 4Gi --timeout 30m
  allot submit examples/jobs/nightly.yaml --id-prefix nightly --set day=2026-01-02
  allot submit --wrap 'make report' --dependency afterok:etl-1:etl-2,afterany:cleanup`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			if err := opts.check(args); err != nil {
				return err
			}
			source := ""
			if len(args) == 1 {
				source = args[0]
			}
			if info, err := os.Stat(source); source != "" && source != "-" && err == nil && info.IsDir() {
				docs, err := readJobDir(source)
				if err != nil {
					return err
				}
				if docs, err = opts.editAll(docs); err != nil {
					return err
				}
				return bulkSubmit(cmd, f, c, docs, wait, strict)
			}
			var body []byte
			switch source {
			case "":
				body, source = opts.wrapped(), wrapSource
			case "-":
				body, err = io.ReadAll(cmd.InOrStdin())
			default:
				body, err = os.ReadFile(source)
			}
			if err != nil {
				return err
			}
			if docs, err := splitJobFile(source, body); err == nil && (len(docs) > 1 || isNDJSON(source)) {
				if docs, err = opts.editAll(docs); err != nil {
					return err
				}
				return bulkSubmit(cmd, f, c, docs, wait, strict)
			}
			ct := "application/yaml"
			if strings.EqualFold(filepath.Ext(source), ".json") {
				ct = "application/json"
			}
			if err := opts.checkVarsUsed([][]byte{body}); err != nil {
				return err
			}
			var lineOf func(string) int
			if body, ct, lineOf, err = opts.edit(body, ct); err != nil {
				return err
			}
			if source == wrapSource {
				// The document is the flags': none of its lines is the user's.
				lineOf = func(string) int { return 0 }
			}
			job, err := c.SubmitJobWith(cmd.Context(), body, ct, client.SubmitOptions{Strict: strict})
			if err != nil {
				return mapLines(err, lineOf)
			}
			for _, w := range job.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: job %s: %s (allot explain %s; --strict refuses such a job)\n", job.ID, w.Message, job.ID)
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
			if len(job.Warnings) > 0 {
				// The job waits for a worker that may never come: say
				// that --wait does too, and how to stop.
				fmt.Fprintf(cmd.ErrOrStderr(), "--wait waits for job %s anyway: it starts once a worker that can run it registers; Ctrl-C stops waiting (the job stays; allot cancel %s ends it)\n", job.ID, job.ID)
			}
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
	cmd.Flags().BoolVar(&strict, "strict", false, "refuse a job that no registered worker can ever run (without it: accepted with a warning)")
	opts.register(cmd)
	return cmd
}

// bulkSubmit is `allot submit` of many jobs; --wait follows one job only.
func bulkSubmit(cmd *cobra.Command, f *clientFlags, c *client.Client, docs []jobDocument, wait, strict bool) error {
	if strict {
		return fmt.Errorf("--strict checks one job; %d jobs were given (submit them one by one, or without --strict and read the warnings of allot explain)", len(docs))
	}
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
		}, func(w io.Writer, j api.Job) error { return jobTableOf(w, j, f) }),
	}
}

// jobTable prints a job as allot get does, with the default table.
func jobTable(w io.Writer, j api.Job) error { return jobTableOf(w, j, &clientFlags{}) }

// jobTableOf prints a job: its header, and its tasks with how long each
// ran and what it used (-o wide: start and end times, and every attempt).
func jobTableOf(w io.Writer, j api.Job, f *clientFlags) error {
	now := time.Now()
	fmt.Fprintf(w, "job %s  queue %s  state %s", j.ID, j.Queue, j.State)
	if j.Share != "" {
		fmt.Fprintf(w, "  share %s", j.Share)
	}
	if j.Submitter != "" {
		fmt.Fprintf(w, "  submitter %s", j.Submitter)
	}
	fmt.Fprintf(w, "  submitted %s  duration %s\n", j.Submitted.Format(time.RFC3339), span(&j.Submitted, j.Ended, now))
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
	dependsLine(w, j)
	if len(j.Tasks) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	return taskTable(w, j, f, now)
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
  allot list --mine -o wide
  allot list --queue batch --share analytics
  allot list --no-headers -o jsonpath='{range .jobs[*]}{.id}{"\n"}{end}'
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
			if err := f.print(cmd.OutOrStdout(), list, func(w io.Writer) error { return jobListTable(w, list, f, time.Now()) }); err != nil {
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
	cmd.Flags().BoolVar(&filter.Mine, "mine", false, "only the jobs this token submitted (squeue -u)")
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
	var target string
	return &cobra.Command{
		Use:   "cancel JOB|JOB/TASK",
		Short: "Cancel a job, or one task (and the tasks that need it): waiting tasks end, running tasks are stopped",
		Args:  cobra.ExactArgs(1),
		RunE: show(f, func(cmd *cobra.Command, args []string, c *client.Client) (api.Job, error) {
			target = args[0]
			job, task, err := jobTask(args[0])
			if err != nil || task == "" {
				return c.Cancel(cmd.Context(), args[0])
			}
			return c.CancelTask(cmd.Context(), job, task)
		}, line(func(j api.Job) string { return "cancelled " + target })),
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

func newEventsCmd(f *clientFlags) *cobra.Command {
	var (
		follow bool
		q      client.EventQuery
		since  string
	)
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Print the end of the event log, newest last; --follow streams new events as they happen",
		Long: `Print the last --limit events of the log (100 by default), oldest first and
newest last, as tail prints the end of a file; --follow then streams new events
as they happen. --job keeps one job's events, --since the events of a recent
period (10m, 2h, 1d) or after a time (RFC 3339), and --after ID reads forward
from an event (the first --limit events after it).`,
		Example: `  allot events
  allot events --job pipeline --since 1h
  allot events --limit 20 --follow`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			if q.Limit <= 0 || q.Limit > maxEventPage {
				return fmt.Errorf("--limit %d: give a number from 1 to %d", q.Limit, maxEventPage)
			}
			if since != "" {
				if q.Since, err = parseSince(since, time.Now()); err != nil {
					return err
				}
			}
			q.Tail = q.After == 0 // from an event on: forward; else the end
			w := cmd.OutOrStdout()
			show := func(e api.Event) error {
				if f.output == "json" {
					b, _ := json.Marshal(e)
					_, err := fmt.Fprintln(w, string(b))
					return err
				}
				if !f.format.isTable() {
					return f.print(w, e, nil) // yaml, jsonpath, go-template: each event on its own
				}
				return eventLine(w, e)
			}
			evs, err := c.EventLog(cmd.Context(), q)
			if err != nil {
				return err
			}
			last := q.After
			for _, e := range evs {
				if err := show(e); err != nil {
					return err
				}
				last = e.ID
			}
			if follow {
				return c.FollowEvents(cmd.Context(), last, q.Job, show)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "then keep streaming new events")
	cmd.Flags().StringVar(&q.Job, "job", "", "only events of this job")
	cmd.Flags().IntVar(&q.Limit, "limit", 100, fmt.Sprintf("at most this many events: the last ones (at most %d)", maxEventPage))
	cmd.Flags().StringVar(&since, "since", "", "only events of the last DURATION (10m, 2h, 1d) or since a time (RFC 3339)")
	cmd.Flags().Int64Var(&q.After, "after", 0, "only events after this id, reading forward from it")
	return cmd
}

// maxEventPage is the largest page GET /v1/events answers.
const maxEventPage = 1000

// parseSince reads --since: a duration back from now (days allowed) or a
// time in RFC 3339.
func parseSince(s string, now time.Time) (time.Time, error) {
	var d daysDuration
	if err := d.Set(s); err == nil {
		return now.Add(-time.Duration(d)), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: give a duration back from now (10m, 2h, 1d) or a time in RFC 3339 (2026-01-02T15:04:05Z)", s)
}

// eventGPUs is the devices a task_started event records ("0,1"), or "".
func eventGPUs(e api.Event) string {
	if e.Kind != "task_started" || len(e.Data) == 0 {
		return ""
	}
	var d struct {
		GPUs []int `json:"gpus"`
	}
	if json.Unmarshal(e.Data, &d) != nil {
		return ""
	}
	return model.DeviceList(d.GPUs)
}

func eventLine(w io.Writer, e api.Event) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s %-16s", e.ID, e.At.Format("15:04:05.000"), e.Kind)
	for _, kv := range [][2]string{{"job", e.Job}, {"task", e.Task}, {"worker", e.Worker}, {"gpus", eventGPUs(e)}, {"reason", e.Reason}} {
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
			return f.print(cmd.OutOrStdout(), ws, func(w io.Writer) error { return workerTable(w, ws, f) })
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
			return f.print(cmd.OutOrStdout(), qs, func(w io.Writer) error { return queuesTable(w, qs, f) })
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
