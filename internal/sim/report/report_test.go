package report_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/sim"
	"github.com/allot-sched/allot/internal/sim/report"
	"github.com/allot-sched/allot/internal/sim/simtest"
)

// The shared fixtures (package simtest), under the short names the tests use.
var (
	t0      = simtest.T0
	fifo    = simtest.FIFO
	workers = simtest.Workers
	job     = simtest.Job
	task    = simtest.Task
)

const sec = time.Second

func mustRun(t *testing.T, in sim.Input, opt sim.Options) *sim.Result {
	t.Helper()
	res, err := sim.Run(in, opt)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// A run that stalls lists its stuck jobs with the reason they wait.
func TestTextGivesThePendingReasonOfAStalledRun(t *testing.T) {
	gpu := task("train", 10*sec)
	gpu.Resources = model.Resources{GPUs: 1}
	jobs := []model.Job{
		job("ok", "x", 0, task("t", 10*sec)),
		job("gpu", "y", 5*sec, gpu, task("eval", sec, "train")),
	}
	for _, opt := range []sim.Options{{}, {CycleEvery: 10 * sec}, {CycleEvery: 10 * sec, TickOnly: true}} {
		opt.GroupBy = sim.GroupByShare
		t.Run(fmt.Sprintf("cycleEvery=%s,tickOnly=%v", opt.CycleEvery, opt.TickOnly), func(t *testing.T) {
			res := mustRun(t, sim.Input{Config: fifo(), Workers: workers(2), Jobs: jobs, Start: t0}, opt)
			if res.Outcome != "stalled" {
				t.Fatalf("outcome %s, want stalled", res.Outcome)
			}
			var text bytes.Buffer
			if err := report.WriteText(&text, res); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), "unschedulable: needs") {
				t.Errorf("text does not give the pending reason:\n%s", text.String())
			}
		})
	}
}

// mixedInput is a workload exercising every path: several shares, DAGs,
// retries, failures, zero-length tasks and arrivals over time.
func mixedInput() sim.Input {
	var jobs []model.Job
	for i := 0; i < 60; i++ {
		share := []string{"red", "green", "blue"}[i%3]
		n := 1 + i%4
		var tasks []model.Task
		for k := 0; k < n; k++ {
			tk := task(fmt.Sprintf("t%d", k), time.Duration((i*7+k*13)%40)*sec)
			if k > 0 && i%5 == 0 {
				tk.Needs = []string{"t0"}
			}
			if i%11 == 0 && k == 0 {
				tk.Fails, tk.MaxAttempts = 1+i%2, 2
			}
			tasks = append(tasks, tk)
		}
		jobs = append(jobs, job(fmt.Sprintf("j%02d", i), share, time.Duration(i*3)*sec, tasks...))
	}
	return sim.Input{Config: fifo(), Workers: workers(4), Jobs: jobs, Start: t0}
}

func TestSameInputGivesIdenticalOutput(t *testing.T) {
	render := func() (js, svg, text []byte) {
		res, err := sim.Run(mixedInput(), sim.Options{GroupBy: sim.GroupByShare})
		if err != nil {
			t.Fatal(err)
		}
		var a, b, c bytes.Buffer
		if err := report.WriteJSON(&a, res); err != nil {
			t.Fatal(err)
		}
		if err := report.WriteSVG(&b, res); err != nil {
			t.Fatal(err)
		}
		if err := report.WriteText(&c, res); err != nil {
			t.Fatal(err)
		}
		return a.Bytes(), b.Bytes(), c.Bytes()
	}
	j1, s1, x1 := render()
	for i := 0; i < 3; i++ {
		j2, s2, x2 := render()
		if !bytes.Equal(j1, j2) || !bytes.Equal(s1, s2) || !bytes.Equal(x1, x2) {
			t.Fatal("two runs of the same input differ")
		}
	}
	// The workload is not trivial: it has every kind of event.
	res, _ := sim.Run(mixedInput(), sim.Options{GroupBy: sim.GroupByShare})
	if c := res.Counts; c.Retries == 0 || c.FailedTasks == 0 || c.DependencyFailures == 0 || len(res.Groups) != 3 {
		t.Errorf("mixed workload lacks coverage: %+v, %d groups", c, len(res.Groups))
	}
	if !bytes.HasPrefix(s1, []byte("<svg")) || !bytes.Contains(s1, []byte("<polygon")) || !bytes.Contains(s1, []byte("green")) {
		t.Errorf("SVG lacks a stacked area or the legend")
	}
}

func TestDensityRendersAsJSONAndSVG(t *testing.T) {
	jobs := []model.Job{
		job("a", "", 0, task("x", 90*time.Second), task("y", 30*time.Second)),
		job("b", "", 150*time.Second, task("z", 10*time.Second)),
	}
	res := mustRun(t, sim.Input{Config: fifo(), Workers: workers(2), Jobs: jobs, Start: t0}, sim.Options{DensityBucket: time.Minute})
	d := res.Density
	if d == nil || len(d.Buckets) != 3 {
		t.Fatalf("density %+v", d)
	}
	var buf bytes.Buffer
	if err := report.WriteDensityJSON(&buf, d); err != nil {
		t.Fatal(err)
	}
	var back sim.Density
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back.Buckets) != 3 {
		t.Fatalf("round trip: %v", err)
	}
	buf.Reset()
	if err := report.WriteDensitySVG(&buf, d, "density"); err != nil || !strings.HasPrefix(buf.String(), "<svg") || !strings.Contains(buf.String(), "active workers") {
		t.Fatalf("svg: %v", err)
	}
}

// The JSON carries the distance from the max-min fair allocation: the
// summary under fairness.ideal and the series beside the others.
func TestJSONHasTheIdealFairness(t *testing.T) {
	res := mustRun(t, sim.Input{Config: fifo(), Workers: workers(2), Start: t0,
		Jobs: []model.Job{job("j1", "u1", 0, task("a", 10*sec), task("b", 10*sec)), job("j2", "u2", sec, task("a", 10*sec))}}, sim.Options{})
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, res); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Fairness struct {
			Ideal map[string]any `json:"ideal"`
		} `json:"fairness"`
		Series map[string]any `json:"series"`
	}
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"groups", "meanError", "p95Error", "maxError", "floorMeanError", "demandSeconds"} {
		if _, ok := back.Fairness.Ideal[k]; !ok {
			t.Errorf("fairness.ideal.%s missing: %v", k, back.Fairness.Ideal)
		}
	}
	if _, ok := back.Series["idealError"]; !ok {
		t.Errorf("series.idealError missing")
	}
	var text bytes.Buffer
	if err := report.WriteText(&text, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Ideal:") {
		t.Errorf("text has no Ideal line:\n%s", text.String())
	}
}
