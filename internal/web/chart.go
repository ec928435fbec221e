package web

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/control"
)

// palette colours the groups: distinct hues that stay readable on white,
// in a fixed order so a group keeps its colour across refreshes as long as
// the set of groups does not change.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

// colourOf returns the colour of the i-th group in sorted order.
func colourOf(i int) string { return palette[i%len(palette)] }

// lineChart is an SVG line chart laid out in Go: the template only writes
// the elements, so every number and name goes through html/template's
// escaping and no SVG is assembled from strings.
type lineChart struct {
	Width, Height int
	// The plot area inside the axes.
	Left, Top, Right, Bottom int
	YTicks                   []tick
	XTicks                   []tick
	Series                   []series
	Empty                    string // shown instead of lines when there is no data
	YLabel                   string
	Legend                   []legendItem
	// Note says how many groups were left out (maxChartGroups).
	Note string
}

// maxChartGroups bounds the groups drawn: a priority queue of 10,000 jobs
// has 10,000 groups, whose lines nobody can read and whose points would
// make the page megabytes. The busiest groups are drawn.
const maxChartGroups = 10

// busiest keeps the n groups of keys that ran the most slots at any point
// of hist (by name on ties), and says how many it left out.
func busiest(hist []control.HistoryPoint, keys map[string]int, n int) (map[string]int, int) {
	if len(keys) <= n {
		return keys, 0
	}
	peak := make(map[string]int, len(keys))
	for _, p := range hist {
		for _, g := range p.Groups {
			k := g.Queue + "/" + g.Group
			peak[k] = max(peak[k], g.Running, g.Target)
		}
	}
	all := make([]string, 0, len(keys))
	for k := range keys {
		all = append(all, k)
	}
	slices.SortFunc(all, func(a, b string) int { return cmp.Or(cmp.Compare(peak[b], peak[a]), strings.Compare(a, b)) })
	out := make(map[string]int, n)
	for _, k := range all[:n] {
		out[k] = keys[k]
	}
	return out, len(keys) - n
}

// legendItem names a line under the chart.
type legendItem struct {
	Name   string
	Colour string
	Dashed bool
}

type tick struct {
	Pos    float64
	Label  string
	Value  int
	Anchor string // text-anchor of the label: the ends stay inside the chart
}

// series is one line: a polyline per unbroken stretch (a target the policy
// stops setting breaks its line), and a dot at its last point so a single
// sample still shows.
type series struct {
	Name   string
	Colour string
	Dashed bool
	Lines  []string // polyline points, "x,y x,y …"
	LastX  float64
	LastY  float64
	Last   int
	HasDot bool
}

const (
	chartW = 760
	chartH = 260
)

