package classload

import (
	"fmt"
	"slices"
	"testing"
)

// classes builds Input classes c0, c1, ... from parallel slices.
func classes(pct, running, waiting []int) []Class {
	out := make([]Class, len(pct))
	for i := range pct {
		out[i] = Class{Name: fmt.Sprintf("c%d", i), Percent: pct[i], Running: running[i], Waiting: waiting[i]}
	}
	return out
}

// column extracts one field of every class result.
func column(out Output, f func(Result) int) []int {
	col := make([]int, len(out.Classes))
	for i, r := range out.Classes {
		col[i] = f(r)
	}
	return col
}

func starts(r Result) int   { return r.Starts }
func stops(r Result) int    { return r.Stops }
func target(r Result) int   { return r.Target }
func percent(r Result) int  { return r.Percent }
func entitled(r Result) int { return r.Entitled }
func loaned(r Result) int   { return r.Loaned }

// seedExample1 and seedExample2 are the worked examples of seed 004
// (Test_Class_Task_Start_Cnts, scenarios 1 and 3): 1000 workers, 710 tasks
// running, 290 idle.
var (
	seedExample1 = Input{Slots: 1000, Free: 290, Classes: classes(
		[]int{30, 25, 20, 15, 10, 0},
		[]int{200, 300, 0, 100, 110, 0},
		[]int{290, 230, 150, 150, 90, 328})}
	seedExample2 = Input{Slots: 1000, Free: 290, Classes: classes(
		[]int{30, 25, 20, 15, 10},
		[]int{200, 300, 0, 100, 110},
		[]int{10, 230, 0, 50, 90})}
)

func TestDistributeSeedExamples(t *testing.T) {
	tests := []struct {
		name                     string
		in                       Input
		targets, starts          []int
		entitled, loaned         []int
		roundKinds               []RoundKind
		firstRoundK, firstRoundS []int
	}{
		{
			name:       "example 1: two entitlement rounds allocate every idle worker",
			in:         seedExample1,
			targets:    []int{300, 250, 200, 150, 100, 0},
			starts:     []int{94, 0, 150, 46, 0, 0},
			entitled:   []int{94, 0, 150, 46, 0, 0},
			loaned:     []int{0, 0, 0, 0, 0, 0},
			roundKinds: []RoundKind{EntitlementRound, EntitlementRound},
		},
		{
			name:       "example 2: entitlement then loans to the classes still waiting",
			in:         seedExample2,
			targets:    []int{300, 250, 200, 150, 100},
			starts:     []int{10, 157, 0, 50, 73},
			entitled:   []int{10, 0, 0, 50, 0},
			loaned:     []int{0, 157, 0, 0, 73},
			roundKinds: []RoundKind{EntitlementRound, LoanRound, LoanRound},
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
				{"entitled", column(out, entitled), tc.entitled},
				{"loaned", column(out, loaned), tc.loaned},
				{"stops", column(out, stops), make([]int, len(tc.in.Classes))},
			} {
				if !slices.Equal(c.got, c.want) {
					t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
				}
			}
			var kinds []RoundKind
			for _, r := range out.Rounds {
				kinds = append(kinds, r.Kind)
			}
			if !slices.Equal(kinds, tc.roundKinds) {
				t.Errorf("rounds = %v, want %v", kinds, tc.roundKinds)
			}
			if out.Idle != 290 || out.Left != 0 {
				t.Errorf("idle = %d, left = %d; want 290 and 0", out.Idle, out.Left)
			}
		})
	}
}

