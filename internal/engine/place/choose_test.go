package place

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func fleetWith(t *testing.T, cfg Config, workers ...model.Worker) *Fleet {
	t.Helper()
	f, err := NewFleetConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range workers {
		mustAdd(t, f, w)
	}
	return f
}

func best() Config { return Config{Strategy: "best"} }

func ptr[T any](v T) *T { return &v }

// gpuBox is a worker with n GPUs of mem MB each, a cost and a name.
func gpuBox(name string, cpu, memMB, n, mem int64, cost float64) model.Worker {
	return model.Worker{Name: name, Capacity: model.Resources{MilliCPU: cpu, MemoryMB: memMB, GPUs: n, GPUMemoryMB: mem}, CostPerHour: cost}
}

func req(f *Fleet, job, task string, r model.Resources) *Request {
	return &Request{Shape: f.Shape(r, nil), Job: job, Task: task, Now: t0}
}

func choose(t *testing.T, f *Fleet, r *Request) (*Worker, Info) {
	t.Helper()
	ch, why := f.Choose(r)
	if ch.Worker == nil {
		t.Fatalf("no worker for %s/%s: %+v", r.Job, r.Task, why)
	}
	return ch.Worker, ch.Info
}

// The seed's first testing idea: of two workers only one advertises the
// task's model; it is preferred until its hint is older than the TTL, after
// which the choice is the one a fleet without hints makes.
func TestReusePrefersAFreshHintUntilTheTTLLapses(t *testing.T) {
	a := gpuBox("a", 8000, 32768, 1, 24576, 1)
	b := gpuBox("b", 8000, 32768, 1, 24576, 1)
	b.Cached = map[string]time.Time{"llama-7b": t0}
	// The task whose jitter favours a, so that only reuse can pick b.
	task := ""
	for i := 0; task == ""; i++ {
		f := fleetWith(t, best(), a, gpuBox("b", 8000, 32768, 1, 24576, 1))
		if w, _ := choose(t, f, req(f, "j", fmt.Sprint("t", i), model.Resources{GPUs: 1})); w.Spec.Name == "a" {
			task = fmt.Sprint("t", i)
		}
	}
	cases := []struct {
		name      string
		cfg       Config
		at        time.Duration
		want      string
		wantHits  uint8
		wantVia   Via
		noDataset bool
	}{
		{"fresh hint wins", best(), 30 * time.Minute, "b", 1, ViaReuse, false},
		{"hint exactly at the TTL is still fresh", best(), time.Hour, "b", 1, ViaReuse, false},
		{"stale hint is neutral", best(), time.Hour + time.Second, "a", 0, ViaScore, false},
		{"a shorter TTL lapses sooner", Config{Strategy: "best", CacheTTL: 10 * time.Minute}, 11 * time.Minute, "a", 0, ViaScore, false},
		{"reuse switched off", Config{Strategy: "best", ContextReuse: ptr(false)}, time.Minute, "a", 0, ViaScore, false},
		{"first-fit does not reorder", Config{}, time.Minute, "a", 0, ViaFirstFit, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fleetWith(t, tc.cfg, a, b)
			r := req(f, "j", task, model.Resources{GPUs: 1})
			r.Model, r.Now = "llama-7b", t0.Add(tc.at)
			w, info := choose(t, f, r)
			if w.Spec.Name != tc.want || info.ReuseHits != tc.wantHits || info.Via != tc.wantVia {
				t.Fatalf("chose %s (hits %d, via %s), want %s (hits %d, via %s)", w.Spec.Name, info.ReuseHits, info.Via, tc.want, tc.wantHits, tc.wantVia)
			}
		})
	}
	// A refreshed hint is fresh again.
	f := fleetWith(t, best(), a, b)
	f.SetCached(f.workers[1], map[string]time.Time{"llama-7b": t0.Add(2 * time.Hour)})
	r := req(f, "j", task, model.Resources{GPUs: 1})
	r.Model, r.Now = "llama-7b", t0.Add(150*time.Minute)
	if w, _ := choose(t, f, r); w.Spec.Name != "b" {
		t.Fatalf("after the refresh chose %s, want b", w.Spec.Name)
	}
}

