package sim

import (
	"math"
	"testing"
	"time"
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
