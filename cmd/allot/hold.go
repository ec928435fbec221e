package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
)

// newHoldCmd is Slurm's scontrol hold: the job keeps its place in its queue
// but starts nothing until released.
func newHoldCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "hold JOB...",
		Short: "Hold jobs: each keeps its place in its queue but starts no task until released",
		Long: `Hold jobs: each keeps its place in its queue but starts no task until
"allot release". Tasks already running go on. The token's name is recorded as
who holds the job ("allot get" and "allot explain" say "held by NAME"); a
submitter holds its own jobs, an admin any job.`,
		Example: `  allot hold nightly
  allot release nightly`,
		Args: cobra.MinimumNArgs(1),
		RunE: eachJob(f, "held", func(cmd *cobra.Command, c *client.Client, id string) (api.Job, error) {
			return c.Hold(cmd.Context(), id)
		}),
	}
}

// newReleaseCmd is Slurm's scontrol release.
func newReleaseCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "release JOB...",
		Short: "Release held jobs: their waiting tasks may start again, in the place they had",
		Args:  cobra.MinimumNArgs(1),
		RunE: eachJob(f, "released", func(cmd *cobra.Command, c *client.Client, id string) (api.Job, error) {
			return c.Release(cmd.Context(), id)
		}),
	}
}

// eachJob runs call for each job named, printing one line per job (or the
// jobs with -o json); it goes on past a job that fails and reports them
// all at the end.
func eachJob(f *clientFlags, done string, call func(cmd *cobra.Command, c *client.Client, id string) (api.Job, error)) func(*cobra.Command, []string) error {
	return f.run(func(cmd *cobra.Command, args []string, c *client.Client) error {
		var jobs []api.Job
		var failed []string
		for _, id := range args {
			j, err := call(cmd, c, id)
			if err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", id, err))
				continue
			}
			jobs = append(jobs, j)
		}
		err := f.print(cmd.OutOrStdout(), jobs, func(w io.Writer) error {
			for _, j := range jobs {
				if _, err := fmt.Fprintf(w, "%s %s\n", done, j.ID); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(failed) > 0 {
			return fmt.Errorf("%s", strings.Join(failed, "\n"))
		}
		return nil
	})
}

// newUpdateCmd changes what a waiting job asks for, as Slurm's scontrol
// update: today its priority (and urgency), through the priority route.
func newUpdateCmd(f *clientFlags) *cobra.Command {
	var priority int
	var urgent bool
	cmd := &cobra.Command{
		Use:   "update JOB --priority N [--urgent]",
		Short: "Change a job's priority (and urgency) while it waits; its place in the queue follows",
		Example: `  allot update nightly --priority 7
  allot update hotfix --priority 9 --urgent`,
		Args: cobra.ExactArgs(1),
		RunE: f.run(func(cmd *cobra.Command, args []string, c *client.Client) error {
			if !cmd.Flags().Changed("priority") {
				return fmt.Errorf("nothing to change: give --priority N (and --urgent for urgent priority)")
			}
			job, err := c.SetPriority(cmd.Context(), args[0], priority, urgent)
			if err != nil {
				return err
			}
			return f.print(cmd.OutOrStdout(), job, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "job %s now has priority %d (urgent: %v)\n", job.ID, job.Priority, job.Urgent)
				return err
			})
		}),
	}
	cmd.Flags().IntVar(&priority, "priority", 0, "the job's new priority")
	cmd.Flags().BoolVar(&urgent, "urgent", false, "urgent priority (the priority policy may preempt for it)")
	return cmd
}