func TestReuseCountsModelAndDatasetHits(t *testing.T) {
	mk := func(name string, cached ...string) model.Worker {
		w := gpuBox(name, 8000, 32768, 1, 24576, 1)
		w.Cached = map[string]time.Time{}
		for _, c := range cached {
			w.Cached[c] = t0
		}
		return w
	}
	f := fleetWith(t, best(), mk("none"), mk("model", "m"), mk("both", "m", "d"), mk("data", "d"))
	for i := 0; i < 20; i++ {
		r := req(f, "j", fmt.Sprint("t", i), model.Resources{GPUs: 1})
		r.Model, r.Dataset = "m", "d"
		if w, info := choose(t, f, r); w.Spec.Name != "both" || info.ReuseHits != 2 {
			t.Fatalf("task %d chose %s with %d hits, want both with 2", i, w.Spec.Name, info.ReuseHits)
		}
	}
	// A busy holder leaves the next best holder.
	f.Occupy(f.workers[2], model.Resources{GPUs: 1})
	r := req(f, "j", "x", model.Resources{GPUs: 1})
	r.Model, r.Dataset = "m", "d"
	if w, info := choose(t, f, r); info.ReuseHits != 1 || (w.Spec.Name != "model" && w.Spec.Name != "data") {
		t.Fatalf("with both busy chose %s with %d hits", w.Spec.Name, info.ReuseHits)
	}
}

// The seed's second testing idea: identical workers, and the jitter hash
// decides. The same task always lands on the same worker; different tasks
// spread over all of them. Without jitter, ties go to registration order.
func TestJitterRotatesTiesAcrossIdenticalWorkers(t *testing.T) {
	build := func(jitter float64) *Fleet {
		var ws []model.Worker
		for i := 0; i < 8; i++ {
			ws = append(ws, cpuWorker(fmt.Sprintf("w%d", i), 4000, 1))
		}
		return fleetWith(t, Config{Strategy: "best", Jitter: ptr(jitter)}, ws...)
	}
	for _, jitter := range []float64{DefaultJitter, 0} {
		t.Run(fmt.Sprint("jitter=", jitter), func(t *testing.T) {
			f, g := build(jitter), build(jitter)
			count := map[string]int{}
			for i := 0; i < 400; i++ {
				task := fmt.Sprintf("t%03d", i)
				w1, _ := choose(t, f, req(f, "job", task, model.Resources{MilliCPU: 1000}))
				w2, _ := choose(t, f, req(f, "job", task, model.Resources{MilliCPU: 1000}))
				w3, _ := choose(t, g, req(g, "job", task, model.Resources{MilliCPU: 1000}))
				if w1.Spec.Name != w2.Spec.Name || w1.Spec.Name != w3.Spec.Name {
					t.Fatalf("task %s chose %s, %s and %s: not deterministic", task, w1.Spec.Name, w2.Spec.Name, w3.Spec.Name)
				}
				count[w1.Spec.Name]++
			}
			if jitter == 0 {
				// Without jitter the tie goes to registration order.
				if count["w0"] != 400 {
					t.Fatalf("without jitter the tasks went to %v, want all on w0", count)
				}
				return
			}
			if len(count) != 8 {
				t.Fatalf("400 tasks used %d of 8 identical workers: %v", len(count), count)
			}
			for w, n := range count {
				if n < 20 || n > 100 { // 50 each on average
					t.Errorf("worker %s took %d of 400 tasks: %v", w, n, count)
				}
			}
		})
	}
}

func TestJitterWindowSpreadsOverALargeClass(t *testing.T) {
	// More identical workers than the window: the hash-picked start of the
	// window still spreads tasks over the whole class.
	var ws []model.Worker
	for i := 0; i < 100; i++ {
		ws = append(ws, cpuWorker(fmt.Sprintf("w%03d", i), 4000, 1))
	}
	f := fleetWith(t, best(), ws...)
	used := map[string]bool{}
	for i := 0; i < 1000; i++ {
		w, _ := choose(t, f, req(f, "job", fmt.Sprint("t", i), model.Resources{}))
		used[w.Spec.Name] = true
	}
	if len(used) < 95 {
		t.Fatalf("1000 tasks used %d of 100 identical workers", len(used))
	}
}

