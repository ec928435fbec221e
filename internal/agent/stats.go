package agent

import (
	"sync/atomic"
	"time"
)

// Stats is what an agent did since it started and where its attempts
// spent their time, summed over attempts, so that a benchmark (allot bench
// --exec) can say what bounds a worker: the server, the agent's own steps,
// or the processes.
type Stats struct {
	Accepted int64 // attempts accepted from lease answers
	Started  int64 // processes started
	Reported int64 // reports the server took
	// LeaseRequests and ReportRequests count the requests sent; reports
	// per request is how well they batch.
	LeaseRequests, ReportRequests int64
	// Queued runs from the lease answer's arrival to the attempt getting
	// a slot: the wait of an assignment taken ahead (Config.Prefetch), or
	// of one that came while every slot was busy.
	Queued time.Duration
	// Setup runs from the slot given to the process start: the attempt's
	// directory, and the fork.
	Setup time.Duration
	// Run runs from the process start to its reaping.
	Run time.Duration
	// Finish runs from the reaping to the report queued: the rest of the
	// output read, the result read, the group's record updated and the
	// directory removed.
	Finish time.Duration
	// Deliver runs from the report queued to the server's taking it.
	Deliver time.Duration
}

// agentStats are the counters behind Stats.
type agentStats struct {
	accepted, started, leases  atomic.Int64
	queued, setup, run, finish atomic.Int64 // nanoseconds
}

// ran counts an attempt whose process ran (at.began set), whose report
// was queued at reported.
func (s *agentStats) ran(at *attempt, reported time.Time) {
	slotted := at.slotted
	if slotted.IsZero() || slotted.Before(at.accepted) {
		slotted = at.accepted
	}
	s.started.Add(1)
	s.queued.Add(int64(slotted.Sub(at.accepted)))
	s.setup.Add(int64(at.began.Sub(slotted)))
	s.run.Add(int64(at.ended.Sub(at.began)))
	s.finish.Add(int64(reported.Sub(at.ended)))
}

// Stats returns what the agent did so far.
func (a *Agent) Stats() Stats {
	return Stats{
		Accepted:       a.stats.accepted.Load(),
		Started:        a.stats.started.Load(),
		Reported:       a.report.taken.Load(),
		LeaseRequests:  a.stats.leases.Load(),
		ReportRequests: a.report.requests.Load(),
		Queued:         time.Duration(a.stats.queued.Load()),
		Setup:          time.Duration(a.stats.setup.Load()),
		Run:            time.Duration(a.stats.run.Load()),
		Finish:         time.Duration(a.stats.finish.Load()),
		Deliver:        time.Duration(a.report.waited.Load()),
	}
}
