package engine

import (
	"fmt"
	"time"

	"github.com/allot-sched/allot/internal/engine/drive"
	"github.com/allot-sched/allot/internal/model"
)

// This file answers "when will my job start": EstimateStart runs a copy of
// the scheduler forward in virtual time with the production engine, ending
// each running attempt at an estimated time, until the job's first waiting
// task starts. The copy is the caller's to build (the server replays its
// live state into a fresh engine, `allot explain -f` builds the scenario's);
// the simulation consumes it.

// WhatIf bounds and feeds the simulation of EstimateStart. Zero values take
// the defaults below.
type WhatIf struct {
	// Horizon is how far ahead of the start time the simulation looks.
	Horizon time.Duration
	// MaxCycles bounds the scheduling cycles simulated, so an estimate on
	// a large state stays cheap.
	MaxCycles int
	// Tick runs a cycle at least this often in virtual time while attempts
	// run, or while the job waits for admission, even when no attempt
	// ends, so time-based rules (starvation reservations, rebalance
	// durations, preemption delays, usage windows) get their chance. The
	// end of an affinity wait gets a cycle of its own, at its exact time.
	Tick time.Duration
	// Runtime estimates how long an attempt of a task runs (the server:
	// the mean of the task's stage's observed runtimes in the job, else
	// its timeout); ok=false falls back to the task's declared duration,
	// then to DefaultRuntime.
	Runtime func(job string, t *model.Task) (d time.Duration, ok bool)
	// DefaultRuntime is the runtime of an attempt nothing else estimates.
	DefaultRuntime time.Duration
}

// Defaults of WhatIf.
const (
	DefaultHorizon        = 24 * time.Hour
	DefaultMaxCycles      = 2000
	DefaultTick           = 5 * time.Minute
	DefaultAttemptRuntime = 30 * time.Minute
)

func (w WhatIf) withDefaults() WhatIf {
	if w.Horizon <= 0 {
		w.Horizon = DefaultHorizon
	}
	if w.MaxCycles <= 0 {
		w.MaxCycles = DefaultMaxCycles
	}
	if w.Tick <= 0 {
		w.Tick = DefaultTick
	}
	if w.DefaultRuntime <= 0 {
		w.DefaultRuntime = DefaultAttemptRuntime
	}
	return w
}

// Estimate is when a job's first waiting task is expected to start, from a
// simulation of the current state (EstimateStart). Known is false when the
// job does not start within the horizon or the cycle bound, or cannot start
// at all in the current state; Note says which.
type Estimate struct {
	Known bool      `json:"known"`
	Start time.Time `json:"start,omitzero"`
	// WaitSeconds is Start minus the simulation's start time.
	WaitSeconds float64 `json:"waitSeconds,omitempty"`
	// Task and Worker are the first task to start, and where.
	Task   string `json:"task,omitempty"`
	Worker string `json:"worker,omitempty"`
	// Cycles and Ends count the simulated cycles and attempt ends.
	Cycles         int     `json:"cycles"`
	Ends           int     `json:"ends"`
	HorizonSeconds float64 `json:"horizonSeconds"`
	Note           string  `json:"note"`
}

// Wait returns how long the job waits from the simulation's start.
func (x Estimate) Wait() time.Duration { return time.Duration(x.WaitSeconds * float64(time.Second)) }

