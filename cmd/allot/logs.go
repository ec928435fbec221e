package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/model"
)

// followEvery is how often allot logs -f asks for new output.
const followEvery = 500 * time.Millisecond

func newLogsCmd(f *clientFlags) *cobra.Command {
	var (
		q      api.LogQuery
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "logs JOB [TASK]",
		Short: "Print the output of a job's tasks; -f follows a running task",
		Long: `Print the output (stdout and stderr together) of a job's tasks: of each task's
current attempt, or of one task (TASK or --task) and one attempt (--attempt).
--attempt without a task prints that attempt of each task that had it.

The server keeps up to server.maxOutput of each attempt's output (8Mi by
default); beyond it the oldest output is dropped, and the header of the task
says how many bytes were.

-f follows one task's attempt while it runs, printing its output as the
worker sends it (about every second), and returns when the attempt ends.`,
		Example: `  allot logs train-42
  allot logs train-42 shard-3 --attempt 1
  allot logs train-42 --task shard-3 -f`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			if len(args) == 2 {
				if q.Task != "" && q.Task != args[1] {
					return fmt.Errorf("TASK %q and --task %q name different tasks: give one", args[1], q.Task)
				}
				q.Task = args[1]
			}
			if follow {
				return followLogs(cmd.Context(), c, cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], q)
			}
			logs, err := c.LogsOf(cmd.Context(), args[0], q)
			if err != nil {
				return err
			}
			return f.print(cmd.OutOrStdout(), logs, func(w io.Writer) error {
				for _, t := range logs.Tasks {
					if !f.noHeaders {
						fmt.Fprintln(w, logHeader(t))
					}
					fmt.Fprint(w, t.Output)
					if t.Output != "" && !strings.HasSuffix(t.Output, "\n") {
						fmt.Fprintln(w)
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&q.Task, "task", "", "only this task's output")
	cmd.Flags().IntVar(&q.Attempt, "attempt", 0, "this attempt's output (default: the current one)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow the task's attempt until it ends")
	return cmd
}

// logHeader is the line before a task's output: the task, the attempt,
// its exit code once the worker reported it (however the attempt ended),
// and how much of the output was dropped over the server's limit.
func logHeader(t api.TaskLog) string {
	var extra []string
	if t.Dropped > 0 {
		extra = append(extra, fmt.Sprintf("first %s of %s dropped: over the server's output limit (server.maxOutput)", bytesText(t.Dropped), bytesText(t.Total)))
	}
	if t.Running {
		extra = append(extra, "running")
	}
	h := fmt.Sprintf("==> %s (attempt %d", t.Task, t.Attempt)
	if t.ExitCode != nil {
		h += fmt.Sprintf(", exit %d", *t.ExitCode)
	}
	if len(extra) > 0 {
		h += "; " + strings.Join(extra, "; ")
	}
	return h + ") <=="
}

// followLogs prints one task's output as it comes, until its attempt has
// ended and all its output is printed. A job of one task needs no task
// name; a task that has not started is waited for, and errW says so once,
// with why it waits, so that the wait is not silent.
func followLogs(ctx context.Context, c *client.Client, w, errW io.Writer, job string, q api.LogQuery) error {
	if q.Task == "" {
		j, err := c.Job(ctx, job)
		if err != nil {
			return err
		}
		if len(j.Tasks) != 1 {
			names := make([]string, 0, 3)
			for i, t := range j.Tasks {
				if i == 3 {
					names = append(names, "...")
					break
				}
				names = append(names, t.Name)
			}
			return fmt.Errorf("-f follows one task, and job %s has %d (%s): name one with --task", job, len(j.Tasks), strings.Join(names, ", "))
		}
		q.Task = j.Tasks[0].Name
	}
	tick := time.NewTicker(followEvery)
	defer tick.Stop()
	headed, endedOnce, noted := false, false, false
	for {
		logs, err := c.LogsOf(ctx, job, q)
		if err != nil && !client.Retryable(err) {
			return err
		}
		if err == nil && !noted && !headed && (len(logs.Tasks) == 0 || logs.Tasks[0].Attempt == 0) {
			noted = noteNotStarted(ctx, c, errW, job, q.Task)
		}
		if err == nil && len(logs.Tasks) == 1 {
			t := logs.Tasks[0]
			if q.Attempt == 0 {
				q.Attempt = t.Attempt // follow this attempt, even once another starts
			}
			if !headed {
				fmt.Fprintln(w, logHeader(t))
				headed = true
			} else if t.Dropped > 0 {
				fmt.Fprintf(w, "\n[... %s dropped: over the server's output limit ...]\n", bytesText(t.Dropped))
			}
			if _, err := io.WriteString(w, t.Output); err != nil {
				return err
			}
			q.Offset = t.Total
			if !t.Running {
				// The attempt ended; the worker sends what is left before
				// its report, so one more read finds anything late.
				if endedOnce && t.Output == "" {
					return nil
				}
				endedOnce = true
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// noteNotStarted tells errW that a task has not started yet and why it
// waits (its pending reason), and reports whether it did: not when the
// task has started meanwhile, or cannot be read now.
func noteNotStarted(ctx context.Context, c *client.Client, errW io.Writer, job, task string) bool {
	j, err := c.Job(ctx, job)
	if err != nil {
		return false
	}
	for _, t := range j.Tasks {
		if t.Name != task {
			continue
		}
		if t.State != string(model.TaskBlocked) && t.State != string(model.TaskReady) {
			return false
		}
		why := ""
		if t.Reason != nil {
			why = fmt.Sprintf(" (%s: %s)", t.Reason.Code, t.Reason.Message)
		}
		fmt.Fprintf(errW, "task %s of job %s has not started yet%s; waiting for it to start (Ctrl-C stops)\n", task, job, why)
		return true
	}
	return false
}