func TestJitterNeverOverridesARealScoreDifference(t *testing.T) {
	// Two classes whose scores differ by far more than the jitter: every
	// task goes to the better one while it has a free worker.
	var ws []model.Worker
	for i := 0; i < 4; i++ {
		ws = append(ws, gpuBox(fmt.Sprintf("big%d", i), 32000, 262144, 8, 81920, 4))
		ws = append(ws, gpuBox(fmt.Sprintf("small%d", i), 8000, 32768, 1, 24576, 1))
	}
	f := fleetWith(t, best(), ws...)
	for i := 0; i < 8; i++ {
		r := req(f, "j", fmt.Sprint("t", i), model.Resources{GPUs: 1})
		r.Category = model.CategoryTraining
		w, _ := choose(t, f, r)
		if want := i < 4; strings.HasPrefix(w.Spec.Name, "big") != want {
			t.Fatalf("training task %d went to %s", i, w.Spec.Name)
		}
		f.Occupy(w, r.Shape.Req)
	}
}

// The seed's fifth testing idea: with λ = 0.8 training buys throughput and
// takes the big GPU box; with λ = 0.4 inference saves cost and takes the
// cheap one. The scores are checked against the formula worked by hand.
func TestMixedWorkloadsBalanceThroughputAndCost(t *testing.T) {
	big := gpuBox("h100", 32000, 262144, 8, 81920, 32)
	small := gpuBox("a10", 8000, 32768, 1, 24576, 1.2)
	// μ̂(h100) = 0.4 + 0.2 + 0.2 + 0.2 = 1, ĉ(h100) = 1.
	// μ̂(a10) = 0.4·1/8 + 0.2·24576/81920 + 0.2·32768/262144 + 0.2·8/32
	//        = 0.05 + 0.06 + 0.025 + 0.05 = 0.185; ĉ(a10) = 1.2/32 = 0.0375.
	cases := []struct {
		cat    model.Category
		lambda float64
		want   string
		score  float64 // without jitter
	}{
		{model.CategoryTraining, 0.8, "h100", 0.8*1 - 0.2*1},
		{model.CategoryInference, 0.4, "a10", 0.4*0.185 - 0.6*0.0375},
		{model.CategoryOther, 0.5, "a10", 0.5*0.185 - 0.5*0.0375},
		{"", 0.5, "a10", 0.5*0.185 - 0.5*0.0375},
	}
	for _, tc := range cases {
		t.Run(string(tc.cat), func(t *testing.T) {
			f := fleetWith(t, best(), big, small)
			r := req(f, "mixed", "t", model.Resources{GPUs: 1, GPUMemoryMB: 16384})
			r.Category = tc.cat
			w, info := choose(t, f, r)
			if w.Spec.Name != tc.want || info.Lambda != tc.lambda {
				t.Fatalf("%s task chose %s with λ %g, want %s with λ %g", tc.cat, w.Spec.Name, info.Lambda, tc.want, tc.lambda)
			}
			if d := info.Score - tc.score; d < 0 || d >= DefaultJitter {
				t.Fatalf("score %.6f, want %.6f plus a jitter below %g", info.Score, tc.score, DefaultJitter)
			}
			if info.Pool != 2 {
				t.Fatalf("pool %d, want 2", info.Pool)
			}
		})
	}
	// Configured λ moves the balance: training with λ = 0.1 saves cost too.
	f := fleetWith(t, Config{Strategy: "best", Lambda: Lambda{Training: ptr(0.1)}}, big, small)
	r := req(f, "mixed", "t", model.Resources{GPUs: 1})
	r.Category = model.CategoryTraining
	if w, _ := choose(t, f, r); w.Spec.Name != "a10" {
		t.Fatalf("training with λ 0.1 chose %s, want a10", w.Spec.Name)
	}
}

func TestScoreNormalisationFollowsTheFleetMaxima(t *testing.T) {
	f := fleetWith(t, best(), gpuBox("x", 4000, 8192, 0, 0, 2), gpuBox("y", 16000, 32768, 0, 0, 0))
	f.normalise()
	x, y := f.workers[0].class, f.workers[1].class
	// No worker has GPUs: those dimensions contribute nothing.
	if math.Abs(x.mu-(0.2*0.25+0.2*0.25)) > 1e-12 || math.Abs(y.mu-0.4) > 1e-12 || x.costN != 1 || y.costN != 0 {
		t.Fatalf("x μ̂ %g ĉ %g, y μ̂ %g ĉ %g", x.mu, x.costN, y.mu, y.costN)
	}
	// Removing the largest worker rescales the rest.
	f.Remove(f.workers[1])
	f.normalise()
	if math.Abs(x.mu-0.4) > 1e-12 || x.costN != 1 {
		t.Fatalf("after removal x μ̂ %g ĉ %g, want 0.4 and 1", x.mu, x.costN)
	}
}

