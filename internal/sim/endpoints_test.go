package sim_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/allot-sched/allot/internal/scenario"
	"github.com/allot-sched/allot/internal/sim"
	"github.com/allot-sched/allot/internal/sim/trace"
)

func inputOf(t *testing.T, file string) sim.Input {
	t.Helper()
	s, err := scenario.Load(filepath.Join("..", "..", "examples", file))
	if err != nil {
		t.Fatal(err)
	}
	return sim.Input{Config: s.Config, Workers: s.Workers, Jobs: s.Jobs, History: s.History, Running: s.Running,
		Start: s.Start, Inputs: s.Inputs}
}

func endpointOf(t *testing.T, res *sim.Result, endpoint, variant string) sim.EndpointResult {
	t.Helper()
	for _, e := range res.Endpoints {
		if e.Endpoint == endpoint && e.Variant == variant {
			return e
		}
	}
	t.Fatalf("no endpoint %s/%s in %+v", endpoint, variant, res.Endpoints)
	return sim.EndpointResult{}
}

// admittedAt returns when the timeline says job was admitted.
func admittedAt(t *testing.T, res *sim.Result, job string) float64 {
	t.Helper()
	for _, e := range res.Timeline {
		if e.Kind == "admit" && e.Job == job {
			return e.AtSeconds
		}
	}
	t.Fatalf("job %s was never admitted", job)
	return 0
}

func TestVariantsExampleSplitsByWeightWithinCapacity(t *testing.T) {
	res, err := sim.Run(inputOf(t, "endpoints-variants.yaml"), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cur, cand := endpointOf(t, res, "detector", "current"), endpointOf(t, res, "detector", "candidate")
	if cur.Jobs+cand.Jobs != 201 || res.Outcome != "completed" {
		t.Fatalf("jobs %d + %d, outcome %s", cur.Jobs, cand.Jobs, res.Outcome)
	}
	// 200 unpinned jobs, weight 70: binomial σ = √(200 × 0.7 × 0.3) ≈ 6.5.
	sigma := math.Sqrt(200 * 0.7 * 0.3)
	if n := float64(cur.Jobs); n < 140-4*sigma || n > 140+4*sigma {
		t.Errorf("current got %d of 200 jobs", cur.Jobs)
	}
	if cur.MaxCapacity != 12 || cand.MaxCapacity != 6 || cur.PeakLoad != 12 || cand.PeakLoad != 6 {
		t.Errorf("current %+v\ncandidate %+v", cur, cand)
	}
}

func TestStarvationExample(t *testing.T) {
	in := inputOf(t, "endpoints-starvation.yaml")
	opt := sim.Options{TimelineLines: 10_000}
	res, err := sim.Run(in, opt)
	if err != nil {
		t.Fatal(err)
	}
	with := admittedAt(t, res, "big")
	in.Config.Admission.StarvationWait = 0
	res0, err := sim.Run(in, opt)
	if err != nil {
		t.Fatal(err)
	}
	without := admittedAt(t, res0, "big")
	// With the rule, big reserves det at 3m10s and is admitted when first
	// ends at 5m; without, the small jobs keep jumping ahead until the
	// stream ends.
	if with != 300 || without != 1290 {
		t.Errorf("big admitted at %gs with the rule, %gs without; want 300 and 1290", with, without)
	}
	for _, r := range []*sim.Result{res, res0} {
		if e := endpointOf(t, r, "det", ""); e.PeakLoadShared > e.TargetCapacity || e.SingleJobExceptions != 0 {
			t.Errorf("det %+v", e)
		}
	}
	if e := endpointOf(t, res, "det", ""); e.Reservations == 0 {
		t.Errorf("no reservation taken: %+v", e)
	}
}

func TestDeadLetteredJobsNeverRun(t *testing.T) {
	in := inputOf(t, "endpoints-throttling.yaml")
	res, err := sim.Run(in, sim.Options{TimelineLines: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.JobsDeadLettered != 1 || res.Outcome != "completed" || len(res.Unfinished) != 0 {
		t.Fatalf("dead letters %d, outcome %s, unfinished %+v", res.Counts.JobsDeadLettered, res.Outcome, res.Unfinished)
	}
	for _, e := range res.Timeline {
		if e.Job == "bad-input" && e.Kind != "deadletter" {
			t.Errorf("dead-lettered job in the timeline: %+v", e)
		}
	}
	if det := endpointOf(t, res, "det", ""); det.SingleJobExceptions != 1 || det.PeakLoad != 80 || det.PeakLoadShared > det.TargetCapacity {
		t.Errorf("det %+v", det)
	}
}

// TestAzureTraceNeverExceedsTargetUnderThrottling replays a prefix of the
// Azure conversation trace against two endpoints: with throttling on, no
// variant's concurrency goes above its target while two or more jobs share
// it (the single-job exception is the only way above, and then the job runs
// alone); with throttling off, the same arrivals go above it.
func TestAzureTraceNeverExceedsTargetUnderThrottling(t *testing.T) {
	path := filepath.Join("..", "..", "..", "shared", "traces", "AzureLLMInferenceTrace_conv.csv")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		t.Skipf("%s is absent", path)
	}
	in := inputOf(t, "endpoints-azure.yaml")
	jobs, _, err := trace.LoadAzureLLMFile(path, trace.AzureOptions{Start: in.Start, Queue: "llm", Endpoints: []string{"chat-a", "chat-b"}, Limit: 4000})
	if err != nil {
		t.Fatal(err)
	}
	in.Jobs = jobs
	run := func(throttling bool) *sim.Result {
		in.Config.Admission.Enabled = throttling
		res, err := sim.Run(in, sim.Options{TimelineLines: -1})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != "completed" {
			t.Fatalf("outcome %s", res.Outcome)
		}
		return res
	}
	on, off := run(true), run(false)
	for _, ep := range []string{"chat-a", "chat-b"} {
		a, b := endpointOf(t, on, ep, ""), endpointOf(t, off, ep, "")
		if a.PeakLoadShared > a.TargetCapacity || a.PeakLoad > a.TargetCapacity {
			t.Errorf("%s with throttling: peak %d (%d shared) above target %d", ep, a.PeakLoad, a.PeakLoadShared, a.TargetCapacity)
		}
		if b.PeakLoad <= b.TargetCapacity {
			t.Errorf("%s without throttling peaks at %d, within the target %d: the prefix does not test throttling", ep, b.PeakLoad, b.TargetCapacity)
		}
		if a.Throttled == 0 || a.AdmissionWait.Max == 0 || b.AdmissionWait.Max != 0 {
			t.Errorf("%s: throttled %d, waits %+v with, %+v without", ep, a.Throttled, a.AdmissionWait, b.AdmissionWait)
		}
	}
	if on.Wait.Mean <= off.Wait.Mean {
		t.Errorf("throttling cost no wait: %v vs %v", on.Wait, off.Wait)
	}
}
