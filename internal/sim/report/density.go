package report

import (
	"bufio"
	"fmt"
	"io"
	"math"

	"github.com/allot-sched/allot/internal/sim"
)

// Density chart geometry.
const (
	densW, densH   = 960, 420
	densL, densR   = 70, 820
	densT, densB   = 60, 340
	densLegendY    = 392
	densTargetTick = 6
)

// WriteDensitySVG draws the density series d: submitted tasks per bucket as
// bars against the left axis, and busy and enabled workers as lines against
// the right axis. title heads the chart.
func WriteDensitySVG(w io.Writer, d *sim.Density, title string) error {
	bw := bufio.NewWriter(w)
	n := len(d.Buckets)
	span := float64(n) * d.BucketSeconds
	unit, unitName := timeUnit(span)
	xmax := math.Max(span/unit, 1e-9)
	x := func(t float64) float64 { return densL + (t/unit)/xmax*(densR-densL) }
	maxSub, maxWork := 1.0, 1.0
	for _, b := range d.Buckets {
		maxSub = math.Max(maxSub, float64(b.Submitted))
		maxWork = math.Max(maxWork, float64(max(b.PeakActiveWorkers, b.EnabledWorkers)))
	}
	sstep := niceStep(maxSub, densTargetTick)
	smax := math.Ceil(maxSub/sstep) * sstep
	wstep := niceStep(maxWork, densTargetTick)
	wmax := math.Ceil(maxWork/wstep) * wstep
	ys := func(v float64) float64 { return densB - v/smax*(densB-densT) }
	yw := func(v float64) float64 { return densB - v/wmax*(densB-densT) }

	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", densW, densH, densW, densH)
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", densW, densH)
	fmt.Fprintf(bw, `<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", densL, esc(title))
	fmt.Fprintf(bw, `<text x="%d" y="44" fill="#555">%s</text>`+"\n", densL,
		esc(fmt.Sprintf("task submission density and active workers per %s bucket", fmtSeconds(d.BucketSeconds))))
	for i := 0; float64(i)*sstep <= smax+sstep/2; i++ {
		v := float64(i) * sstep
		fmt.Fprintf(bw, `<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#e5e5e5"/>`+"\n", densL, densR, f1(ys(v)), f1(ys(v)))
		fmt.Fprintf(bw, `<text x="%d" y="%s" text-anchor="end">%s</text>`+"\n", densL-6, f1(ys(v)+4), num(v))
	}
	for i := 0; float64(i)*wstep <= wmax+wstep/2; i++ {
		v := float64(i) * wstep
		fmt.Fprintf(bw, `<text x="%d" y="%s">%s</text>`+"\n", densR+6, f1(yw(v)+4), num(v))
	}
	fmt.Fprintf(bw, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">tasks submitted per bucket</text>`+"\n", (densT+densB)/2)
	fmt.Fprintf(bw, `<text transform="translate(%d %d) rotate(90)" text-anchor="middle">workers</text>`+"\n", densR+44, (densT+densB)/2)
	bar := math.Max((densR-densL)/math.Max(float64(n), 1)-1, 0.5)
	for _, b := range d.Buckets {
		if b.Submitted == 0 {
			continue
		}
		fmt.Fprintf(bw, `<rect x="%s" y="%s" width="%s" height="%s" fill="#bab0ac"><title>%s</title></rect>`+"\n",
			f1(x(b.T)), f1(ys(float64(b.Submitted))), f1(bar), f1(densB-ys(float64(b.Submitted))),
			esc(fmt.Sprintf("%s: %d submitted, %d started", fmtSeconds(b.T), b.Submitted, b.Started)))
	}
	line := func(color, dash string, v func(sim.DensityBucket) int) {
		var p []byte
		for i, b := range d.Buckets {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			p = fmt.Appendf(p, "%s%s,%s L%s,%s ", cmd, f1(x(b.T)), f1(yw(float64(v(b)))), f1(x(b.T+d.BucketSeconds)), f1(yw(float64(v(b)))))
		}
		if len(p) > 0 {
			fmt.Fprintf(bw, `<path d="%s" fill="none" stroke="%s" stroke-width="1.5"%s/>`+"\n", p[:len(p)-1], color, dash)
		}
	}
	line("#59a14f", ` stroke-dasharray="6 4"`, func(b sim.DensityBucket) int { return b.EnabledWorkers })
	line("#4e79a7", "", func(b sim.DensityBucket) int { return b.ActiveWorkers })
	fmt.Fprintf(bw, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", densL, densT, densR-densL, densB-densT)
	xstep := niceStep(xmax, 8)
	for i := 0; float64(i)*xstep <= xmax*(1+1e-9); i++ {
		v := float64(i) * xstep
		px := f1(densL + v/xmax*(densR-densL))
		fmt.Fprintf(bw, `<line x1="%s" x2="%s" y1="%d" y2="%d" stroke="#333"/>`+"\n", px, px, densB, densB+5)
		fmt.Fprintf(bw, `<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", px, densB+18, num(v))
	}
	fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="middle">time (%s)</text>`+"\n", (densL+densR)/2, densB+36, unitName)
	for i, l := range []struct{ color, label string }{{"#bab0ac", "submitted tasks (left axis)"}, {"#4e79a7", "active workers (right axis)"}, {"#59a14f", "enabled workers (right axis)"}} {
		lx := densL + i*240
		fmt.Fprintf(bw, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`+"\n", lx, densLegendY, l.color)
		fmt.Fprintf(bw, `<text x="%d" y="%d">%s</text>`+"\n", lx+18, densLegendY+10, l.label)
	}
	fmt.Fprintln(bw, `</svg>`)
	return bw.Flush()
}
