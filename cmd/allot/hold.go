package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/model"
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
// update job: its priority (and urgency) and, while none of its tasks has
// started, the resources each task asks for.
func newUpdateCmd(f *clientFlags) *cobra.Command {
	var priority int
	var urgent bool
	var cpu, memory, gpuMemory string
	var gpus int
	cmd := &cobra.Command{
		Use:   "update JOB [--priority N [--urgent]] [--cpu Q] [--memory Q] [--gpus N] [--gpu-memory Q]",
		Short: "Change a waiting job's priority, or what each of its tasks asks for while none has started",
		Long: `Change a waiting job's priority (and urgency), or what each of its tasks asks for.

--priority takes effect at the next cycle (the same as "allot priority"). --cpu,
--memory, --gpus and --gpu-memory replace the value of every task of the job, and
leave the others as submitted; they are refused once a task of the job has
started. The job keeps its place in its queue.`,
		Example: `  allot update nightly --priority 7
  allot update train --gpus 1 --gpu-memory 24Gi
  allot update hotfix --priority 9 --urgent --cpu 500m`,
		Args: cobra.ExactArgs(1),
		RunE: f.run(func(cmd *cobra.Command, args []string, c *client.Client) error {
			fl := cmd.Flags()
			var ch api.ResourcesChange
			if fl.Changed("cpu") {
				var q model.CPU
				if err := q.UnmarshalText([]byte(cpu)); err != nil {
					return fmt.Errorf("--cpu: %v", err)
				}
				ch.CPU = &q
			}
			for _, m := range []struct {
				flag, value string
				into        **model.Memory
			}{{"memory", memory, &ch.Memory}, {"gpu-memory", gpuMemory, &ch.GPUMemory}} {
				if fl.Changed(m.flag) {
					var q model.Memory
					if err := q.UnmarshalText([]byte(m.value)); err != nil {
						return fmt.Errorf("--%s: %v", m.flag, err)
					}
					*m.into = &q
				}
			}
			if fl.Changed("gpus") {
				ch.GPUs = &gpus
			}
			if !fl.Changed("priority") && ch.Empty() {
				return fmt.Errorf("nothing to change: give --priority N, or --cpu, --memory, --gpus or --gpu-memory")
			}
			if fl.Changed("urgent") && !fl.Changed("priority") {
				return fmt.Errorf("--urgent goes with --priority N")
			}
			var job api.Job
			var err error
			if !ch.Empty() {
				if job, err = c.SetResources(cmd.Context(), args[0], ch); err != nil {
					return err
				}
			}
			if fl.Changed("priority") {
				if job, err = c.SetPriority(cmd.Context(), args[0], priority, urgent); err != nil {
					return err
				}
			}
			return f.print(cmd.OutOrStdout(), job, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "job %s now has priority %d (urgent: %v)%s\n", job.ID, job.Priority, job.Urgent, resourcesLine(job))
				return err
			})
		}),
	}
	cmd.Flags().IntVar(&priority, "priority", 0, "the job's new priority")
	cmd.Flags().BoolVar(&urgent, "urgent", false, "urgent priority (the priority policy may preempt for it)")
	cmd.Flags().StringVar(&cpu, "cpu", "", "cores each task asks for (2, 500m)")
	cmd.Flags().StringVar(&memory, "memory", "", "memory each task asks for (4Gi, 512Mi)")
	cmd.Flags().IntVar(&gpus, "gpus", 0, "GPUs each task asks for")
	cmd.Flags().StringVar(&gpuMemory, "gpu-memory", "", "memory of each GPU a task asks for (24Gi)")
	return cmd
}

// resourcesLine says what the job's task entries ask for, when they all
// ask for the same: ", each task asks for 2 CPU, 4Gi".
func resourcesLine(j api.Job) string {
	if j.Spec == nil || len(j.Spec.Tasks) == 0 {
		return ""
	}
	r := j.Spec.Tasks[0].Resources
	for _, t := range j.Spec.Tasks[1:] {
		if t.Resources != r {
			return ""
		}
	}
	return fmt.Sprintf("; each task asks for %s", r.Model())
}
