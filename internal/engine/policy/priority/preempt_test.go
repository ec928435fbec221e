package priority_test

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/model"
)

// TestUrgentTakesFreeSlotsFirst: free slots go to the first urgent job,
// then to other urgent jobs, then to everyone else — without preemption.
func TestUrgentTakesFreeSlotsFirst(t *testing.T) {
	g := newGrid(t, 10, priorityCfg(priority.Config{}))
	g.submit(newJob("normal", 20).prio(9))
	g.now = g.now.Add(time.Second)
	g.submit(newJob("u1", 4).urgent())
	g.now = g.now.Add(time.Second)
	g.submit(newJob("u2", 20).urgent().maxSlots(3))
	d := g.cycle()
	if got := startsByJob(d); got["u1"] != 4 || got["u2"] != 3 || got["normal"] != 3 {
		t.Errorf("starts = %v, want u1:4 u2:3 normal:3", got)
	}
	if len(d.Stops) != 0 {
		t.Errorf("stops = %v, want none (preemptablePercent defaults to 0)", d.Stops)
	}
}

// TestUrgentPreemption covers seed 001's preemption rules.
func TestUrgentPreemption(t *testing.T) {
	cases := []struct {
		name        string
		percent     int
		delay       time.Duration
		waited      time.Duration
		urgentTasks int // default 100
		urgentRuns  int // of 100 slots; the rest run job "low"
		wantStops   int
		wantReason  string // in the urgent job's pending reason when it waits
	}{
		// 50% preemptable and urgent jobs already run 47%: at most 3% more.
		{name: "50 percent with 47 already urgent preempts at most 3", percent: 50, urgentRuns: 47, wantStops: 3},
		{name: "preemptablePercent 0 disables preemption", percent: 0, urgentRuns: 47, wantStops: 0,
			wantReason: "preemptablePercent 0"},
		{name: "at the limit nothing is preempted", percent: 50, urgentRuns: 50, wantStops: 0,
			wantReason: "urgent jobs run 50 of 100 slots, and preemption stops at 50"},
		{name: "preempt delay not yet reached", percent: 50, delay: time.Minute, waited: 59 * time.Second, urgentRuns: 10, wantStops: 0,
			wantReason: "preemptDelay 1m0s"},
		{name: "preempt delay reached", percent: 50, delay: time.Minute, waited: time.Minute, urgentRuns: 10, wantStops: 40},
		// Never more than the urgent job can use: it has 3 tasks left.
		{name: "never more than the urgent job can use", percent: 100, urgentTasks: 50, urgentRuns: 47, wantStops: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGrid(t, 100, priorityCfg(priority.Config{PreemptablePercent: tc.percent, PreemptDelay: tc.delay}))
			if tc.urgentTasks == 0 {
				tc.urgentTasks = 100
			}
			g.submit(newJob("low", 200).prio(3), newJob("urgent", tc.urgentTasks).urgent())
			g.restore("urgent", tc.urgentRuns, t0)
			g.restore("low", 100-tc.urgentRuns, t0)
			g.now = t0.Add(tc.waited)
			d := g.cycle()
			if got := stopsByJob(d); got["low"] != tc.wantStops || got["urgent"] != 0 {
				t.Fatalf("stops = %v, want low:%d", got, tc.wantStops)
			}
			for _, s := range d.Stops {
				if s.Reason.Code != model.ReasonPreempted || !strings.Contains(s.Reason.Message, `urgent job "urgent"`) {
					t.Errorf("stop reason = %+v, want %s naming the urgent job", s.Reason, model.ReasonPreempted)
				}
			}
			// The freed slots go to the urgent job in the same cycle.
			if got := startsByJob(d); got["urgent"] != tc.wantStops || got["low"] != 0 {
				t.Errorf("starts = %v, want urgent:%d", got, tc.wantStops)
			}
			if tc.wantReason != "" {
				r, _ := pendingReason(d, "urgent")
				if !strings.Contains(r.Message, tc.wantReason) {
					t.Errorf("urgent reason = %q, want it to mention %q", r.Message, tc.wantReason)
				}
			}
		})
	}
}

