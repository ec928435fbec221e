package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
)

// jobTask splits a JOB or JOB/TASK argument (job IDs hold no '/').
func jobTask(arg string) (job, task string, err error) {
	job, task, _ = strings.Cut(arg, "/")
	if job == "" || strings.HasSuffix(arg, "/") {
		return "", "", fmt.Errorf("%q: give JOB or JOB/TASK", arg)
	}
	return job, task, nil
}

func newRequeueCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "requeue JOB|JOB/TASK",
		Short: "Run a job's failed, cancelled or running tasks again, or one task (scontrol requeue)",
		Long: `Run tasks again, each as a new attempt.

  allot requeue JOB        every task of the job that did not succeed
  allot requeue JOB/TASK   one task

A running task is stopped and waits again. A failed or cancelled task waits
again with its failed attempts forgotten (it has its maxAttempts again), and
so do the tasks that need it and ended because it did. A job that ended runs
again: its succeeded tasks are kept, and its dependencies on other jobs are
checked again as at submission.`,
		Example: `  allot requeue nightly-etl
  allot requeue nightly-etl/load`,
		Args: cobra.ExactArgs(1),
		RunE: show(f, func(cmd *cobra.Command, args []string, c *client.Client) (api.Job, error) {
			job, task, err := jobTask(args[0])
			if err != nil {
				return api.Job{}, err
			}
			return c.Requeue(cmd.Context(), job, task)
		}, line(func(j api.Job) string {
			return fmt.Sprintf("requeued %s: %s", j.ID, countsLine(j.Counts))
		})),
	}
}

// countsLine says how many tasks are in each state, in the order a job
// goes through them.
func countsLine(counts map[string]int) string {
	var parts []string
	for _, s := range []string{"blocked", "ready", "running", "succeeded", "failed", "cancelled"} {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	return strings.Join(parts, ", ")
}

// dependsLine prints the jobs a job depends on, TYPE:JOB each, with
// whether each is met while the job has not ended, as `allot get` shows
// them.
func dependsLine(w io.Writer, j api.Job) {
	if len(j.DependsOn) == 0 {
		return
	}
	parts := make([]string, len(j.DependsOn))
	for i, d := range j.DependsOn {
		parts[i] = string(d.Type) + ":" + d.Job
		if d.State != "" {
			parts[i] += " (" + d.State + ")"
		}
	}
	fmt.Fprintf(w, "depends on %s\n", strings.Join(parts, ", "))
}
