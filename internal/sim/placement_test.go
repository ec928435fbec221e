package sim

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/elastic"
	"github.com/allot-sched/allot/internal/model"
)

// inferJob has one task per duration, all of stage "infer" sharing model m.
func inferJob(id, m string, ds ...time.Duration) model.Job {
	j := job(id, "", 0)
	for i, d := range ds {
		j.Tasks = append(j.Tasks, model.Task{Name: "infer-" + string(rune('a'+i)), Stage: "infer", Model: m, Duration: d})
	}
	return j
}

func TestMergedBatchesRunOnOneSlot(t *testing.T) {
	in := Input{Workers: workers(1), Jobs: []model.Job{inferJob("j", "bert", time.Minute, 2*time.Minute, 4*time.Minute, 3*time.Minute, 5*time.Minute)}}
	res := mustRun(t, in, Options{})
	// Two batches: four tasks for the longest of them (4m), then one (5m).
	if res.Outcome != "completed" || res.MakespanSeconds != 540 || res.Counts.Merged != 3 || res.Counts.JobsSucceeded != 1 {
		t.Fatalf("%s after %gs, merged %d, %+v", res.Outcome, res.MakespanSeconds, res.Counts.Merged, res.Counts)
	}
	// A batch holds one slot: slot time is the two batches', not the tasks'.
	if res.SlotSeconds != 540 || res.Utilisation != 1 {
		t.Fatalf("slot-seconds %g, utilisation %g", res.SlotSeconds, res.Utilisation)
	}
}

func TestAFailedBatchFailsItsMembers(t *testing.T) {
	j := inferJob("j", "bert", time.Minute, time.Minute, time.Minute)
	j.Tasks[0].Fails = 1
	res := mustRun(t, Input{Workers: workers(1), Jobs: []model.Job{j}}, Options{})
	if res.Counts.FailedTasks != 3 || res.Counts.JobsFailed != 1 || res.Outcome != "completed" {
		t.Fatalf("counts %+v, outcome %s", res.Counts, res.Outcome)
	}
}

func TestStickyDeferralsAreCounted(t *testing.T) {
	cfg := fifo()
	cfg.Placement = engine.PlacementConfig{Strategy: "best", StageStickiness: true}
	ws := workers(2)
	ws[1].Capacity.MilliCPU = 64000 // scores higher
	ws[0].Labels = model.Labels{"name": "w0"}
	base := model.Task{Name: "base", Duration: time.Minute}
	tune := model.Task{Name: "tune", Duration: time.Minute, Needs: []string{"base"}, StickTo: "base", Category: model.CategoryTraining}
	// The job's base runs on w0 (its selector), and a long job keeps w0
	// busy when tune becomes ready.
	ft := job("ft", "", 0, base, tune)
	ft.Selector = model.Selector{"name": "w0"}
	blocker := job("block", "", 30*time.Second, task("x", 5*time.Minute))
	blocker.Selector = model.Selector{"name": "w0"}
	blocker.Priority = 9
	res := mustRun(t, Input{Config: cfg, Workers: ws, Jobs: []model.Job{ft, blocker}}, Options{CycleEvery: time.Minute})
	if res.Counts.Deferred == 0 || res.Outcome != "completed" {
		t.Fatalf("deferred %d, outcome %s", res.Counts.Deferred, res.Outcome)
	}
}

func elasticConfig(mutate func(c *elastic.Config)) engine.Config {
	cfg := fifo()
	cfg.Placement.Elastic = elastic.DefaultConfig()
	cfg.Placement.Elastic.Enabled = true
	if mutate != nil {
		mutate(&cfg.Placement.Elastic)
	}
	return cfg
}

