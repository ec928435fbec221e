package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/allot-sched/allot/internal/sim"
)

// maxTextUnfinished caps the unfinished jobs the text summary lists.
const maxTextUnfinished = 20

// WriteText writes the human summary: the run, cluster figures, a table of
// groups, stops by reason, unfinished jobs and the timeline excerpt.
func WriteText(w io.Writer, r *sim.Result) error {
	bw := bufio.NewWriter(w)
	var queues []string
	for _, q := range r.Queues {
		queues = append(queues, fmt.Sprintf("%s (%s)", q.Name, q.Policy))
	}
	c := r.Counts
	fmt.Fprintf(bw, "Simulated %d jobs (%d tasks) on %d workers, %d slots; queues: %s; groups by %s\n",
		r.JobsArrived, c.Tasks, r.Workers, r.Slots, strings.Join(queues, ", "), r.GroupBy)
	fmt.Fprintf(bw, "Outcome:     %s after %s (makespan %.0fs)", r.Outcome, fmtSeconds(r.MakespanSeconds), r.MakespanSeconds)
	if r.JobsArrived < r.Jobs {
		fmt.Fprintf(bw, "; %d jobs had not arrived", r.Jobs-r.JobsArrived)
	}
	fmt.Fprintln(bw)
	fmt.Fprintf(bw, "Utilisation: %s of %d slots (%.0f slot-seconds)\n", pct(r.Utilisation), r.Slots, r.SlotSeconds)
	if r.LostSlotSeconds > 0 {
		fmt.Fprintf(bw, "Lost to stops: %.0f slot-seconds of stopped attempts, done again; useful utilisation %s\n",
			r.LostSlotSeconds, pct(r.UsefulUtilisation))
	}
	fmt.Fprintf(bw, "Fairness:    Jain %.3f over the time-averaged slot shares of %s; %.3f mean over %s\n",
		r.Fairness.JainTimeAveraged, plural(r.Fairness.Groups, "group"), r.Fairness.JainMeanOverTime, plural(r.Fairness.Samples, "sample"))
	id := r.Fairness.Ideal
	fmt.Fprintf(bw, "Ideal:       distance from the max-min fair allocation (%s): mean %s, p95 %s, max %s of the pool over %s with demand (whole slots cannot go below %s)",
		id.Groups, pct(id.MeanError), pct(id.P95Error), pct(id.MaxError), fmtSeconds(id.DemandSeconds), pct(id.FloorMeanError))
	if w := id.Window; w != nil {
		fmt.Fprintf(bw, "; over the %s decay window: mean %s, p95 %s", fmtSeconds(w.DecaySeconds), pct(w.MeanError), pct(w.P95Error))
	}
	fmt.Fprintln(bw)
	fmt.Fprintf(bw, "Wait:        ready → start over %d starts: p50 %s, p95 %s, p99 %s, mean %s, max %s\n",
		r.Wait.Count, fmtSeconds(r.Wait.P50), fmtSeconds(r.Wait.P95), fmtSeconds(r.Wait.P99), fmtSeconds(r.Wait.Mean), fmtSeconds(r.Wait.Max))
	fmt.Fprintf(bw, "Counts:      %d starts, %d stops, %d retries, %d failed tasks (%d by a failed dependency); jobs: %d succeeded, %d failed, %d unfinished; %d cycles\n",
		c.Starts, c.Stops, c.Retries, c.FailedTasks, c.DependencyFailures, c.JobsSucceeded, c.JobsFailed, len(r.Unfinished), c.Cycles)
	if c.Merged > 0 || c.Deferred > 0 {
		fmt.Fprintf(bw, "Placement:   %d starts merged into batches, %d deferrals for a sticky worker\n", c.Merged, c.Deferred)
	}
	fmt.Fprintf(bw, "Cost:        %.2f for %.1f enabled worker-hours (%.1f disabled worker-hours left out)\n",
		r.Cost.Cost, r.Cost.WorkerHours, r.Cost.DisabledWorkerHours)
	if el := r.Elastic; el != nil {
		fmt.Fprintf(bw, "Elastic:     %d polls every %s, %d disables, %d enables; %d workers disabled at the end",
			el.Polls, fmtSeconds(el.PollIntervalSeconds), el.Disables, el.Enables, len(el.DisabledAtEnd))
		if len(el.DisabledAtEnd) > 0 {
			fmt.Fprintf(bw, " (%s)", truncList(el.DisabledAtEnd, 5))
		}
		fmt.Fprintln(bw)
	}
	if c.JobsDeadLettered > 0 {
		fmt.Fprintf(bw, "Dead letters: %d jobs refused at arrival for an inaccessible input\n", c.JobsDeadLettered)
	}

	fmt.Fprintln(bw)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "GROUP\tJOBS\tTASKS\tSLOT-S\tUTIL\tBUSY\tMEAN SLOTS\tWAIT P50\tP95\tP99\tMEAN\tMAX\tSTOPS\tRETRIES\tFAILED\t")
	for _, g := range r.Groups {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t\n", g.Key, g.Jobs, g.Tasks, g.SlotSeconds,
			pct(g.UtilisationShare), pct(g.BusyShare), g.MeanSlots, fmtSeconds(g.Wait.P50), fmtSeconds(g.Wait.P95),
			fmtSeconds(g.Wait.P99), fmtSeconds(g.Wait.Mean), fmtSeconds(g.Wait.Max), g.Stops, g.Retries, g.FailedTasks)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if err := writeEndpoints(bw, r); err != nil {
		return err
	}

	if len(c.StopsByReason) > 0 {
		fmt.Fprintln(bw, "\nStops by reason:")
		codes := make([]string, 0, len(c.StopsByReason))
		for k := range c.StopsByReason {
			codes = append(codes, k)
		}
		sort.Strings(codes)
		for _, k := range codes {
			fmt.Fprintf(bw, "  %-20s %d\n", k, c.StopsByReason[k])
		}
	}

	if n := len(r.Unfinished); n > 0 {
		fmt.Fprintf(bw, "\nUnfinished jobs (%d", n)
		if n > maxTextUnfinished {
			fmt.Fprintf(bw, ", first %d", maxTextUnfinished)
		}
		fmt.Fprintln(bw, "):")
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  JOB\tGROUP\tRUNNING\tWAITING\tBLOCKED\tREASON")
		for _, u := range r.Unfinished[:min(n, maxTextUnfinished)] {
			reason := "-"
			if u.Reason.Code != "" {
				reason = u.Reason.Code + ": " + u.Reason.Message
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%s\n", u.Job, u.Group, u.Running, u.Waiting, u.Blocked, reason)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	if len(r.Timeline) > 0 {
		fmt.Fprintf(bw, "\nTimeline (first %d entries):\n", len(r.Timeline))
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		for _, e := range r.Timeline {
			fmt.Fprintf(tw, "  +%s\t%s\t%s\t%s\n", fmtSeconds(e.AtSeconds), e.Kind, e.Job, timelineText(e))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// writeEndpoints writes the endpoint table of the text summary.
func writeEndpoints(w io.Writer, r *sim.Result) error {
	if len(r.Endpoints) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nEndpoints (load = concurrent requests of admitted jobs):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ENDPOINT\tMAX\tTARGET\tJOBS\tPEAK\tPEAK ≥2 JOBS\tMEAN\tTHROTTLED\tEXCEPTIONS\tADMIT WAIT P50\tP95\tP99\tMAX\t")
	for _, e := range r.Endpoints {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.1f\t%d\t%d\t%s\t%s\t%s\t%s\t\n", e.Label(),
			e.MaxCapacity, e.TargetCapacity, e.Jobs, e.PeakLoad, e.PeakLoadShared, e.MeanLoad, e.Throttled, e.SingleJobExceptions,
			fmtSeconds(e.AdmissionWait.P50), fmtSeconds(e.AdmissionWait.P95), fmtSeconds(e.AdmissionWait.P99), fmtSeconds(e.AdmissionWait.Max))
	}
	return tw.Flush()
}

// timelineText is the last column of a timeline line: the tasks and
// workers of the entry, then its detail.
func timelineText(e sim.TimelineEntry) string {
	var b strings.Builder
	if e.Count > 0 {
		b.WriteString(strings.Join(e.Tasks, ", "))
		if more := e.Count - len(e.Tasks); more > 0 {
			fmt.Fprintf(&b, " and %d more", more)
		}
		if len(e.Workers) > 0 {
			b.WriteString(" on ")
			b.WriteString(strings.Join(e.Workers, ", "))
			if e.Count > len(e.Workers) {
				b.WriteString(", …")
			}
		}
	}
	if e.Detail != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(e.Detail)
	}
	return b.String()
}

// truncList shows the first n names of list, and how many more.
func truncList(list []string, n int) string {
	if len(list) <= n {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(list[:n], ", "), len(list)-n)
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

// fmtSeconds renders a duration in seconds compactly: 0.25s, 42s, 3m07s,
// 5h02m, 12d03h.
func fmtSeconds(s float64) string {
	if s == 0 {
		return "0s"
	}
	if s < 59.5 {
		return fmt.Sprintf("%.3gs", s)
	}
	if t := int64(math.Round(s)); t < 3600 {
		return fmt.Sprintf("%dm%02ds", t/60, t%60)
	}
	if t := int64(math.Round(s / 60)); t < 24*60 {
		return fmt.Sprintf("%dh%02dm", t/60, t%60)
	}
	t := int64(math.Round(s / 3600))
	return fmt.Sprintf("%dd%02dh", t/24, t%24)
}

// plural says "1 group", "3 groups".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