// TestDistributeSeedExampleRounds pins the intermediate figures the settled
// rounding produces (DESIGN §4: ceil per class, the first class taking the
// percent remainder), which the docs tables show.
func TestDistributeSeedExampleRounds(t *testing.T) {
	tests := []struct {
		name   string
		in     Input
		rounds []Round
	}{
		{"example 1", seedExample1, []Round{
			{Kind: EntitlementRound, Idle: 290, K: 290, Weight: []int{100, 0, 200, 50, 0, 0},
				Percent: []int{29, 0, 57, 14, 0, 0}, Starts: []int{85, 0, 150, 41, 0, 0}},
			{Kind: EntitlementRound, Idle: 14, K: 14, Weight: []int{15, 0, 0, 9, 0, 0},
				Percent: []int{63, 0, 0, 37, 0, 0}, Starts: []int{9, 0, 0, 5, 0, 0}},
		}},
		{"example 2", seedExample2, []Round{
			{Kind: EntitlementRound, Idle: 290, K: 150, Weight: []int{100, 0, 0, 50, 0},
				Percent: []int{67, 0, 0, 33, 0}, Starts: []int{10, 0, 0, 50, 0}},
			{Kind: LoanRound, Idle: 230, K: 230, Weight: []int{0, 157, 0, 0, 72},
				Percent: []int{0, 68, 0, 0, 31}, Starts: []int{0, 157, 0, 0, 72}},
			{Kind: LoanRound, Idle: 1, K: 1, Weight: []int{0, 0, 0, 0, 7},
				Percent: []int{0, 0, 0, 0, 100}, Starts: []int{0, 0, 0, 0, 1}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Distribute(tc.in).Rounds
			if len(got) != len(tc.rounds) {
				t.Fatalf("got %d rounds, want %d: %+v", len(got), len(tc.rounds), got)
			}
			for i, want := range tc.rounds {
				g := got[i]
				if g.Kind != want.Kind || g.Idle != want.Idle || g.K != want.K || !slices.Equal(g.Weight, want.Weight) ||
					!slices.Equal(g.Percent, want.Percent) || !slices.Equal(g.Starts, want.Starts) {
					t.Errorf("round %d = %+v\nwant %+v", i, g, want)
				}
			}
		})
	}
}

func TestDistributeRules(t *testing.T) {
	tests := []struct {
		name                             string
		in                               Input
		percents, targets, starts, stops []int
		left                             int
	}{
		{
			name:     "percentages that do not sum to 100 are normalized",
			in:       Input{Slots: 100, Free: 100, Classes: classes([]int{3, 1}, []int{0, 0}, []int{100, 100})},
			percents: []int{75, 25}, targets: []int{75, 25}, starts: []int{75, 25}, stops: []int{0, 0},
		},
		{
			name:     "equal percentages: the class listed first absorbs the remainder",
			in:       Input{Slots: 100, Free: 100, Classes: classes([]int{10, 10, 10}, []int{0, 0, 0}, []int{100, 100, 100})},
			percents: []int{34, 33, 33}, targets: []int{34, 33, 33}, starts: []int{34, 33, 33}, stops: []int{0, 0, 0},
		},
		{
			name:     "the highest class absorbs the target remainder, wherever it is listed",
			in:       Input{Slots: 7, Free: 7, Classes: classes([]int{25, 50, 25}, []int{0, 0, 0}, []int{0, 0, 0})},
			percents: []int{25, 50, 25}, targets: []int{1, 5, 1}, starts: []int{0, 0, 0}, stops: []int{0, 0, 0},
			left: 7,
		},
		{
			name:     "a 0% class never starts, even when every other worker is idle",
			in:       Input{Slots: 10, Free: 10, Classes: classes([]int{100, 0}, []int{0, 0}, []int{0, 5})},
			percents: []int{100, 0}, targets: []int{10, 0}, starts: []int{0, 0}, stops: []int{0, 0},
			left: 10,
		},
		{
			name:     "a 0% class's running tasks count against the idle workers",
			in:       Input{Slots: 10, Free: 10, Classes: classes([]int{100, 0}, []int{0, 6}, []int{9, 0})},
			percents: []int{100, 0}, targets: []int{10, 0}, starts: []int{4, 0}, stops: []int{0, 0},
		},
		{
			name:     "idle is capped by the free slots the pool has",
			in:       Input{Slots: 100, Free: 10, Classes: classes([]int{50, 50}, []int{0, 0}, []int{100, 100})},
			percents: []int{50, 50}, targets: []int{50, 50}, starts: []int{5, 5}, stops: []int{0, 0},
		},
		{
			name:     "more running than slots (draining workers) leaves nothing idle",
			in:       Input{Slots: 10, Free: 3, Classes: classes([]int{50, 50}, []int{8, 4}, []int{5, 5})},
			percents: []int{50, 50}, targets: []int{5, 5}, starts: []int{0, 0}, stops: []int{0, 0},
		},
		{
			// Loans: L = 7 + 7 + 1 = 15; floor(15 × 34/67) − 7 = 0 and
			// floor(15 × 33/67) − 7 = 0, so no loan round can start the
			// last idle worker; the fill round gives it to the highest class.
			name:     "a fill round hands out what every loan entitlement rounds away",
			in:       Input{Slots: 100, Free: 1, Classes: classes([]int{34, 33, 33}, []int{41, 40, 18}, []int{5, 5, 0})},
			percents: []int{34, 33, 33}, targets: []int{34, 33, 33}, starts: []int{1, 0, 0}, stops: []int{0, 0, 0},
		},
		{
			name: "rebalance stops the class above target and starts the one below",
			in: Input{Slots: 100, Free: 0, Rebalance: true,
				Classes: classes([]int{50, 50}, []int{80, 20}, []int{10, 30})},
			percents: []int{50, 50}, targets: []int{50, 50}, starts: []int{0, 30}, stops: []int{30, 0},
		},
		{
			// a stops 30 (40 waiting, 50 idle); b's entitlement takes its 40
			// waiting; the last 10 idle workers are loaned to a, which
			// keeps 10 of the tasks it would have stopped.
			name: "a loan share reduces a stopping class's stops",
			in: Input{Slots: 100, Free: 20, Rebalance: true,
				Classes: classes([]int{50, 50}, []int{80, 0}, []int{10, 40})},
			percents: []int{50, 50}, targets: []int{50, 50}, starts: []int{0, 40}, stops: []int{20, 0},
		},
		{
			name: "rebalance stops a 0% class's running tasks",
			in: Input{Slots: 10, Free: 0, Rebalance: true,
				Classes: classes([]int{100, 0}, []int{2, 8}, []int{8, 0})},
			percents: []int{100, 0}, targets: []int{10, 0}, starts: []int{8, 0}, stops: []int{0, 8},
		},
		{
			name: "rebalance with nobody else waiting stops nothing",
			in: Input{Slots: 100, Free: 0, Rebalance: true,
				Classes: classes([]int{50, 50}, []int{100, 0}, []int{7, 0})},
			percents: []int{50, 50}, targets: []int{50, 50}, starts: []int{0, 0}, stops: []int{0, 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := Distribute(tc.in)
			for _, c := range []struct {
				what      string
				got, want []int
			}{
				{"percents", column(out, percent), tc.percents},
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

func TestDistributeFillRoundOnlyWhenLoansStall(t *testing.T) {
	in := Input{Slots: 100, Free: 1, Classes: classes([]int{34, 33, 33}, []int{41, 40, 18}, []int{5, 5, 0})}
	rounds := Distribute(in).Rounds
	if len(rounds) != 1 || rounds[0].Kind != FillRound {
		t.Fatalf("rounds = %+v, want one fill round", rounds)
	}
	for _, in := range []Input{seedExample1, seedExample2} {
		for _, r := range Distribute(in).Rounds {
			if r.Kind == FillRound {
				t.Errorf("seed example ran a fill round: %+v", r)
			}
		}
	}
}

func TestSpread(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want int
	}{
		// c0 +10, c1 −5, c2 +20, c3 +5, c4 −1, c5 0.
		{"example 1", seedExample1, 25},
		// c2 neither waits nor runs above target, so its +20 is left out.
		{"example 2", seedExample2, 15},
		{"only classes that wait or run above target count",
			Input{Slots: 100, Classes: classes([]int{50, 50}, []int{10, 40}, []int{0, 0})}, 0},
		{"a class above target with nobody waiting",
			Input{Slots: 100, Classes: classes([]int{50, 50}, []int{80, 0}, []int{0, 0})}, 30},
		{"running is floored to whole percents",
			Input{Slots: 1000, Classes: classes([]int{50, 50}, []int{509, 0}, []int{0, 1})}, 50},
		{"a pool with no slots has no spread",
			Input{Slots: 0, Classes: classes([]int{50, 50}, []int{0, 0}, []int{3, 0})}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Spread(tc.in); got != tc.want {
				t.Errorf("Spread = %d, want %d", got, tc.want)
			}
		})
	}
}

func BenchmarkDistribute(b *testing.B) {
	for _, in := range []struct {
		name string
		in   Input
	}{{"example1", seedExample1}, {"example2", seedExample2}} {
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Distribute(in.in)
			}
		})
	}
}