func TestElasticBringsBackDisabledWorkersForWaitingWork(t *testing.T) {
	ws := workers(3)
	for i := range ws {
		ws[i].State = model.WorkerDisabled
		ws[i].CostPerHour = 2
	}
	jobs := []model.Job{job("j", "", 0, task("a", time.Minute), task("b", time.Minute))}
	res := mustRun(t, Input{Config: elasticConfig(nil), Workers: ws, Jobs: jobs}, Options{})
	// The first poll (30s) sees two tasks queued and enables two workers.
	if res.Outcome != "completed" || res.MakespanSeconds != 90 || res.Elastic.Enables != 2 {
		t.Fatalf("%s after %gs, elastic %+v", res.Outcome, res.MakespanSeconds, res.Elastic)
	}
	// Two workers enabled for the last 60s, one disabled throughout.
	if want := 2 * 60.0 / 3600 * 2; math.Abs(res.Cost.Cost-want) > 1e-12 || len(res.Elastic.DisabledAtEnd) != 1 {
		t.Fatalf("cost %+v, want %g; disabled at the end %v", res.Cost, want, res.Elastic.DisabledAtEnd)
	}
}

func TestElasticThatCannotHelpEndsAsStalled(t *testing.T) {
	ws := workers(2)
	for i := range ws {
		ws[i].State = model.WorkerDisabled
	}
	cfg := elasticConfig(func(c *elastic.Config) { c.MinActiveWorkers, c.QueueThresholdForEnable = 0, 5 })
	jobs := []model.Job{job("j", "", 0, task("a", time.Minute))}
	res := mustRun(t, Input{Config: cfg, Workers: ws, Jobs: jobs}, Options{})
	if res.Outcome != "stalled" || res.Elastic.Enables != 0 || res.MakespanSeconds > 600 {
		t.Fatalf("%s after %gs, elastic %+v", res.Outcome, res.MakespanSeconds, res.Elastic)
	}
}

func TestElasticConfigIsValidated(t *testing.T) {
	cfg := elasticConfig(func(c *elastic.Config) { c.MinActiveWorkers = -1 })
	_, err := Run(Input{Config: cfg, Workers: workers(1), Start: t0}, Options{})
	if err == nil || !strings.Contains(err.Error(), "placement.elastic.minActiveWorkers") {
		t.Fatalf("err = %v", err)
	}
}

func TestDensitySeries(t *testing.T) {
	jobs := []model.Job{
		job("a", "", 0, task("x", 90*time.Second), task("y", 30*time.Second)),
		job("b", "", 150*time.Second, task("z", 10*time.Second)),
	}
	res := mustRun(t, Input{Workers: workers(2), Jobs: jobs}, Options{DensityBucket: time.Minute})
	d := res.Density
	type row struct{ sub, started, active, peak, enabled int }
	want := []row{{2, 2, 1, 2, 2}, {0, 0, 0, 1, 2}, {1, 1, 0, 1, 2}}
	if d == nil || d.BucketSeconds != 60 || len(d.Buckets) != len(want) {
		t.Fatalf("density %+v", d)
	}
	for i, w := range want {
		b := d.Buckets[i]
		if got := (row{b.Submitted, b.Started, b.ActiveWorkers, b.PeakActiveWorkers, b.EnabledWorkers}); got != w {
			t.Errorf("bucket %d: %+v, want %+v", i, got, w)
		}
	}
}

func TestDensityBucketsAreCoarsenedToABound(t *testing.T) {
	jobs := []model.Job{job("a", "", 0, task("x", 100*24*time.Hour))}
	res := mustRun(t, Input{Workers: workers(1), Jobs: jobs}, Options{DensityBucket: time.Second})
	d := res.Density
	if len(d.Buckets) > maxDensityBuckets || d.BucketSeconds <= 1 || d.Buckets[0].Submitted != 1 || d.Buckets[0].Started != 1 {
		t.Fatalf("%d buckets of %gs, first %+v", len(d.Buckets), d.BucketSeconds, d.Buckets[0])
	}
	if last := d.Buckets[len(d.Buckets)-1]; last.ActiveWorkers != 0 || d.Buckets[len(d.Buckets)/2].ActiveWorkers != 1 {
		t.Fatalf("active workers: middle %+v last %+v", d.Buckets[len(d.Buckets)/2], last)
	}
}
