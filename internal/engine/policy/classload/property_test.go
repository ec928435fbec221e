package classload

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// drawInput draws a random cycle: 1-7 classes with percentages that need
// not sum to 100 (at least one positive), a pool of up to 3000 slots, and
// running counts that may even exceed it (draining workers).
func drawInput(t *rapid.T) Input {
	n := rapid.IntRange(1, 7).Draw(t, "classes")
	in := Input{Slots: rapid.IntRange(0, 3000).Draw(t, "slots"), Rebalance: rapid.Bool().Draw(t, "rebalance")}
	positive := false
	for i := 0; i < n; i++ {
		c := Class{
			Name:    fmt.Sprintf("c%d", i),
			Percent: rapid.IntRange(0, 100).Draw(t, "percent"),
			Running: rapid.IntRange(0, 1200).Draw(t, "running"),
			Waiting: rapid.IntRange(0, 800).Draw(t, "waiting"),
		}
		positive = positive || c.Percent > 0
		in.Classes = append(in.Classes, c)
	}
	if !positive {
		in.Classes[0].Percent = 1
	}
	in.Free = rapid.IntRange(0, in.Slots).Draw(t, "free")
	return in
}

func idleOf(in Input) int {
	sum := 0
	for _, c := range in.Classes {
		sum += c.Running
	}
	return max(0, min(in.Free, in.Slots-sum))
}

func TestDistributeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := drawInput(t)
		out := Distribute(in)
		idle := idleOf(in)

		sumStarts, sumStops, sumTargets, sumPct := 0, 0, 0, 0
		allServed := true // every class with a positive percent started all its waiting tasks
		for i, c := range in.Classes {
			r := out.Classes[i]
			sumStarts += r.Starts
			sumStops += r.Stops
			sumTargets += r.Target
			sumPct += r.Percent
			if r.Starts < 0 || r.Stops < 0 {
				t.Fatalf("%s: negative starts %d or stops %d", c.Name, r.Starts, r.Stops)
			}
			if r.Starts > c.Waiting {
				t.Fatalf("%s starts %d tasks but only %d wait", c.Name, r.Starts, c.Waiting)
			}
			if r.Percent == 0 && r.Starts > 0 {
				t.Fatalf("%s has 0%% and starts %d", c.Name, r.Starts)
			}
			if r.Stops > max(0, c.Running-r.Target) {
				t.Fatalf("%s stops %d tasks, more than its %d above target %d", c.Name, r.Stops, c.Running, r.Target)
			}
			if r.Stops > 0 && r.Starts > 0 {
				t.Fatalf("%s both stops %d and starts %d", c.Name, r.Stops, r.Starts)
			}
			if !in.Rebalance && r.Stops > 0 {
				t.Fatalf("%s stops %d tasks without a rebalance", c.Name, r.Stops)
			}
			if r.Percent > 0 && (r.Starts < c.Waiting || r.Stops > 0) {
				allServed = false
			}
		}
		if sumPct != 100 {
			t.Fatalf("percents sum to %d", sumPct)
		}
		if sumTargets != in.Slots {
			t.Fatalf("targets sum to %d, want %d slots", sumTargets, in.Slots)
		}
		if sumStarts-sumStops > idle {
			t.Fatalf("starts %d − stops %d exceed the %d idle slots", sumStarts, sumStops, idle)
		}
		if !in.Rebalance && sumStarts > idle {
			t.Fatalf("starts %d exceed the %d idle slots", sumStarts, idle)
		}
		if out.Left != idle+sumStops-sumStarts {
			t.Fatalf("left = %d, want idle %d + stops %d − starts %d", out.Left, idle, sumStops, sumStarts)
		}
		// No worker stays idle while a class could use it.
		if out.Left > 0 && !allServed {
			t.Fatalf("%d slots left idle while classes still wait: %+v", out.Left, out.Classes)
		}
		// A class ends above its target only when workers would otherwise
		// stay idle.
		for i, c := range in.Classes {
			r := out.Classes[i]
			end := c.Running - r.Stops + r.Starts
			if r.Starts > 0 && end > r.Target && !(out.Left == 0 || allServed) {
				t.Fatalf("%s ends at %d above its target %d while workers stay idle and classes wait", c.Name, end, r.Target)
			}
		}
	})
}

// TestRebalanceRestoresEntitlements checks what a rebalance is for: when
// the pool itself is not the limit, every class ends at its target exactly,
// or with all its tasks running when it has fewer, unless slots are left
// over for loans; then every class that had the tasks ends at or above it.
// A class above its target ends at it unless slots are loaned back to it.
func TestRebalanceRestoresEntitlements(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := drawInput(t)
		in.Rebalance = true
		sum := 0
		for _, c := range in.Classes {
			sum += c.Running
		}
		if sum > in.Slots {
			t.Skip("more running than slots")
		}
		in.Free = in.Slots - sum
		out := Distribute(in)
		loaned := 0
		for _, r := range out.Classes {
			loaned += r.Loaned
		}
		for i, c := range in.Classes {
			r := out.Classes[i]
			end := c.Running - r.Stops + r.Starts
			want := min(r.Target, c.Running+c.Waiting)
			if r.Percent == 0 {
				want = 0
			}
			switch {
			case end < want:
				t.Fatalf("%s ends at %d, below min(target %d, running + waiting %d): %+v", c.Name, end, r.Target, c.Running+c.Waiting, out.Classes)
			case end > want && loaned == 0:
				t.Fatalf("%s ends at %d, above %d with nothing loaned: %+v", c.Name, end, want, out.Classes)
			case r.Loaned == 0 && end != want && r.Percent > 0:
				t.Fatalf("%s ends at %d without a loan, want exactly %d: %+v", c.Name, end, want, out.Classes)
			}
		}
	})
}