// The seed's fourth testing idea: first-fit takes the first compatible
// worker in registration order, whatever the scores say.
func TestFirstFitMatchesRegistrationOrder(t *testing.T) {
	f := fleetWith(t, Config{Strategy: "first-fit"},
		gpuBox("cpu-only", 4000, 8192, 0, 0, 0.1),
		gpuBox("pricey", 32000, 262144, 8, 81920, 40),
		gpuBox("cheap", 8000, 32768, 1, 24576, 1),
		gpuBox("pricey2", 32000, 262144, 8, 81920, 40))
	var got []string
	for i := 0; i < 3; i++ {
		r := req(f, "j", fmt.Sprint("t", i), model.Resources{GPUs: 1})
		r.Category = model.CategoryInference
		w, info := choose(t, f, r)
		if info.Via != ViaFirstFit {
			t.Fatalf("via %s", info.Via)
		}
		f.Occupy(w, r.Shape.Req)
		got = append(got, w.Spec.Name)
	}
	if want := "pricey cheap pricey2"; strings.Join(got, " ") != want {
		t.Fatalf("first-fit order %v, want %s", got, want)
	}
}

func TestMinSatisfyingTakesTheSmallestWorkerThatFits(t *testing.T) {
	f := fleetWith(t, Config{Strategy: "min-satisfying"},
		gpuBox("h100", 32000, 262144, 8, 81920, 1), gpuBox("a10", 8000, 32768, 1, 24576, 1), gpuBox("a100", 16000, 131072, 2, 40960, 1))
	r := req(f, "j", "t", model.Resources{GPUs: 1, GPUMemoryMB: 32768})
	if w, info := choose(t, f, r); w.Spec.Name != "a100" || info.Via != ViaMinSatisfying {
		t.Fatalf("chose %s via %s, want a100", w.Spec.Name, info.Via)
	}
}

func TestVRAMExcludesWorkersWithSmallerGPUs(t *testing.T) {
	for _, st := range []string{"best", "first-fit", "min-satisfying"} {
		t.Run(st, func(t *testing.T) {
			f := fleetWith(t, Config{Strategy: st}, gpuBox("a10", 8000, 32768, 4, 24576, 0.5), gpuBox("a100", 8000, 32768, 1, 81920, 5))
			r := req(f, "j", "t", model.Resources{GPUs: 1, GPUMemoryMB: 40960})
			if w, info := choose(t, f, r); w.Spec.Name != "a100" || info.Pool != 1 {
				t.Fatalf("chose %s from a pool of %d, want a100 alone", w.Spec.Name, info.Pool)
			}
			f.Occupy(f.workers[1], r.Shape.Req)
			ch, why := f.Choose(req(f, "j", "u", model.Resources{GPUs: 1, GPUMemoryMB: 40960}))
			if ch.Worker != nil || why.Code != model.ReasonNoFreeSlot || !strings.Contains(why.Message, "1 lack gpu memory") {
				t.Fatalf("with the a100 busy: %v, %+v", ch.Worker, why)
			}
		})
	}
}

func TestDisabledWorkersAreNoCandidates(t *testing.T) {
	f := fleetWith(t, best(), cpuWorker("a", 4000, 1), cpuWorker("b", 4000, 1))
	f.SetState(f.workers[0], model.WorkerDisabled)
	for i := 0; i < 10; i++ {
		if w, info := choose(t, f, req(f, "j", fmt.Sprint(i), model.Resources{})); w.Spec.Name != "b" || info.Pool != 1 {
			t.Fatalf("chose %s from %d", w.Spec.Name, info.Pool)
		}
	}
}