// EstimateStart simulates e from time from until job's first waiting task
// starts: each step runs a cycle, then moves the virtual clock to the next
// estimated end of a running attempt (or the next tick, or the end of an
// affinity wait) and reports that attempt succeeded. It stops early, with
// the answer unknown, when no attempt runs and no time-based rule can
// change anything. e must be a throwaway copy of the state to estimate:
// the simulation changes it. The assumptions: every attempt succeeds; it
// runs for its estimated runtime (an attempt already past it ends at once);
// no job is submitted or cancelled and no worker joins, leaves or changes
// state meanwhile.
func EstimateStart(e *Engine, job string, from time.Time, w WhatIf) Estimate {
	w = w.withDefaults()
	x := Estimate{HorizonSeconds: w.Horizon.Seconds()}
	j, ok := e.jobs[job]
	switch {
	case !ok:
		x.Note = fmt.Sprintf("job %q is not in the scheduler", job)
		return x
	case j.done:
		x.Note = "the job has ended"
		return x
	case j.left == j.running:
		x.Note = "no task of the job waits"
		return x
	case j.held != "":
		x.Note = fmt.Sprintf("unknown: the job is held by %s and starts nothing until it is released", j.held)
		return x
	}
	from = e.advance(from)
	s := &whatIfSim{e: e, w: w, ends: drive.NewAttempts(func(t *task) bool { return t.state == model.TaskRunning })}
	for _, jj := range e.active {
		for _, t := range jj.tasks {
			if t.state == model.TaskRunning {
				rest := s.runtime(t) - from.Sub(t.started)
				s.ends.Start(t, from.Add(max(rest, 0)))
			}
		}
	}
	clock := from
	woke := false // the clock was last moved to the end of an affinity wait
	for {
		if x.Cycles >= w.MaxCycles {
			x.Note = fmt.Sprintf("unknown: the job did not start within %d simulated cycles (%s of virtual time)", w.MaxCycles, clock.Sub(from))
			return x
		}
		d := e.Cycle(clock)
		x.Cycles++
		for _, st := range d.Starts {
			if st.Job == job {
				x.Known, x.Start, x.Task, x.Worker = true, clock, st.Task, st.Worker
				x.WaitSeconds = clock.Sub(from).Seconds()
				wait := clock.Sub(from).Round(time.Second)
				switch {
				case clock.Equal(from):
					x.Note = "starts at the next cycle"
				case woke:
					x.Note = fmt.Sprintf("starts after %s, when an affinity wait ends (%d attempt(s) of other tasks end first)", wait, x.Ends)
				default:
					x.Note = fmt.Sprintf("starts after %s: %d attempt(s) of other tasks end first", wait, x.Ends)
				}
				return x
			}
			t, err := e.lookup(st.Job, st.Task)
			if err == nil {
				s.ends.Start(t, clock.Add(s.runtime(t)))
			}
		}
		for _, st := range d.Stops {
			if t, err := e.lookup(st.Job, st.Task); err == nil {
				s.ends.Stop(t) // its scheduled end no longer applies
			}
		}
		if j.done {
			x.Note = "the job ended without starting another task (a dependency failed?)"
			return x
		}
		next, ok := s.ends.Next()
		wake, waking := s.affinityWake(clock)
		switch {
		case ok:
			// Attempts run: the next end, and at least a cycle a tick, so
			// that the rules that act on running tasks over time (the
			// classload rebalance, preemption after preemptDelay) and the
			// usage windows get their chance.
			if tick := clock.Add(w.Tick); next.After(tick) {
				next = tick
			}
		case j.spec.Endpoint != "" && !j.admitted:
			next = clock.Add(w.Tick) // admission: starvation reservations, admissions per cycle
		case !waking:
			x.Note = "unknown: nothing will change: no attempt runs and no time-based rule is pending (an affinity wait, an admission), so the job cannot start in the current state (see the placement and help sections)"
			return x
		default:
			next = wake
		}
		if waking && !wake.After(next) {
			next = wake
		}
		woke = waking && next.Equal(wake)
		if next.Sub(from) > w.Horizon {
			x.Note = fmt.Sprintf("unknown within the horizon of %s", w.Horizon)
			return x
		}
		clock = next
		x.Ends += s.endUntil(clock)
	}
}

// affinityWake returns the earliest end of an affinity wait after clock:
// when the next task of a job with affinity (the one a cycle tries first)
// stops passing over free workers without affinity and takes any free
// worker. ok is false when no such wait is pending.
//
// With no attempt running, it is the only time-based rule that can start
// a task of an admitted job: the policies' other rules act on running
// tasks (the classload rebalance and priority or sla preemption stop
// them) or only order the groups (usage windows), and every policy hands
// idle slots to some group that can use them, so a cycle that starts
// nothing on an idle fleet starts nothing later either.
func (s *whatIfSim) affinityWake(clock time.Time) (at time.Time, ok bool) {
	found := false
	for _, q := range s.e.queues {
		if on, wait := affinityOf(q); on && wait > 0 {
			found = true
			break
		}
	}
	if !found {
		return time.Time{}, false
	}
	for _, j := range s.e.active {
		if j.done || j.ready.Len() == 0 || s.e.affinity[j].Len() == 0 {
			continue
		}
		on, wait := affinityOf(j.q)
		if !on || wait <= 0 {
			continue
		}
		if until := j.ready.items[0].readyAt.Add(wait); until.After(clock) && (!ok || until.Before(at)) {
			at, ok = until, true
		}
	}
	return at, ok
}

// whatIfSim is the state of one EstimateStart run: the scheduled ends of
// running attempts (a stopped attempt's end no longer applies).
type whatIfSim struct {
	e    *Engine
	w    WhatIf
	ends *drive.Attempts[*task]
}

func (s *whatIfSim) runtime(t *task) time.Duration {
	if s.w.Runtime != nil {
		if d, ok := s.w.Runtime(t.job.id, t.spec); ok && d > 0 {
			return d
		}
	}
	if t.spec.Duration > 0 {
		return t.spec.Duration
	}
	return s.w.DefaultRuntime
}

// endUntil reports every attempt scheduled to end by clock as succeeded,
// in schedule order, and returns how many it ended.
func (s *whatIfSim) endUntil(clock time.Time) int {
	n := 0
	for {
		t, at, ok := s.ends.Pop(clock)
		if !ok {
			return n
		}
		if err := s.e.Apply(FinishTask{Job: t.job.id, Task: t.spec.Name, Outcome: model.Succeeded, At: at}); err == nil {
			n++
		}
	}
}