// historyChart draws running slots (solid) and targets (dashed) per group
// over the snapshot's history. keys maps "queue/group" to the group's
// colour index.
func historyChart(hist []control.HistoryPoint, keys map[string]int) *lineChart {
	c := &lineChart{Width: chartW, Height: chartH, Left: 48, Top: 12, Right: chartW - 12, Bottom: chartH - 28, YLabel: "slots"}
	if len(hist) == 0 {
		c.Empty = "No cycle has run yet."
		c.YTicks = yTicks(c, 1)
		return c
	}
	keys, left := busiest(hist, keys, maxChartGroups)
	if left > 0 {
		c.Note = fmt.Sprintf("The %d busiest groups are drawn; %d more are not (the tables list them).", maxChartGroups, left)
	}
	maxY := 1
	for _, p := range hist {
		for _, g := range p.Groups {
			if _, ok := keys[g.Queue+"/"+g.Group]; ok {
				maxY = max(maxY, g.Running, g.Target)
			}
		}
	}
	t0, t1 := hist[0].At, hist[len(hist)-1].At
	span := t1.Sub(t0)
	x := func(t time.Time) float64 {
		if span <= 0 {
			return float64(c.Right)
		}
		return float64(c.Left) + float64(c.Right-c.Left)*float64(t.Sub(t0))/float64(span)
	}
	c.YTicks = yTicks(c, maxY)
	top := max(c.YTicks[len(c.YTicks)-1].Value, 1)
	y := func(v int) float64 {
		return float64(c.Bottom) - float64(c.Bottom-c.Top)*float64(v)/float64(top)
	}
	c.XTicks = xTicks(t0, t1, x)

	type acc struct {
		run, target series
		runPts      []string
		targetPts   []string
	}
	byKey := map[string]*acc{}
	order := make([]string, 0, len(keys))
	for k := range keys {
		order = append(order, k)
	}
	slices.SortFunc(order, func(a, b string) int { return cmp.Compare(keys[a], keys[b]) })
	for _, k := range order {
		col := colourOf(keys[k])
		c.Legend = append(c.Legend, legendItem{Name: k, Colour: col})
		byKey[k] = &acc{run: series{Name: k + " running", Colour: col}, target: series{Name: k + " target", Colour: col, Dashed: true}}
	}
	flush := func(s *series, pts *[]string) {
		if len(*pts) > 1 {
			s.Lines = append(s.Lines, strings.Join(*pts, " "))
		}
		*pts = nil
	}
	for _, p := range hist {
		seen := map[string]bool{}
		px := x(p.At)
		for _, g := range p.Groups {
			a, ok := byKey[g.Queue+"/"+g.Group]
			if !ok {
				continue
			}
			seen[g.Queue+"/"+g.Group] = true
			a.runPts = append(a.runPts, point(px, y(g.Running)))
			a.run.LastX, a.run.LastY, a.run.Last, a.run.HasDot = px, y(g.Running), g.Running, true
			if g.Target >= 0 {
				a.targetPts = append(a.targetPts, point(px, y(g.Target)))
				a.target.LastX, a.target.LastY, a.target.Last, a.target.HasDot = px, y(g.Target), g.Target, true
			} else {
				flush(&a.target, &a.targetPts)
			}
		}
		// A group absent from a sample had nothing running or waiting:
		// its line breaks there rather than joining across the gap.
		for k, a := range byKey {
			if !seen[k] {
				flush(&a.run, &a.runPts)
				flush(&a.target, &a.targetPts)
			}
		}
	}
	for _, k := range order {
		a := byKey[k]
		flush(&a.run, &a.runPts)
		flush(&a.target, &a.targetPts)
		c.Series = append(c.Series, a.target, a.run)
	}
	return c
}

func point(x, y float64) string {
	return strconv.FormatFloat(x, 'f', 1, 64) + "," + strconv.FormatFloat(y, 'f', 1, 64)
}

// yTicks chooses a round step so the axis has at most five steps and its
// top is at or above maxY.
func yTicks(c *lineChart, maxY int) []tick {
	step := 1
	for _, s := range []int{1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10000} {
		step = s
		if (maxY+s-1)/s <= 5 {
			break
		}
	}
	for maxY > step*5 {
		step *= 2
	}
	top := ((maxY + step - 1) / step) * step
	var out []tick
	for v := 0; v <= top; v += step {
		pos := float64(c.Bottom) - float64(c.Bottom-c.Top)*float64(v)/float64(top)
		out = append(out, tick{Pos: pos, Label: strconv.Itoa(v), Value: v})
	}
	return out
}

// xTicks labels the time axis at its ends and, when the span allows,
// in between, as clock times (UTC, as the API reports times).
func xTicks(t0, t1 time.Time, x func(time.Time) float64) []tick {
	span := t1.Sub(t0)
	if span <= 0 {
		return []tick{{Pos: x(t1), Label: t1.UTC().Format("15:04:05"), Anchor: "end"}}
	}
	const n = 4
	out := make([]tick, 0, n+1)
	for i := 0; i <= n; i++ {
		t := t0.Add(span * time.Duration(i) / n)
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case n:
			anchor = "end"
		}
		out = append(out, tick{Pos: x(t), Label: t.UTC().Format("15:04:05"), Anchor: anchor})
	}
	return out
}

// percent formats a share for a bar's width in CSS.
func percent(v, of float64) string {
	if of <= 0 {
		return "0%"
	}
	p := 100 * v / of
	p = min(max(p, 0), 100)
	return fmt.Sprintf("%.1f%%", p)
}
