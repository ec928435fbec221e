package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
)

// taskTable prints a job's tasks: state, attempt, worker, exit code, how
// long the current attempt has run (or ran), its CPU time and peak memory
// once it ended, and the reason; -o wide adds the start and end times, and
// a table of every ended attempt.
func taskTable(w io.Writer, j api.Job, f *clientFlags, now time.Time) error {
	t := f.newTab(w)
	// The GPUS column (the devices each task holds on its worker) shows
	// only for a job whose tasks were given some.
	gpus := slices.ContainsFunc(j.Tasks, func(t api.Task) bool { return len(t.GPUs) > 0 })
	cols := []string{"TASK", "STATE", "ATTEMPT", "WORKER", "EXIT", "DURATION", "CPU", "MAXRSS", "REASON"}
	if gpus {
		cols = slices.Insert(cols, 4, "GPUS")
	}
	t.header(cols, "STARTED", "ENDED")
	for _, tk := range j.Tasks {
		exit := ""
		if tk.ExitCode != nil {
			exit = fmt.Sprint(*tk.ExitCode)
		}
		reason := ""
		if tk.Reason != nil {
			reason = tk.Reason.Code + ": " + tk.Reason.Message
		}
		row := []string{tk.Name, tk.State, fmt.Sprint(tk.Attempt), tk.Worker, exit, span(tk.Started, tk.Ended, now),
			cpuText(tk.CPUSeconds), bytesText(tk.PeakMemory), reason}
		if gpus {
			row = slices.Insert(row, 4, model.DeviceList(tk.GPUs))
		}
		t.row(row, timeText(tk.Started), timeText(tk.Ended))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if !t.wide {
		return nil
	}
	var any bool
	for _, tk := range j.Tasks {
		any = any || len(tk.Attempts) > 0
	}
	if !any {
		return nil
	}
	fmt.Fprintln(w)
	t = f.newTab(w)
	t.header([]string{"TASK", "ATTEMPT", "WORKER", "STARTED", "WALL", "CPU", "MAXRSS", "EXIT"})
	for _, tk := range j.Tasks {
		for _, a := range tk.Attempts {
			exit := ""
			if a.ExitCode != nil {
				exit = fmt.Sprint(*a.ExitCode)
			}
			t.row([]string{tk.Name, fmt.Sprint(a.Attempt), a.Worker, a.Started.Format(time.RFC3339),
				human(a.Ended.Sub(a.Started)), cpuText(a.CPUSeconds), bytesText(a.PeakMemory), exit})
		}
	}
	return t.flush()
}

// timeText is a time in RFC 3339, "" when unset.
func timeText(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339)
}

// jobListTable prints a list of jobs: how long each has lasted since it
// was submitted (until it ended); -o wide adds its requestor, urgency and
// end time.
func jobListTable(w io.Writer, list api.JobList, f *clientFlags, now time.Time) error {
	t := f.newTab(w)
	t.header([]string{"JOB", "QUEUE", "SHARE", "PRIORITY", "STATE", "SUBMITTER", "SUBMITTED", "DURATION"}, "REQUESTOR", "URGENT", "ENDED")
	for _, j := range list.Jobs {
		t.row([]string{j.ID, j.Queue, j.Share, fmt.Sprint(j.Priority), j.State, j.Submitter, j.Submitted.Format(time.RFC3339),
			span(&j.Submitted, j.Ended, now)},
			j.Requestor, fmt.Sprint(j.Urgent), timeText(j.Ended))
	}
	return t.flush()
}

// workerTable prints the workers; -o wide adds prefetch, cost, who disabled
// a disabled worker, and its cache hints.
func workerTable(w io.Writer, ws []api.Worker, f *clientFlags) error {
	t := f.newTab(w)
	t.header([]string{"WORKER", "STATE", "RUNNING", "SLOTS", "CPU", "MEMORY", "GPUS", "CGROUPS", "LABELS", "LAST SEEN"},
		"PREFETCH", "COST/H", "DISABLED BY", "CACHE")
	for _, wk := range ws {
		var cache []string
		for _, h := range wk.Cache {
			cache = append(cache, h.Name)
		}
		confined := "yes"
		if wk.Unconfined != "" {
			confined = "no"
		}
		t.row([]string{wk.Name, workerStateText(wk), fmt.Sprint(wk.Running), fmt.Sprint(wk.Slots),
			fmt.Sprintf("%g", float64(wk.Resources.CPU)/1000), fmt.Sprintf("%dMi", int64(wk.Resources.Memory)),
			fmt.Sprint(wk.Resources.GPUs), confined, labels(wk.Labels), wk.LastSeen.Format(time.RFC3339)},
			fmt.Sprint(wk.Prefetch), fmt.Sprintf("%g", wk.CostPerHour), wk.DisabledBy, strings.Join(cache, ","))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if f.noHeaders {
		return nil
	}
	// Why, for each worker that does not hold its tasks to their limits.
	for _, wk := range ws {
		if wk.Unconfined != "" {
			fmt.Fprintf(w, "worker %s runs tasks unconfined: %s\n", wk.Name, wk.Unconfined)
		}
	}
	return nil
}
