package sim

import (
	"math"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/model"
)

func TestPercentileIsNearestRank(t *testing.T) {
	tests := []struct {
		name   string
		sorted []int64
		p      float64
		want   int64
	}{
		{"empty", nil, 50, 0},
		{"single value", []int64{7}, 99, 7},
		{"median of an odd count", []int64{1, 2, 3, 4, 5}, 50, 3},
		{"median of an even count is the lower middle", []int64{1, 2, 3, 4}, 50, 2},
		{"p95 of 1..100", seq(100), 95, 95},
		{"p99 of 1..100", seq(100), 99, 99},
		{"p99 of 1..10 is the max", seq(10), 99, 10},
		{"p0 is the min", seq(10), 0, 1},
		{"p100 is the max", seq(10), 100, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.p); got != tc.want {
				t.Errorf("percentile(%v, %g) = %d, want %d", tc.sorted, tc.p, got, tc.want)
			}
		})
	}
}

func seq(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

func TestJainIndex(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"equal shares", []float64{3, 3, 3, 3}, 1},
		{"one of four has everything", []float64{0, 8, 0, 0}, 0.25},
		{"one of two has everything", []float64{5, 0}, 0.5},
		{"two of four share everything", []float64{1, 1, 0, 0}, 0.5},
		{"scale does not matter", []float64{2, 1}, 0.9},
		{"all zero counts as equal", []float64{0, 0}, 1},
		{"one group", []float64{4}, 1},
		{"no groups", nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := jain(tc.xs); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("jain(%v) = %g, want %g", tc.xs, got, tc.want)
			}
		})
	}
}

func TestWaitStats(t *testing.T) {
	var ns []int64
	for i := 10; i >= 1; i-- { // unsorted input
		ns = append(ns, int64(i)*int64(time.Second))
	}
	got := waitStats(ns)
	want := WaitStats{Count: 10, P50: 5, P95: 10, P99: 10, Mean: 5.5, Max: 10}
	if got != want {
		t.Errorf("waitStats = %+v, want %+v", got, want)
	}
	if ns[0] != 10*int64(time.Second) {
		t.Error("waitStats reordered its input")
	}
}

func TestNsSumDoesNotOverflow(t *testing.T) {
	var s nsSum
	const year = int64(365 * 24 * time.Hour)
	for i := 0; i < 1000; i++ { // 1000 slot-years: far beyond int64 nanoseconds
		s.add(year + 1)
	}
	want := 1000 * (float64(year) + 1) / 1e9
	if math.Abs(s.seconds()-want) > 1e-3 {
		t.Errorf("sum = %f s, want %f s", s.seconds(), want)
	}
}

func TestSampleStep(t *testing.T) {
	tests := []struct {
		name  string
		end   time.Duration
		every time.Duration
		want  time.Duration
	}{
		{"automatic: makespan/200 rounded up to seconds", 1000 * time.Second, 0, 5 * time.Second},
		{"automatic: at least one second", 10 * time.Second, 0, time.Second},
		{"automatic: rounds up", 1001 * time.Second, 0, 6 * time.Second},
		{"explicit", 1000 * time.Second, 7 * time.Second, 7 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := time.Duration(sampleStep(int64(tc.end), tc.every)); got != tc.want {
				t.Errorf("sampleStep(%s, %s) = %s, want %s", tc.end, tc.every, got, tc.want)
			}
		})
	}
	t.Run("explicit but too fine is coarsened to the sample cap", func(t *testing.T) {
		end := int64(100000 * time.Second)
		step := sampleStep(end, time.Second)
		if n := end/step + 1; n > maxSamples || n < maxSamples-1 {
			t.Errorf("step %s gives %d samples, want just under %d", time.Duration(step), n, maxSamples)
		}
	})
}

// Two slots, share a's two 100 s tasks from 0 s, share b's two from 10 s,
// under fairshare with preemption: at 10 s a's newest task stops after 10 s
// of work, which is slot time used but lost. Utilisation counts it;
// UsefulUtilisation does not.
func TestLostSlotSecondsCountStoppedWork(t *testing.T) {
	cfg := engine.Config{Queues: []engine.QueueConfig{{Name: "default",
		Policy: policy.Config{Kind: fairshare.Name, Settings: &fairshare.Config{Preemption: &fairshare.Preemption{}}}}}}
	in := Input{Config: cfg, Workers: workers(2), Jobs: []model.Job{
		job("a", "a", 0, task("t1", 100*sec), task("t2", 100*sec)),
		job("b", "b", 10*sec, task("t1", 100*sec), task("t2", 100*sec)),
	}}
	res := mustRun(t, in, Options{})
	if res.Counts.Stops != 1 || res.LostSlotSeconds != 10 {
		t.Fatalf("stops %d, lost %g slot-seconds; want 1 stop and 10", res.Counts.Stops, res.LostSlotSeconds)
	}
	// 400 s of work plus the 10 s lost.
	if res.SlotSeconds != 410 {
		t.Fatalf("slot-seconds %g, want 410", res.SlotSeconds)
	}
	capacity := 2 * res.MakespanSeconds
	if math.Abs(res.Utilisation-410/capacity) > 1e-9 || math.Abs(res.UsefulUtilisation-400/capacity) > 1e-9 {
		t.Errorf("utilisation %g and useful %g, want %g and %g", res.Utilisation, res.UsefulUtilisation, 410/capacity, 400/capacity)
	}
}
