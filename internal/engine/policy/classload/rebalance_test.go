package classload

import (
	"slices"
	"testing"
)

// Scoot's own rebalance cases (Test_Rebalance of its load-based algorithm):
// 10 and 10,000 workers, three and eight classes, the classes far above
// their percentages stopping their newest tasks. When the rebalance is due,
// every class below its target starts exactly target − running tasks (or all
// its waiting tasks when fewer), and only the slots left after that are
// loaned, by the percentages normalized over the classes still waiting.
var (
	// Two classes far above target; every class below target has the
	// tasks to reach it, so nothing is left to loan.
	scootRebalance = Input{Slots: 10000, Free: 10000 - 4736, Rebalance: true, Classes: classes(
		[]int{30, 25, 16, 14, 6, 4, 3, 2},
		[]int{166, 101, 420, 14, 404, 42, 977, 2612},
		[]int{14220, 9401, 16542, 104194, 15944, 11136, 209145, 416781})}
	// c4 and c5 have no waiting tasks: their unused entitlement (196 and
	// 358 slots) is loaned, 554 slots in one pass by the normalized
	// percentages of the classes that wait (c0 36, c1 27, c2 17, c3 15, c6
	// 3, c7 2), and a loan share first cancels a stopping class's stops.
	scootRebalanceLoan = Input{Slots: 10000, Free: 10000 - 4736, Rebalance: true, Classes: classes(
		[]int{30, 25, 16, 14, 6, 4, 3, 2},
		[]int{166, 101, 420, 14, 404, 42, 977, 2612},
		[]int{14220, 9401, 16542, 104194, 0, 0, 209145, 416781})}
)

func TestDistributeRebalanceBringsEachClassToItsTarget(t *testing.T) {
	tests := []struct {
		name                   string
		in                     Input
		targets, starts, stops []int
		left                   int
	}{
		{
			name: "ten workers: the two classes above target stop, the one below starts to its target",
			in: Input{Slots: 10, Free: 0, Rebalance: true, Classes: classes(
				[]int{70, 20, 10}, []int{2, 4, 4}, []int{20, 10, 30})},
			targets: []int{7, 2, 1}, starts: []int{5, 0, 0}, stops: []int{0, 2, 3},
		},
		{
			name:    "ten thousand workers, eight classes: exactly target − running, nothing to loan",
			in:      scootRebalance,
			targets: []int{3000, 2500, 1600, 1400, 600, 400, 300, 200},
			starts:  []int{2834, 2399, 1180, 1386, 196, 358, 0, 0},
			stops:   []int{0, 0, 0, 0, 0, 0, 677, 2412},
		},
		{
			name:    "ten thousand workers, eight classes: what classes without work leave is loaned in one pass",
			in:      scootRebalanceLoan,
			targets: []int{3000, 2500, 1600, 1400, 600, 400, 300, 200},
			starts:  []int{3034, 2549, 1275, 1470, 0, 0, 0, 0},
			stops:   []int{0, 0, 0, 0, 0, 0, 660, 2404},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := Distribute(tc.in)
			for _, c := range []struct {
				what      string
				got, want []int
			}{
				{"targets", column(out, target), tc.targets},
				{"starts", column(out, starts), tc.starts},
				{"stops", column(out, stops), tc.stops},
			} {
				if !slices.Equal(c.got, c.want) {
					t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
				}
			}
			if out.Left != tc.left {
				t.Errorf("left = %d, want %d", out.Left, tc.left)
			}
		})
	}
}

// Scoot's trigger for its cases, with a threshold of 50: the spread of the
// rebalance cases is 53 (c0 +29 … c7 −24); in its "spread not large enough"
// case c0 runs 1,660 tasks, its difference is +14 and the spread is 48.
func TestSpreadOfScootsRebalanceCases(t *testing.T) {
	if got := Spread(scootRebalance); got != 53 {
		t.Errorf("Spread = %d, want 53", got)
	}
	notEnough := Input{Slots: 10000, Classes: classes(
		[]int{30, 25, 16, 14, 6, 4, 3, 2},
		[]int{1660, 101, 420, 14, 404, 42, 977, 2612},
		[]int{14220, 9401, 16542, 104194, 5944, 11136, 9145, 16781})}
	if got := Spread(notEnough); got != 48 {
		t.Errorf("Spread = %d, want 48", got)
	}
	// Below the threshold the cycle is an ordinary one, and Scoot's test
	// expects the same starts as its Test_Class_Task_Start_Cnts case of
	// these classes.
	notEnough.Free = 10000 - 6230
	want := []int{830, 1282, 641, 754, 76, 187, 0, 0}
	if got := column(Distribute(notEnough), starts); !slices.Equal(got, want) {
		t.Errorf("starts = %v, want %v", got, want)
	}
}