func TestStickyWorker(t *testing.T) {
	cfg := Config{Strategy: "best", StageStickiness: true}
	cases := []struct {
		name     string
		setup    func(f *Fleet, parent *Worker)
		want     string // worker, or "" when the task waits
		wantCode string
	}{
		{"alive and free: pinned although another scores higher", func(f *Fleet, p *Worker) {}, "small", ""},
		{"busy: waits", func(f *Fleet, p *Worker) { f.Occupy(p, model.Resources{}) }, "", model.ReasonStickyWorkerBusy},
		{"gone: normal scoring", func(f *Fleet, p *Worker) { f.Remove(p) }, "big", ""},
		{"disabled: normal scoring", func(f *Fleet, p *Worker) { f.SetState(p, model.WorkerDisabled) }, "big", ""},
		{"too small for the task: normal scoring", nil, "big", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fleetWith(t, cfg, gpuBox("small", 8000, 32768, 1, 24576, 1), gpuBox("big", 32000, 262144, 8, 81920, 1))
			parent := f.workers[0]
			need := model.Resources{GPUs: 1}
			if tc.setup == nil {
				need.GPUs = 2
			} else {
				tc.setup(f, parent)
			}
			r := req(f, "j", "finetune", need)
			r.Category, r.Sticky, r.StickTo = model.CategoryTraining, parent, "pretrain"
			ch, why := f.Choose(r)
			got := ""
			if ch.Worker != nil {
				got = ch.Worker.Spec.Name
			}
			if got != tc.want || why.Code != tc.wantCode {
				t.Fatalf("chose %q (%+v), want %q %s", got, why, tc.want, tc.wantCode)
			}
			if tc.want == "small" && ch.Info.Via != ViaSticky {
				t.Fatalf("via %s, want sticky", ch.Info.Via)
			}
			if tc.wantCode != "" && !strings.Contains(why.Message, `"pretrain"`) {
				t.Fatalf("reason %q does not name the parent", why.Message)
			}
		})
	}
	// Stickiness is off by default.
	f := fleetWith(t, best(), gpuBox("small", 8000, 32768, 1, 24576, 1), gpuBox("big", 32000, 262144, 8, 81920, 1))
	r := req(f, "j", "finetune", model.Resources{GPUs: 1})
	r.Category, r.Sticky = model.CategoryTraining, f.workers[0]
	if w, _ := choose(t, f, r); w.Spec.Name != "big" {
		t.Fatalf("without stickiness chose %s", w.Spec.Name)
	}
}

func TestRoundRobinCyclesIgnoringRequirements(t *testing.T) {
	f := fleetWith(t, Config{Mode: "round-robin"}, cpuWorker("w0", 1000, 1), gpuBox("w1", 8000, 32768, 1, 24576, 1), cpuWorker("w2", 1000, 1))
	var got []string
	for i := 0; i < 6; i++ {
		// A GPU task: round-robin does not look.
		r := req(f, "j", fmt.Sprint(i), model.Resources{GPUs: 1, GPUMemoryMB: 81920})
		w, info := choose(t, f, r)
		if info.Via != ViaRoundRobin || info.Pool != 3 {
			t.Fatalf("via %s pool %d", info.Via, info.Pool)
		}
		f.Started(r, w)
		got = append(got, w.Spec.Name)
	}
	if want := "w0 w1 w2 w0 w1 w2"; strings.Join(got, " ") != want {
		t.Fatalf("round-robin order %v, want %s", got, want)
	}
	// A busy worker is skipped; with all busy the task waits.
	f.Occupy(f.workers[0], model.Resources{})
	r := req(f, "j", "x", model.Resources{})
	w, _ := choose(t, f, r)
	if w.Spec.Name != "w1" {
		t.Fatalf("after w2 with w0 busy chose %s, want w1", w.Spec.Name)
	}
	f.Occupy(f.workers[1], model.Resources{})
	f.Occupy(f.workers[2], model.Resources{})
	if ch, why := f.Choose(req(f, "j", "y", model.Resources{})); ch.Worker != nil || why.Code != model.ReasonNoFreeSlot {
		t.Fatalf("all busy: %v %+v", ch.Worker, why)
	}
}

func TestConfigValidationNamesTheField(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Mode: "random"}, "mode: unknown dispatcher mode"},
		{Config{Strategy: "worst"}, "strategy: unknown selection strategy"},
		{Config{Lambda: Lambda{Inference: ptr(1.5)}}, "lambda.inference: must be between 0 and 1"},
		{Config{Lambda: Lambda{Training: ptr(-0.1)}}, "lambda.training: must be between 0 and 1"},
		{Config{Lambda: Lambda{Other: ptr(math.NaN())}}, "lambda.other: must be between 0 and 1"},
		{Config{Jitter: ptr(-1e-3)}, "jitter: must be a number of at least 0"},
		{Config{CacheTTL: -time.Second}, "cacheTTL: must not be negative"},
		{Config{MergeMax: -1}, "mergeMax: must be between 0 and"},
	}
	for _, tc := range cases {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
	// Several problems are reported together.
	err := Config{Mode: "x", Jitter: ptr(-1.0)}.Validate()
	if err == nil || !strings.Contains(err.Error(), "mode:") || !strings.Contains(err.Error(), "jitter:") {
		t.Errorf("two problems: %v", err)
	}
}
