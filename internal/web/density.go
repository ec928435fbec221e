package web

import (
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// DensitySource reports the task/worker density series of seed 002, as GET
// /v1/density serves it. control.Controller is one; New uses it unless
// Options.Density names another source (tests, a replayed series).
type DensitySource interface {
	Density() api.Density
}

// maxDensityPoints bounds the buckets drawn: the newest ones, four hours
// at the default one-minute bucket; the API serves the whole series.
const maxDensityPoints = 240

// densityChart draws the density series: tasks submitted and started per
// bucket, and workers busy and enabled (dashed) at each bucket's end.
func densityChart(d api.Density) *lineChart {
	if n := len(d.Buckets); n > maxDensityPoints {
		d.Buckets = d.Buckets[n-maxDensityPoints:]
	}
	c := &lineChart{Width: chartW, Height: chartH, Left: 48, Top: 12, Right: chartW - 12, Bottom: chartH - 28, YLabel: "per bucket"}
	if len(d.Buckets) == 0 {
		c.Empty = "No density samples yet."
		c.YTicks = yTicks(c, 1)
		return c
	}
	maxY := 1
	for _, b := range d.Buckets {
		maxY = max(maxY, b.Submitted, b.Started, b.ActiveWorkers, b.EnabledWorkers)
	}
	c.YTicks = yTicks(c, maxY)
	top := max(c.YTicks[len(c.YTicks)-1].Value, 1)
	t0, t1 := d.Buckets[0].Start, d.Buckets[len(d.Buckets)-1].Start
	span := t1.Sub(t0)
	x := func(t time.Time) float64 {
		if span <= 0 {
			return float64(c.Right)
		}
		return float64(c.Left) + float64(c.Right-c.Left)*float64(t.Sub(t0))/float64(span)
	}
	y := func(v int) float64 { return float64(c.Bottom) - float64(c.Bottom-c.Top)*float64(v)/float64(top) }
	c.XTicks = xTicks(t0, t1, x)
	lines := []struct {
		name   string
		colour string
		dashed bool
		value  func(api.DensityBucket) int
	}{
		{"tasks submitted", palette[3], false, func(b api.DensityBucket) int { return b.Submitted }},
		{"tasks started", palette[0], false, func(b api.DensityBucket) int { return b.Started }},
		{"workers busy", palette[2], false, func(b api.DensityBucket) int { return b.ActiveWorkers }},
		{"workers enabled", palette[2], true, func(b api.DensityBucket) int { return b.EnabledWorkers }},
	}
	for _, l := range lines {
		s := series{Name: l.name, Colour: l.colour, Dashed: l.dashed, HasDot: true}
		pts := make([]string, 0, len(d.Buckets))
		for _, b := range d.Buckets {
			s.LastX, s.LastY, s.Last = x(b.Start), y(l.value(b)), l.value(b)
			pts = append(pts, point(s.LastX, s.LastY))
		}
		if len(pts) > 1 {
			s.Lines = []string{strings.Join(pts, " ")}
		}
		c.Series = append(c.Series, s)
		c.Legend = append(c.Legend, legendItem{Name: l.name, Colour: l.colour, Dashed: l.dashed})
	}
	return c
}
