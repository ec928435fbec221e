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
	// its declared duration, the queue's recent median or its timeout);
	// ok=false falls back to the task's declared duration. An attempt
	// nothing estimates runs for DefaultRuntime in the simulation, and an
	// estimate that depends on its end is not given (Known is false).
	Runtime func(job string, t *model.Task) (r RuntimeEstimate, ok bool)
	// DefaultRuntime is the runtime of an attempt nothing else estimates.
	DefaultRuntime time.Duration
}

// RuntimeEstimate is what is known of how long an attempt of a task runs.
type RuntimeEstimate struct {
	// Typical is the runtime expected of an attempt that just started.
	Typical time.Duration
	// Longest is the longest runtime seen of the task's peers (its stage
	// in its job, else its queue); 0 when none was seen. A running attempt
	// past Typical is expected to run at least this long.
	Longest time.Duration
	// Timeout is the task's timeout, 0 for none: an attempt past its
	// typical runtime and its peers' longest is expected to run until it.
	Timeout time.Duration
	// Basis is where Typical comes from.
	Basis Basis
}

// Basis is where an attempt's estimated end comes from, from the surest
// to the least sure. The estimate of a start is as sure as the least sure
// end it waits for.
type Basis int

// The bases of an estimated end.
const (
	// BasisObserved: the runtimes of the same stage's attempts in the job.
	BasisObserved Basis = iota
	// BasisDeclared: the task's declared duration.
	BasisDeclared
	// BasisQueue: the median runtime of the queue's recent attempts.
	BasisQueue
	// BasisPeers: the attempt ran past its typical runtime; it runs as
	// long as the longest of its peers seen so far.
	BasisPeers
	// BasisTimeout: the task's timeout, an upper bound.
	BasisTimeout
	// BasisElapsed: the attempt ran past every runtime known of it; it is
	// expected to run as long again as it has run.
	BasisElapsed
	// BasisNone: nothing estimates the attempt (no duration, timeout or
	// history); a start that waits for its end is not estimated.
	BasisNone
)

// confidence is how sure a start is that waits for ends of basis b.
func (b Basis) confidence() string {
	switch {
	case b <= BasisDeclared:
		return "high"
	case b <= BasisTimeout:
		return "medium"
	}
	return "low"
}

// why says in words what makes an estimate no surer than b.
func (b Basis) why() string {
	switch b {
	case BasisQueue:
		return "an attempt's end is estimated from the queue's recent runtimes"
	case BasisPeers:
		return "an attempt has run longer than usual and is expected to run as long as the longest of its peers"
	case BasisTimeout:
		return "an attempt's end is estimated from its task's timeout"
	case BasisElapsed:
		return "an attempt has run longer than every runtime known of its task and is expected to run as long again"
	}
	return "every attempt's end is estimated from runs of its stage or a declared duration"
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
	// Confidence says how sure a known start is: "high" when every
	// attempt end it waits for is estimated from runs of the same stage or
	// a declared duration, "medium" from the queue's recent runtimes, the
	// longest of the attempt's peers or a timeout, "low" when an attempt
	// has run past everything known of it. Note says why.
	Confidence string `json:"confidence,omitempty"`
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
	s := &whatIfSim{e: e, w: w, ends: drive.NewAttempts(func(t *task) bool { return t.state == model.TaskRunning }),
		basis: map[*task]Basis{}}
	for _, jj := range e.active {
		for _, t := range jj.tasks {
			if t.state == model.TaskRunning {
				s.start(t, t.started, from)
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
				x.Task, x.Worker = st.Task, st.Worker
				if s.weakest == BasisNone {
					x.Note = fmt.Sprintf("unknown: the job starts once %d attempt(s) of other tasks end, and nothing estimates "+
						"when %s does (no duration, timeout or runs of its stage, and too little history in its queue): "+
						"a duration or a timeout on its tasks would tell", x.Ends, s.unknown)
					return x
				}
				x.Known, x.Start = true, clock
				x.WaitSeconds = clock.Sub(from).Seconds()
				x.Confidence = s.weakest.confidence()
				wait := clock.Sub(from).Round(time.Second)
				switch {
				case clock.Equal(from):
					x.Note = "starts at the next cycle"
				case woke:
					x.Note = fmt.Sprintf("starts after %s, when an affinity wait ends (%d attempt(s) of other tasks end first)", wait, x.Ends)
				default:
					x.Note = fmt.Sprintf("starts after %s: %d attempt(s) of other tasks end first", wait, x.Ends)
				}
				if x.Ends > 0 {
					x.Note += "; confidence " + x.Confidence + ": " + s.weakest.why()
				}
				return x
			}
			t, err := e.lookup(st.Job, st.Task)
			if err == nil {
				s.start(t, clock, clock)
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
// running attempts (a stopped attempt's end no longer applies) and where
// each end comes from; weakest is the least sure basis of the ends so far,
// and unknown names the first attempt nothing estimates that ended.
type whatIfSim struct {
	e       *Engine
	w       WhatIf
	ends    *drive.Attempts[*task]
	basis   map[*task]Basis
	weakest Basis
	unknown string
}

// start schedules the end of t's attempt, started at started, as seen at
// now: its typical runtime; past that, the longest runtime of its peers,
// else its timeout, else as long again as it has run.
func (s *whatIfSim) start(t *task, started, now time.Time) {
	r := s.runtime(t)
	ran := now.Sub(started)
	end, basis := started.Add(r.Typical), r.Basis
	switch timeout := r.Timeout; {
	case r.Basis == BasisNone || ran < r.Typical:
	case r.Longest > ran:
		end, basis = started.Add(r.Longest), max(r.Basis, BasisPeers)
	case timeout > ran:
		end, basis = started.Add(timeout), max(r.Basis, BasisTimeout)
	default:
		end, basis = now.Add(ran), BasisElapsed
	}
	if !end.After(now) {
		end = now
	}
	s.basis[t] = basis
	s.ends.Start(t, end)
}

func (s *whatIfSim) runtime(t *task) RuntimeEstimate {
	if s.w.Runtime != nil {
		if r, ok := s.w.Runtime(t.job.id, t.spec); ok && r.Typical > 0 {
			return r
		}
	}
	if t.spec.Duration > 0 {
		return RuntimeEstimate{Typical: t.spec.Duration, Basis: BasisDeclared}
	}
	return RuntimeEstimate{Typical: s.w.DefaultRuntime, Basis: BasisNone}
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
			if b := s.basis[t]; b > s.weakest {
				s.weakest = b
			}
			if s.basis[t] == BasisNone && s.unknown == "" {
				s.unknown = t.job.id + "/" + t.spec.Name
			}
		}
	}
}
