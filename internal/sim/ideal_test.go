package sim

import (
	"math"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/sim/simtest"
)

// The error is weighed by how long each state lasts, only while some group
// has demand, and p95 is the smallest error the run stays at or below for
// 95% of that time.
func TestIdealErrorIsTimeWeighted(t *testing.T) {
	f := newFairTrack(fairGroups{desc: "test"}, 4)
	a, b := f.group("a", 1), f.group("b", 1)
	at := func(s int) int64 { return int64(s) * int64(time.Second) }
	f.addRunning(a, 4) // a alone: its demand is the ideal
	f.instant(at(0))
	f.addWaiting(b, 4) // b waits while a holds everything: ideal 2/2, error (2+2)/4
	f.instant(at(10))
	f.addRunning(a, -2) // 2 and 2: error 0
	f.addWaiting(b, -2)
	f.addRunning(b, 2)
	f.instant(at(20))
	f.addRunning(a, -2) // nothing left: the last 10 s do not count
	f.addRunning(b, -2)
	f.addWaiting(b, -2)
	f.instant(at(100))
	got := f.result(at(110))
	want := IdealFairness{Groups: "test", MeanError: 0.1, P95Error: 1, MaxError: 1, DemandSeconds: 100}
	if math.Abs(got.MeanError-want.MeanError) > 1e-12 || got.P95Error != want.P95Error || got.MaxError != want.MaxError ||
		got.DemandSeconds != want.DemandSeconds || got.Groups != want.Groups || got.Window != nil {
		t.Fatalf("result = %+v, want %+v", got, want)
	}
	errs, _ := f.seriesAt([]int64{at(5), at(10), at(15), at(20), at(105)})
	if wantS := []float64{0, 1, 1, 0, 0}; !equalFloats(errs, wantS) {
		t.Fatalf("series = %v, want %v", errs, wantS)
	}

	// 95% of the time at error 0 gives p95 0.
	f = newFairTrack(fairGroups{desc: "test"}, 4)
	a, b = f.group("a", 1), f.group("b", 1)
	f.addRunning(a, 4)
	f.addWaiting(b, 4)
	f.instant(at(0))
	f.addRunning(a, -2)
	f.addWaiting(b, -2)
	f.addRunning(b, 2)
	f.instant(at(5))
	if got := f.result(at(100)); got.P95Error != 0 || math.Abs(got.MeanError-0.05) > 1e-12 {
		t.Fatalf("result = %+v, want p95 0 and mean 0.05", got)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			return false
		}
	}
	return true
}