// TestPreemptVictimScore: victims minimise priority + running/threshold.
// With a 30-minute threshold, a priority-2 task that has just started
// (score 2) goes before a priority-1 task running for 31 minutes (score
// 2.03); urgent tasks are never victims.
func TestPreemptVictimScore(t *testing.T) {
	g := newGrid(t, 4, priorityCfg(priority.Config{PreemptablePercent: 100, PreemptThreshold: 30 * time.Minute}))
	start := t0.Add(-31 * time.Minute)
	g.submit(newJob("p1", 1).prio(1).at(start), newJob("p2", 1).prio(2).at(start),
		newJob("u1", 2).urgent().at(start), newJob("u2", 5).urgent().at(start))
	g.restore("p1", 1, start)
	g.restore("u1", 2, start)
	g.restore("p2", 1, t0)
	g.now = t0
	d := g.cycle()
	// Urgent jobs run 2 of 4: at most 2 more, and u2 wants 5.
	if got := stopsByJob(d); got["p2"] != 1 || got["p1"] != 1 || got["u1"] != 0 {
		t.Fatalf("stops = %v, want p2 and p1, never u1", got)
	}
	if d.Stops[0].Job != "p2" {
		t.Errorf("first victim = %s, want p2 (score 2 < 1 + 31/30)", d.Stops[0].Job)
	}
	if got := startsByJob(d); got["u2"] != 2 {
		t.Errorf("starts = %v, want u2:2", got)
	}

	// With one victim allowed, only the priority-2 task goes.
	g = newGrid(t, 4, priorityCfg(priority.Config{PreemptablePercent: 75, PreemptThreshold: 30 * time.Minute}))
	g.submit(newJob("p1", 1).prio(1).at(start), newJob("p2", 1).prio(2).at(start),
		newJob("u1", 2).urgent().at(start), newJob("u2", 5).urgent().at(start))
	g.restore("p1", 1, start)
	g.restore("u1", 2, start)
	g.restore("p2", 1, t0)
	g.now = t0
	d = g.cycle()
	if len(d.Stops) != 1 || d.Stops[0].Job != "p2" {
		t.Errorf("stops = %v, want only p2's task", d.Stops)
	}
}

// TestUrgentNeverVictim: an urgent job's tasks are never preempted, even
// when their score (priority 0, just started) is the lowest on the grid.
func TestUrgentNeverVictim(t *testing.T) {
	g := newGrid(t, 4, priorityCfg(priority.Config{PreemptablePercent: 100}))
	g.submit(newJob("u1", 3).urgent(), newJob("high", 1).prio(9), newJob("u2", 4).urgent())
	g.restore("high", 1, t0.Add(-time.Hour))
	g.restore("u1", 3, t0)
	d := g.cycle()
	if got := stopsByJob(d); got["u1"] != 0 || got["high"] != 1 {
		t.Fatalf("stops = %v, want only high's task", got)
	}
	if got := startsByJob(d); got["u2"] != 1 {
		t.Errorf("starts = %v, want u2:1", got)
	}
	// Now every running task is urgent: u2 waits, nothing is stopped.
	d = g.cycle()
	if len(d.Stops) != 0 || len(d.Starts) != 0 {
		t.Fatalf("stops = %v, starts = %v, want none", d.Stops, d.Starts)
	}
	if r, _ := pendingReason(d, "u2"); r.Code != model.ReasonNoFreeSlot {
		t.Errorf("u2 reason = %+v, want %s", r, model.ReasonNoFreeSlot)
	}
}

// TestUrgentPreemptionOverTime drives rounds: an urgent job arrives on a
// full grid, waits its preempt delay, preempts up to the preemptable
// percentage, runs, and the preempted work resumes once it ends. Preempted
// tasks are requeued, not failed: they start again as a new attempt.
func TestUrgentPreemptionOverTime(t *testing.T) {
	g := newGrid(t, 10, priorityCfg(priority.Config{PreemptablePercent: 50, PreemptDelay: time.Minute}))
	g.submit(newJob("batch", 20).prio(5).dur(time.Hour))
	if d := g.cycle(); len(d.Starts) != 10 {
		t.Fatalf("batch starts = %d, want 10", len(d.Starts))
	}
	g.advance(t0.Add(10 * time.Minute))
	g.submit(newJob("urgent", 8).urgent().dur(5 * time.Minute))
	if d := g.cycle(); len(d.Stops) != 0 {
		t.Fatalf("stopped %v before the preempt delay", d.Stops)
	}
	g.advance(t0.Add(11 * time.Minute))
	d := g.cycle()
	// 50% of 10 slots: the urgent job may preempt 5 of the 8 it wants.
	if got := stopsByJob(d); got["batch"] != 5 {
		t.Fatalf("stops = %v, want batch:5", got)
	}
	if got := startsByJob(d); got["urgent"] != 5 {
		t.Fatalf("starts = %v, want urgent:5", got)
	}
	g.advance(t0.Add(12 * time.Minute))
	if d := g.cycle(); len(d.Stops) != 0 {
		t.Fatalf("preempted again at the limit: %v", d.Stops)
	}
	// The urgent tasks end at 16m; the 5 freed slots go to the 3 urgent
	// tasks left and 2 preempted batch tasks, restarted as attempt 2.
	g.advance(t0.Add(16 * time.Minute))
	d = g.cycle()
	if got := startsByJob(d); got["urgent"] != 3 || got["batch"] != 2 {
		t.Fatalf("starts at 16m = %v, want urgent:3 batch:2", got)
	}
	for _, s := range d.Starts {
		if s.Job == "batch" && s.Attempt != 2 {
			t.Errorf("restarted batch task %s has attempt %d, want 2", s.Task, s.Attempt)
		}
	}
}
