package priority_test

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/engine/policy/sla"
	"github.com/allot-sched/allot/internal/model"
)

// affinityGrid runs seed 001's affinity example on the real engine: job f
// holds w0000 while job X's first task t0 runs on w0001, so that w0001 (the
// seed's Engine A) has affinity to X and first-fit alone would not pick
// it. X's other tasks (t1, t2, …) need t0, so they become ready together
// when t0 ends. The grid is returned with t0 just finished.
func affinityGrid(t *testing.T, workers, followers int, cfg priority.Config) *grid {
	t.Helper()
	g := newGrid(t, workers, priorityCfg(cfg))
	g.submit(newJob("f", 1).prio(5))
	g.cycle()
	x := newJob("X", 1+followers).prio(5)
	for i := 1; i < len(x.Tasks); i++ {
		x.Tasks[i].Needs = []string{"t0"}
	}
	g.submit(x)
	if got := workerOf(g.cycle(), "X", "t0"); got != "w0001" {
		t.Fatalf("setup: X/t0 started on %q, want w0001", got)
	}
	g.now = g.now.Add(time.Second)
	g.finish("X", 1)
	return g
}

// workerOf returns the worker a cycle started job/task on, or "".
func workerOf(d *engine.Decisions, jobID, task string) string {
	for _, s := range d.Starts {
		if s.Job == jobID && s.Task == task {
			return s.Worker
		}
	}
	return ""
}

func TestIntrinsicAffinityPrefersWorkerThatRanTheJob(t *testing.T) {
	off := false
	for _, tc := range []struct {
		name       string
		cfg        priority.Config
		t1, t2     string // workers of X's next two tasks
		t1Affinity bool
	}{
		// A (w0001) ran X and is idle with B (w0000): A gets X's task; A is
		// then busy, so B gets the other.
		{"usage", priority.Config{}, "w0001", "w0000", true},
		// Not used with the Time algorithm: first-fit picks w0000.
		{"time", priority.Config{Algorithm: priority.AlgorithmTime}, "w0000", "w0001", false},
		{"switched off", priority.Config{Affinity: &off}, "w0000", "w0001", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := affinityGrid(t, 2, 2, tc.cfg)
			g.finish("f", 1) // both workers idle
			d := g.cycle()
			if got1, got2 := workerOf(d, "X", "t1"), workerOf(d, "X", "t2"); got1 != tc.t1 || got2 != tc.t2 {
				t.Fatalf("X/t1 on %q, X/t2 on %q; want %q, %q (starts %+v)", got1, got2, tc.t1, tc.t2, d.Starts)
			}
			for _, s := range d.Starts {
				if s.Task == "t1" && (s.Placement.Via.String() == "affinity") != tc.t1Affinity {
					t.Fatalf("X/t1 chosen via %s", s.Placement.Via)
				}
			}
		})
	}
}

func TestAffinityWait(t *testing.T) {
	const wait = time.Minute
	cfg := priority.Config{AffinityWait: wait}
	t.Run("passes over a free worker without affinity until the wait ends", func(t *testing.T) {
		// Workers w0000 (f), w0001 (ran X), w0002 (free, never ran X).
		g := affinityGrid(t, 3, 2, cfg)
		ready := g.now
		d := g.cycle()
		if got := workerOf(d, "X", "t1"); got != "w0001" {
			t.Fatalf("X/t1 on %q, want the affinity worker w0001", got)
		}
		if got := workerOf(d, "X", "t2"); got != "" {
			t.Fatalf("X/t2 started on %q within the affinity wait", got)
		}
		r, _ := pendingReason(d, "X")
		if r.Code != model.ReasonAffinityWait || !strings.Contains(r.Message, "affinityWait") {
			t.Fatalf("reason %+v, want %s", r, model.ReasonAffinityWait)
		}
		g.now = ready.Add(wait - time.Second)
		if d := g.cycle(); len(d.Starts) != 0 {
			t.Fatalf("a second before the wait ends: starts %+v", d.Starts)
		}
		g.now = ready.Add(wait)
		if got := workerOf(g.cycle(), "X", "t2"); got != "w0002" {
			t.Fatalf("after the wait X/t2 on %q, want w0002", got)
		}
	})
	t.Run("takes the affinity worker when it frees up within the wait", func(t *testing.T) {
		g := affinityGrid(t, 3, 2, cfg)
		g.cycle() // t1 on w0001, t2 waits
		g.now = g.now.Add(wait / 2)
		g.finish("X", 1)
		if got := workerOf(g.cycle(), "X", "t2"); got != "w0001" {
			t.Fatalf("X/t2 on %q, want w0001", got)
		}
	})
	t.Run("a new job's first task takes any worker and its others wait for it", func(t *testing.T) {
		g := newGrid(t, 2, priorityCfg(cfg))
		g.submit(newJob("X", 2).prio(5))
		if n := startsByJob(g.cycle())["X"]; n != 1 {
			t.Fatalf("X started %d tasks, want 1 (the second waits for the first one's worker)", n)
		}
		g.now = g.now.Add(wait)
		if n := startsByJob(g.cycle())["X"]; n != 1 {
			t.Fatalf("after the wait X started %d tasks, want 1", n)
		}
	})
}

func TestAffinityConfig(t *testing.T) {
	off := false
	for _, tc := range []struct {
		cfg  *priority.Config
		on   bool
		wait time.Duration
		err  string
	}{
		{nil, true, 0, ""},
		{&priority.Config{AffinityWait: time.Minute}, true, time.Minute, ""},
		{&priority.Config{Affinity: &off, AffinityWait: time.Minute}, false, 0, ""},
		{&priority.Config{Algorithm: priority.AlgorithmTime}, false, 0, ""},
		{&priority.Config{AffinityWait: -time.Second}, false, 0, "priority.affinityWait: must not be negative (got -1s)"},
	} {
		err := tc.cfg.Validate()
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Fatalf("%+v: error %v, want %q", tc.cfg, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		p, err := policy.New(policy.Config{Kind: "priority", Settings: tc.cfg})
		if err != nil {
			t.Fatal(err)
		}
		on, wait := p.(policy.AffinityPolicy).Affinity()
		if on != tc.on || wait != tc.wait {
			t.Fatalf("%+v: affinity %v %s, want %v %s", tc.cfg, on, wait, tc.on, tc.wait)
		}
	}
	sla, err := policy.New(slaCfg(sla.Config{Groups: []sla.Group{{Name: "a", Value: 1}}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sla.(policy.AffinityPolicy); ok {
		t.Fatal("the sla policy must not ask for affinity")
	}
}