// A fairshare run with weights: one share of weight factor 0.5 (weight 2)
// and one of 1 on 3 slots; both always have more work than the pool. The
// policy serves 2:1, the ideal, so the error is 0 once both run; the
// window measure is reported for a decay window only.
func TestIdealFairnessOfAFairshareRun(t *testing.T) {
	half := 0.5
	cfg := func(decay int) engine.Config {
		return engine.Config{Queues: []engine.QueueConfig{{Name: "default", Policy: policy.Config{Kind: fairshare.Name,
			Settings: &fairshare.Config{ShareDecaySeconds: decay, Shares: []fairshare.ShareWeight{{Share: "a", WeightFactor: &half}, {Share: "b"}}}}}}}
	}
	var tasks []model.Task
	for i := range 30 {
		tasks = append(tasks, simtest.Task(string(rune('a'+i%26))+string(rune('0'+i/26)), 10*time.Second))
	}
	jobs := []model.Job{simtest.Job("ja", "a", 0, tasks...), simtest.Job("jb", "b", 0, tasks...)}
	res, err := Run(Input{Config: cfg(0), Workers: simtest.Workers(3), Jobs: jobs, Start: simtest.T0}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Fairness.Ideal
	if id.Groups != "shares, weight 1/weightFactor" || id.Window != nil || id.DemandSeconds != res.MakespanSeconds {
		t.Fatalf("ideal = %+v (makespan %g)", id, res.MakespanSeconds)
	}
	if id.MeanError > 0.2 || id.MaxError > 1 {
		t.Fatalf("ideal = %+v: fairshare with both shares busy should stay near the 2:1 ideal", id)
	}
	if len(res.Series.IdealError) != len(res.Series.T) || res.Series.IdealErrorWindow != nil {
		t.Fatalf("series: %d errors for %d samples, window %v", len(res.Series.IdealError), len(res.Series.T), res.Series.IdealErrorWindow)
	}

	res, err = Run(Input{Config: cfg(60), Workers: simtest.Workers(3), Jobs: jobs, Start: simtest.T0}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w := res.Fairness.Ideal.Window; w == nil || w.DecaySeconds != 60 || len(res.Series.IdealErrorWindow) != len(res.Series.T) {
		t.Fatalf("window = %+v, series %d", w, len(res.Series.IdealErrorWindow))
	}
}

// FIFO on shares with equal weights: a share that arrives second waits for
// the first share's whole job, so the error is large while both wait.
func TestIdealFairnessOfFIFOMeasuresShares(t *testing.T) {
	var tasks []model.Task
	for i := range 4 {
		tasks = append(tasks, simtest.Task(string(rune('a'+i)), 10*time.Second))
	}
	jobs := []model.Job{simtest.Job("j1", "u1", 0, tasks...), simtest.Job("j2", "u2", time.Second, tasks...)}
	res, err := Run(Input{Config: simtest.FIFO(), Workers: simtest.Workers(2), Jobs: jobs, Start: simtest.T0}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 0–1 s: u1 alone (error 0). 1–20 s: u1 runs 2, ideal 1/1: error 1.
	// 20–40 s: u2 alone: 0. Mean 19/40.
	id := res.Fairness.Ideal
	if id.Groups != "shares, equal weights" || math.Abs(id.MeanError-19.0/40) > 1e-9 || id.P95Error != 1 || id.DemandSeconds != 40 {
		t.Fatalf("ideal = %+v", id)
	}
}

// Three groups of equal weight want 2 slots each of 4: the ideal is 4/3
// each; whole slots can at best run 2, 1, 1, an error of 2/3+1/3+1/3 = 4/3.
func TestWholeSlotsErrorIsTheIntegerFloor(t *testing.T) {
	f := newFairTrack(fairGroups{desc: "test"}, 4)
	for _, k := range []string{"a", "b", "c"} {
		f.addWaiting(f.group(k, 1), 2)
	}
	f.instant(0)
	if got := f.result(int64(time.Second)); math.Abs(got.FloorMeanError-(4.0/3)/4) > 1e-12 || math.Abs(got.MeanError-1) > 1e-12 {
		t.Fatalf("result = %+v, want floor 1/3 and mean 1 (nothing runs: Σ 4/3·3 / 4)", got)
	}
}

// Over the decay window, a run that is at the ideal at every instant has
// the ideal's usage too (error 0); one that ran a alone while b waited
// keeps an error while that usage decays.
func TestWindowErrorComparesDecayedUsage(t *testing.T) {
	sec := func(s int) int64 { return int64(s) * int64(time.Second) }
	f := newFairTrack(fairGroups{desc: "test", tau: 10}, 4)
	a, b := f.group("a", 1), f.group("b", 1)
	f.addRunning(a, 2)
	f.addRunning(b, 2)
	f.instant(0)
	f.addRunning(a, -2) // a ends: b alone, still the ideal
	f.instant(sec(10))
	if got := f.result(sec(20)); got.MeanError != 0 || got.Window == nil || got.Window.MeanError > 1e-12 {
		t.Fatalf("at the ideal throughout: %+v, window %+v", got, got.Window)
	}

	f = newFairTrack(fairGroups{desc: "test", tau: 10}, 4)
	a, b = f.group("a", 1), f.group("b", 1)
	f.addRunning(a, 4)
	f.addWaiting(b, 4)
	f.instant(0)
	f.addRunning(a, -4) // a leaves; b takes the pool: at the ideal again
	f.addWaiting(b, -4)
	f.addRunning(b, 4)
	f.instant(sec(10))
	// At 10 s: a used 4·10·(1−e^−1), ideal 2·10·(1−e^−1); b 0 against
	// the same; the pool 4·10·(1−e^−1): error (2+2)/4 = 1, which then
	// decays as e^−(t−10)/10 over a pool usage that grows.
	f.instant(sec(20))
	want := 2 * 10 * -math.Expm1(-1) * math.Exp(-1) * 2 / (4 * 10 * -math.Expm1(-2))
	if got := f.points[len(f.points)-1].winErr; math.Abs(got-want) > 1e-9 {
		t.Fatalf("window error at 20 s = %g, want %g", got, want)
	}
	if f.points[1].winErr != 1 {
		t.Fatalf("window error at 10 s = %g, want 1", f.points[1].winErr)
	}
}
