package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/api"
)

func newUsageCmd(f *clientFlags) *cobra.Command {
	var since, until, by string
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Show what each share and submitter used over a period (slot-, CPU- and GPU-hours)",
		Long: `Show what the attempts of each share and of each submitter used over a period,
from the server's durable history (as Slurm's sacct and sshare do): slot-hours
(wall time), CPU-hours (what the workers measured) and GPU-hours (wall time
times the GPUs a task asked for). An attempt counts for the part of its run
inside the period; attempts still running count once they end.

--since and --until take a time (2026-03-01, 2026-03-01T08:00:00Z) or a
duration before now (36h, 7d, 2w); the default is the last 7 days.`,
		Example: `  allot usage
  allot usage --since 30d --by share
  allot usage --since 2026-03-01 --until 2026-04-01 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			now := time.Now()
			var from, to time.Time
			if until != "" {
				if to, err = parseWhen(until, now); err != nil {
					return fmt.Errorf("--until: %w", err)
				}
			}
			if since != "" {
				base := now
				if !to.IsZero() {
					base = to
				}
				if from, err = parseWhen(since, base); err != nil {
					return fmt.Errorf("--since: %w", err)
				}
			}
			var shares, subs bool
			for _, b := range strings.Split(by, ",") {
				switch strings.TrimSpace(b) {
				case "share":
					shares = true
				case "submitter":
					subs = true
				default:
					return fmt.Errorf("--by %q: give share, submitter or both (share,submitter)", by)
				}
			}
			u, err := c.Usage(cmd.Context(), from, to)
			if err != nil {
				return err
			}
			return f.print(cmd.OutOrStdout(), u, func(w io.Writer) error { return usageTable(w, u, f, shares, subs) })
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "start of the period: a time or a duration before --until (default 7d)")
	cmd.Flags().StringVar(&until, "until", "", "end of the period: a time or a duration before now (default now)")
	cmd.Flags().StringVar(&by, "by", "share,submitter", "tables to print: share, submitter, or both")
	return cmd
}

// usageTable prints the usage per share and per submitter, each table with
// a total line; -o wide adds the number of attempts.
func usageTable(w io.Writer, u api.Usage, f *clientFlags, shares, subs bool) error {
	if !f.noHeaders {
		fmt.Fprintf(w, "usage from %s to %s\n\n", u.Since.Local().Format(time.RFC3339), u.Until.Local().Format(time.RFC3339))
	}
	hours := func(h float64) string { return strconv.FormatFloat(h, 'f', 2, 64) }
	part := func(title string, rows []api.UsageRow) error {
		t := f.newTab(w)
		t.header([]string{title, "SLOT-HOURS", "CPU-HOURS", "GPU-HOURS"}, "ATTEMPTS")
		for _, r := range append(rows, api.UsageRow{Name: "TOTAL", Attempts: u.Total.Attempts, SlotHours: u.Total.SlotHours,
			CPUHours: u.Total.CPUHours, GPUHours: u.Total.GPUHours}) {
			name := r.Name
			if name == "" {
				name = "-"
			}
			t.row([]string{name, hours(r.SlotHours), hours(r.CPUHours), hours(r.GPUHours)}, fmt.Sprint(r.Attempts))
		}
		return t.flush()
	}
	if shares {
		if err := part("SHARE", u.Shares); err != nil {
			return err
		}
	}
	if shares && subs {
		fmt.Fprintln(w)
	}
	if subs {
		return part("SUBMITTER", u.Submitters)
	}
	return nil
}

// parseWhen reads a point in time: RFC 3339, a date (local midnight), or a
// duration before base (90m, 36h, 7d, 2w).
func parseWhen(s string, base time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if s == "now" {
		return base, nil
	}
	unit := time.Duration(0)
	switch {
	case strings.HasSuffix(s, "d"):
		unit = 24 * time.Hour
	case strings.HasSuffix(s, "w"):
		unit = 7 * 24 * time.Hour
	}
	if unit != 0 {
		n, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSuffix(s, "d"), "w"), 64)
		if err == nil && n >= 0 {
			return base.Add(-time.Duration(n * float64(unit))), nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return base.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither a time (2026-03-01, 2026-03-01T08:00:00Z) nor a duration before now (36h, 7d, 2w)", s)
}
