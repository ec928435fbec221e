package perjob

import (
	"fmt"
	"testing"
	"time"
)

var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }

// TestUsageIntegratesOverWindow checks the sliding-window integral against
// figures worked by hand (window 100 s).
func TestUsageIntegratesOverWindow(t *testing.T) {
	type acc struct {
		delta, sec int
	}
	cases := []struct {
		name  string
		calls []acc
		now   int
		want  float64 // slot-seconds
	}{
		{"one task for 30 s", []acc{{1, 0}}, 30, 30},
		{"two tasks, one ends", []acc{{1, 0}, {1, 10}, {-1, 40}}, 60, 60 + 30},
		{"slides out of the window", []acc{{1, 0}, {-1, 50}}, 120, 30},
		{"entirely out of the window", []acc{{1, 0}, {-1, 50}}, 200, 0},
		{"long-running task counts one window", []acc{{3, 0}}, 1000, 300},
		{"same instant merges", []acc{{1, 5}, {1, 5}, {-2, 15}}, 20, 20},
		// A restore at an earlier time is inserted where it belongs.
		{"out of order", []acc{{1, 20}, {1, 10}}, 30, 10 + 20},
		{"before the first point", []acc{{1, 20}, {-1, 40}, {1, 0}}, 50, 20 + 50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBook(100 * time.Second)
			for _, c := range tc.calls {
				b.Account("j", c.delta, at(c.sec))
			}
			if got := b.Usage(b.jobs["j"], at(tc.now)); got != tc.want {
				t.Errorf("usage = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestUsageStartsAtIdealShare: a job first seen is charged as if it had run
// at its share for the whole window; that charge slides out as it runs.
func TestUsageStartsAtIdealShare(t *testing.T) {
	b := NewBook(100 * time.Second)
	b.StartCycle()
	a := b.See("j", 2.5, at(0))
	if got := b.Usage(a, at(0)); got != 250 {
		t.Errorf("usage when first seen = %v, want 2.5 slots × 100 s", got)
	}
	b.Account("j", 3, at(0))
	// 40 s later: 60 s of the virtual 2.5 slots, 40 s of 3 real.
	if got := b.Usage(a, at(40)); got != 2.5*60+3*40 {
		t.Errorf("usage at 40 s = %v, want %v", got, 2.5*60+3*40)
	}
	// A second sighting does not restart it.
	b.See("j", 9, at(50))
	if got := b.Usage(a, at(100)); got != 300 {
		t.Errorf("usage at 100 s = %v, want 300 (virtual share gone)", got)
	}
}

// TestSweepForgetsEndedJobs: jobs no longer in a view, idle, and whose
// usage has slid out are dropped; the others are kept.
func TestSweepForgetsEndedJobs(t *testing.T) {
	b := NewBook(100 * time.Second)
	b.StartCycle()
	b.See("gone", 1, at(0))
	b.See("recent", 1, at(0))
	b.Account("recent", 1, at(0))
	b.Account("recent", -1, at(150))
	b.StartCycle()
	b.See("listed", 1, at(200))
	b.Sweep(at(200))
	if _, ok := b.jobs["gone"]; ok {
		t.Error("gone was kept")
	}
	if _, ok := b.jobs["recent"]; !ok {
		t.Error("recent was dropped while its usage is in the window")
	}
	if _, ok := b.jobs["listed"]; !ok {
		t.Error("listed was dropped")
	}
}

// TestShareSplitsEvenly checks the integer split of a group's slots among
// its jobs.
func TestShareSplitsEvenly(t *testing.T) {
	cases := []struct {
		name  string
		total int
		caps  []int
		want  []int
	}{
		{"even", 9, []int{10, 10, 10}, []int{3, 3, 3}},
		{"remainder to the first", 10, []int{10, 10, 10}, []int{4, 3, 3}},
		{"capped job leaves the rest", 10, []int{1, 10, 10}, []int{1, 5, 4}},
		{"more than all can use", 50, []int{2, 3, 4}, []int{2, 3, 4}},
		{"nothing", 0, []int{2, 3}, []int{0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			order := make([]int, len(tc.caps))
			for i := range order {
				order[i] = i
			}
			got := Share(tc.total, order, tc.caps)
			for i, w := range tc.want {
				if got[i] != w {
					t.Errorf("share = %v, want %v", got, tc.want)
					break
				}
			}
		})
	}
}

// TestAllocatorPhases drives the allocator as the engine does: a sequential
// pass up to targets, then round-robin over what is left, skipping a job
// once it has no task to place.
func TestAllocatorPhases(t *testing.T) {
	running := []int{0, 1, 0}
	tasks := []int{2, 100, 100} // job 0 can run only 2 tasks
	a := NewAllocator(append([]int(nil), running...), nil)
	a.Add(&Phase{Order: []int{2, 0, 1}, Target: UpTo([]int{1, 2, 2})})
	a.Add(&Phase{Order: []int{2, 0, 1}, Target: NoLimit, RoundRobin: true})
	var got []int
	for len(got) < 9 {
		g, ok := a.Next()
		if !ok {
			break
		}
		if a.given[g] == tasks[g] {
			a.Exhausted(g)
			continue
		}
		got = append(got, g)
		a.Started(g)
	}
	// Sequential, in order 2, 0, 1: job 2 up to 2, job 0 up to 1, job 1
	// (running 1) up to 2. Then round-robin 2, 0, 1, and job 0 is done.
	want := []int{2, 2, 0, 1, 2, 0, 1, 2, 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
}
