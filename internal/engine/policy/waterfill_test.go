package policy

import (
	"math"
	"testing"
)

// Three groups of weight 1, 2 and 3 share 12 slots: 2, 4 and 6 each at
// first, but the weight-2 group wants only 2, so the 10 left are shared
// 1:3 between the others: 2.5 and 7.5.
func TestWaterFillCapsAGroupAndSharesWhatItLeaves(t *testing.T) {
	tests := []struct {
		name                 string
		capacity             float64
		demand, weight, want []float64
	}{
		{"one group capped", 12, []float64{10, 2, 10}, []float64{1, 2, 3}, []float64{2.5, 2, 7.5}},
		{"nobody capped", 12, []float64{10, 10, 10}, []float64{1, 2, 3}, []float64{2, 4, 6}},
		{"all capped leaves slots idle", 12, []float64{1, 2, 3}, []float64{1, 2, 3}, []float64{1, 2, 3}},
		{"two capped in cascade", 12, []float64{1, 3, 20}, []float64{1, 2, 3}, []float64{1, 3, 8}},
		{"no demand gets nothing", 12, []float64{0, 10, 10}, []float64{1, 2, 3}, []float64{0, 4.8, 7.2}},
		{"weight 0 gets only the rest", 12, []float64{5, 2, 10}, []float64{0, 1, 1}, []float64{0, 2, 10}},
		{"weight 0 shares what is left", 12, []float64{5, 2, 3}, []float64{0, 1, 1}, []float64{5, 2, 3}},
		{"weight 0 groups share equally", 12, []float64{10, 10, 2}, []float64{0, 0, 1}, []float64{5, 5, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := make([]float64, len(tc.demand))
			WaterFill(tc.capacity, tc.demand, tc.weight, got, nil)
			for i := range got {
				if math.Abs(got[i]-tc.want[i]) > 1e-9 {
					t.Fatalf("WaterFill(%g, %v, %v) = %v, want %v", tc.capacity, tc.demand, tc.weight, got, tc.want)
				}
			}
		})
	}
}
