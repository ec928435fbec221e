package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/allot-sched/allot/internal/sim"
)

// Chart geometry, in SVG user units.
const (
	svgW, svgH          = 960, 560
	plotL, plotR        = 70, 740 // main and Jain panels share the x range
	mainT, mainB        = 60, 380
	jainT, jainB        = 420, 500
	legendX             = 760
	maxLegendGroups     = 9 // more groups than this are merged into "other"
	svgTargetTicksX     = 8
	svgTargetTicksY     = 6
	svgLegendLabelRunes = 22
)

// palette is the colour cycle of the groups (Tableau 10).
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// WriteSVG draws running slots per group over time as a stacked area, with
// the capacity line, axes, a legend and a title, and below it Jain's index
// over time with the distance from the max-min fair allocation
// (Fairness.Ideal). The busiest groups are drawn; beyond nine the rest are merged
// into "other". It uses only the standard library.
func WriteSVG(w io.Writer, r *sim.Result) error {
	bw := bufio.NewWriter(w)
	series := chartSeries(r)
	s := r.Series
	n := len(s.T)
	span := 0.0
	if n > 0 {
		span = s.T[n-1]
	}
	unit, unitName := timeUnit(span)
	xmax := math.Max(span/unit, 1e-9)
	x := func(t float64) float64 { return plotL + (t/unit)/xmax*(plotR-plotL) }

	ymaxData := float64(r.Slots)
	for _, b := range s.Busy {
		ymaxData = math.Max(ymaxData, float64(b))
	}
	ystep := niceStep(math.Max(ymaxData, 1), svgTargetTicksY)
	ymax := math.Ceil(math.Max(ymaxData, 1)/ystep) * ystep
	y := func(v float64) float64 { return mainB - v/ymax*(mainB-mainT) }
	jy := func(v float64) float64 { return jainB - v*(jainB-jainT) }

	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", svgW, svgH, svgW, svgH)
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", svgW, svgH)
	var queues []string
	for _, q := range r.Queues {
		queues = append(queues, q.Name+" ("+q.Policy+")")
	}
	fmt.Fprintf(bw, `<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", plotL,
		esc(fmt.Sprintf("Running slots per %s — %s", r.GroupBy, strings.Join(queues, ", "))))
	fmt.Fprintf(bw, `<text x="%d" y="44" fill="#555">%s</text>`+"\n", plotL,
		esc(fmt.Sprintf("%d workers, %d slots · %s · makespan %s · utilisation %s · Jain %.3f (time-averaged), %.3f (mean over time)",
			r.Workers, r.Slots, r.Outcome, fmtSeconds(r.MakespanSeconds), pct(r.Utilisation),
			r.Fairness.JainTimeAveraged, r.Fairness.JainMeanOverTime)))

	// Grid and y axis of the main panel.
	for i := 0; float64(i)*ystep <= ymax+ystep/2; i++ {
		v := float64(i) * ystep
		fmt.Fprintf(bw, `<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#e5e5e5"/>`+"\n", plotL, plotR, f1(y(v)), f1(y(v)))
		fmt.Fprintf(bw, `<text x="%d" y="%s" text-anchor="end">%s</text>`+"\n", plotL-6, f1(y(v)+4), num(v))
	}
	fmt.Fprintf(bw, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">running slots</text>`+"\n", (mainT+mainB)/2)

	// Stacked areas, first group at the bottom.
	if n > 0 {
		cum := make([]float64, n)
		for i, sr := range series {
			var b strings.Builder
			for k := 0; k < n; k++ {
				fmt.Fprintf(&b, "%s,%s ", f1(x(s.T[k])), f1(y(cum[k]+sr.values[k])))
			}
			for k := n - 1; k >= 0; k-- {
				fmt.Fprintf(&b, "%s,%s ", f1(x(s.T[k])), f1(y(cum[k])))
				cum[k] += sr.values[k]
			}
			fmt.Fprintf(bw, `<polygon fill="%s" fill-opacity="0.85" stroke="none" points="%s"><title>%s</title></polygon>`+"\n",
				palette[i%len(palette)], strings.TrimSpace(b.String()), esc(sr.label))
		}
	}
	if r.Slots > 0 {
		fmt.Fprintf(bw, `<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#333" stroke-dasharray="6 4"/>`+"\n", plotL, plotR, f1(y(float64(r.Slots))), f1(y(float64(r.Slots))))
		fmt.Fprintf(bw, `<text x="%d" y="%s" text-anchor="end" fill="#333">capacity %d</text>`+"\n", plotR-4, f1(y(float64(r.Slots))+14), r.Slots)
	}
	fmt.Fprintf(bw, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", plotL, mainT, plotR-plotL, mainB-mainT)

	// Jain panel.
	for _, v := range []float64{0, 0.5, 1} {
		fmt.Fprintf(bw, `<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#e5e5e5"/>`+"\n", plotL, plotR, f1(jy(v)), f1(jy(v)))
		fmt.Fprintf(bw, `<text x="%d" y="%s" text-anchor="end">%s</text>`+"\n", plotL-6, f1(jy(v)+4), num(v))
	}
	fmt.Fprintf(bw, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">Jain · error</text>`+"\n", (jainT+jainB)/2)
	// Jain's index, and the distance from the max-min fair allocation
	// (a share of the pool, clamped at 1), over the samples with demand.
	lines := []struct {
		vals   []float64
		colour string
		dash   string
		label  string
	}{
		{s.Jain, "#4e79a7", "", "Jain"},
		{s.IdealError, "#e15759", "", "error vs max-min fair"},
		{s.IdealErrorWindow, "#e15759", ` stroke-dasharray="4 3"`, "error over decay window"},
	}
	ly := jainT + 12
	for _, ln := range lines {
		if len(ln.vals) != n {
			continue
		}
		var path strings.Builder
		pen := false
		for k := 0; k < n; k++ {
			if s.Demand[k] == 0 {
				pen = false
				continue
			}
			cmd := "L"
			if !pen {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%s,%s ", cmd, f1(x(s.T[k])), f1(jy(math.Min(ln.vals[k], 1))))
			pen = true
		}
		if path.Len() > 0 {
			fmt.Fprintf(bw, `<path d="%s" fill="none" stroke="%s" stroke-width="1.5"%s/>`+"\n", strings.TrimSpace(path.String()), ln.colour, ln.dash)
		}
		fmt.Fprintf(bw, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", legendX, legendX+16, ly-4, ly-4, ln.colour, ln.dash)
		fmt.Fprintf(bw, `<text x="%d" y="%d">%s</text>`+"\n", legendX+22, ly, esc(ln.label))
		ly += 16
	}
	fmt.Fprintf(bw, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", plotL, jainT, plotR-plotL, jainB-jainT)

	// X axis, under both panels.
	xstep := niceStep(xmax, svgTargetTicksX)
	for i := 0; float64(i)*xstep <= xmax*(1+1e-9); i++ {
		v := float64(i) * xstep
		px := f1(plotL + v/xmax*(plotR-plotL))
		fmt.Fprintf(bw, `<line x1="%s" x2="%s" y1="%d" y2="%d" stroke="#e5e5e5"/>`+"\n", px, px, mainT, mainB)
		fmt.Fprintf(bw, `<line x1="%s" x2="%s" y1="%d" y2="%d" stroke="#333"/>`+"\n", px, px, jainB, jainB+5)
		fmt.Fprintf(bw, `<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", px, jainB+18, num(v))
	}
	fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="middle">time (%s)</text>`+"\n", (plotL+plotR)/2, jainB+40, unitName)

	// Legend.
	fmt.Fprintf(bw, `<text x="%d" y="%d" font-weight="bold">%s (busy share)</text>`+"\n", legendX, mainT+4, esc(r.GroupBy))
	for i := len(series) - 1; i >= 0; i-- { // top of the stack first
		sr := series[i]
		row := len(series) - 1 - i
		ly := mainT + 16 + row*20
		fmt.Fprintf(bw, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`+"\n", legendX, ly, palette[i%len(palette)])
		fmt.Fprintf(bw, `<text x="%d" y="%d">%s</text>`+"\n", legendX+18, ly+10, esc(fmt.Sprintf("%s (%s)", truncate(sr.label, svgLegendLabelRunes), pct(sr.share))))
	}
	fmt.Fprintln(bw, `</svg>`)
	return bw.Flush()
}

// svgSeries is one stacked area of the chart: a group, or the groups
// merged into "other".
type svgSeries struct {
	label  string
	share  float64
	values []float64
}

// chartSeries picks the groups to draw: all when they are few, else the
// busiest (ties by key) plus "other", in key order with "other" last.
func chartSeries(r *sim.Result) []svgSeries {
	n := len(r.Series.T)
	idx := make([]int, len(r.Groups))
	for i := range idx {
		idx[i] = i
	}
	var rest []int
	if len(idx) > maxLegendGroups {
		sort.SliceStable(idx, func(a, b int) bool { return r.Groups[idx[a]].SlotSeconds > r.Groups[idx[b]].SlotSeconds })
		rest = idx[maxLegendGroups-1:]
		idx = idx[:maxLegendGroups-1]
		sort.Ints(idx)
	}
	out := make([]svgSeries, 0, len(idx)+1)
	for _, i := range idx {
		g := r.Groups[i]
		v := make([]float64, n)
		for k := range v {
			v[k] = float64(g.Running[k])
		}
		out = append(out, svgSeries{label: g.Key, share: g.BusyShare, values: v})
	}
	if len(rest) > 0 {
		sort.Ints(rest)
		o := svgSeries{label: fmt.Sprintf("other (%d groups)", len(rest)), values: make([]float64, n)}
		for _, i := range rest {
			g := r.Groups[i]
			o.share += g.BusyShare
			for k := range o.values {
				o.values[k] += float64(g.Running[k])
			}
		}
		out = append(out, o)
	}
	return out
}

// timeUnit picks the x axis unit for a span in seconds.
func timeUnit(span float64) (float64, string) {
	switch {
	case span >= 2*86400:
		return 86400, "days"
	case span >= 2*3600:
		return 3600, "hours"
	case span >= 2*60:
		return 60, "minutes"
	}
	return 1, "seconds"
}

// niceStep returns a tick step of 1, 2 or 5 × 10^k giving about target
// ticks over span.
func niceStep(span float64, target int) float64 {
	raw := span / float64(target)
	if raw <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// num formats an axis label without trailing zeros.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64) }

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

func esc(s string) string { return xmlEscaper.Replace(s) }
