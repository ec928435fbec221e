package scenario

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/sim"
)

func loadExample(t *testing.T, name string) *Scenario {
	t.Helper()
	s, err := Load(filepath.Join("..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPlacementMixedExample checks the figures examples/placement-mixed.yaml
// promises: training on the h100 boxes, inference on the a10 boxes with the
// cached model first and in merged batches, etl on the cpu boxes.
func TestPlacementMixedExample(t *testing.T) {
	s := loadExample(t, "placement-mixed.yaml")
	e, err := s.Engine()
	if err != nil {
		t.Fatal(err)
	}
	d := e.Cycle(s.Start)
	if len(d.Starts) != 14 {
		t.Fatalf("%d starts, want 14", len(d.Starts))
	}
	workersOf := map[string]map[string]bool{}
	batches := map[string]int{}
	for _, st := range d.Starts {
		if workersOf[st.Job] == nil {
			workersOf[st.Job] = map[string]bool{}
		}
		workersOf[st.Job][st.Worker] = true
		if st.Batch != "" {
			batches[st.Batch]++
		}
		class := strings.SplitN(st.Worker, "-", 2)[0]
		want := map[string]string{"chat": "a10", "embed": "a10", "sft": "h100", "etl": "cpu"}[st.Job]
		if class != want {
			t.Errorf("%s/%s ran on %s, want a %s worker", st.Job, st.Task, st.Worker, want)
		}
		lambda := map[string]float64{"chat": 0.4, "embed": 0.4, "sft": 0.8, "etl": 0.5}[st.Job]
		if st.Placement.Lambda != lambda {
			t.Errorf("%s: λ %g, want %g", st.Job, st.Placement.Lambda, lambda)
		}
	}
	if first := d.Starts[0]; first.Worker != "a10-3" || first.Placement.ReuseHits != 1 || first.Placement.Via != place.ViaReuse {
		t.Errorf("chat's first batch: %+v, want a10-3 by reuse", first)
	}
	if len(batches) != 2 || batches["answer-0"] != 4 || batches["answer-4"] != 2 {
		t.Errorf("batches %v, want answer-0 ×4 and answer-4 ×2", batches)
	}
	if len(workersOf["sft"]) != 2 || len(workersOf["etl"]) != 4 {
		t.Errorf("workers per job %v", workersOf)
	}

	// With first-fit, chat's batches take both h100 boxes and sft waits.
	s.Config.Placement.Strategy = "first-fit"
	e, err = s.Engine()
	if err != nil {
		t.Fatal(err)
	}
	d = e.Cycle(s.Start)
	for _, st := range d.Starts {
		if st.Job == "chat" && (st.Task == "answer-0" && st.Worker != "h100-0" || st.Task == "answer-4" && st.Worker != "h100-1") {
			t.Errorf("first-fit put chat/%s on %s", st.Task, st.Worker)
		}
		if st.Job == "sft" {
			t.Errorf("first-fit started sft/%s on %s; want it waiting", st.Task, st.Worker)
		}
	}
}

// TestPlacementElasticExample checks examples/placement-elastic.yaml: three
// workers disabled after a minute idle, all back when the second burst
// arrives, and the cost without their disabled time.
func TestPlacementElasticExample(t *testing.T) {
	s := loadExample(t, "placement-elastic.yaml")
	in := sim.Input{Config: s.Config, Workers: s.Workers, Jobs: s.Jobs, History: s.History, Start: s.Start}
	res, err := sim.Run(in, sim.Options{DensityBucket: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != "completed" || res.MakespanSeconds != 2400 {
		t.Fatalf("outcome %s after %gs, want completed after 2400s", res.Outcome, res.MakespanSeconds)
	}
	el := res.Elastic
	if el == nil || el.Disables != 3 || el.Enables != 3 || len(el.DisabledAtEnd) != 0 {
		t.Fatalf("elastic %+v", el)
	}
	for i, tg := range el.Toggles {
		wantAt := 660.0
		if i >= 3 {
			wantAt = 1800
		}
		if tg.AtSeconds != wantAt {
			t.Errorf("toggle %d at %gs, want %gs: %+v", i, tg.AtSeconds, wantAt, tg)
		}
	}
	if want := 6180.0 / 3600; math.Abs(res.Cost.Cost-want) > 1e-9 || math.Abs(res.Cost.DisabledWorkerHours-3*1140.0/3600) > 1e-9 {
		t.Errorf("cost %+v, want %.4f with 0.95 disabled hours", res.Cost, want)
	}
	dn := res.Density
	if dn == nil || dn.BucketSeconds != 60 || len(dn.Buckets) != 41 {
		t.Fatalf("density %+v", dn)
	}
	checks := []struct {
		bucket                        int
		submitted, active, enabledEnd int
	}{{0, 8, 4, 4}, {10, 0, 0, 4}, {11, 0, 0, 1}, {29, 0, 0, 1}, {30, 8, 4, 4}, {40, 0, 0, 4}}
	for _, c := range checks {
		b := dn.Buckets[c.bucket]
		if b.Submitted != c.submitted || b.ActiveWorkers != c.active || b.EnabledWorkers != c.enabledEnd {
			t.Errorf("bucket %d: %+v, want submitted %d, active %d, enabled %d", c.bucket, b, c.submitted, c.active, c.enabledEnd)
		}
	}
	// Without the coordinator every worker costs the whole run.
	in.Config.Placement.Elastic.Enabled = false
	res, err = sim.Run(in, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Cost.Cost != 4*2400.0/3600 || res.Elastic != nil || res.Density != nil {
		t.Errorf("without elastic: cost %+v, elastic %v, density %v", res.Cost, res.Elastic, res.Density)
	}
}

// TestPlacementModesExample checks the makespans examples/placement-modes.yaml
// lists for each dispatcher mode.
func TestPlacementModesExample(t *testing.T) {
	s := loadExample(t, "placement-modes.yaml")
	for mode, want := range map[string]float64{"adaptive": 1500, "static-worker": 1500, "fixed-pipeline": 3000, "round-robin": 1500} {
		t.Run(mode, func(t *testing.T) {
			cfg := s.Config
			cfg.Placement.Mode = mode
			cfg.Placement.Strategy = ""
			if mode == "adaptive" {
				cfg.Placement.Strategy = "best"
			}
			res, err := sim.Run(sim.Input{Config: cfg, Workers: s.Workers, Jobs: s.Jobs, Start: s.Start}, sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != "completed" || res.MakespanSeconds != want {
				t.Fatalf("%s: %s after %gs, want %gs", mode, res.Outcome, res.MakespanSeconds, want)
			}
		})
	}
}
