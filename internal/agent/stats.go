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
	// Setup runs from the lease answer's arrival to the process start:
	// the wait for a slot, the attempt's directory, and the fork.
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
	accepted, started, leases atomic.Int64
	setup, run, finish        atomic.Int64 // nanoseconds
}

// ran counts an attempt whose process ran: it started at began, was
// reaped at ended, and its report was queued at queued.
func (s *agentStats) ran(accepted, began, ended, queued time.Time) {
	s.started.Add(1)
	s.setup.Add(int64(began.Sub(accepted)))
	s.run.Add(int64(ended.Sub(began)))
	s.finish.Add(int64(queued.Sub(ended)))
}

// Stats returns what the agent did so far.
func (a *Agent) Stats() Stats {
	return Stats{
		Accepted:       a.stats.accepted.Load(),
		Started:        a.stats.started.Load(),
		Reported:       a.report.taken.Load(),
		LeaseRequests:  a.stats.leases.Load(),
		ReportRequests: a.report.requests.Load(),
		Setup:          time.Duration(a.stats.setup.Load()),
		Run:            time.Duration(a.stats.run.Load()),
		Finish:         time.Duration(a.stats.finish.Load()),
		Deliver:        time.Duration(a.report.waited.Load()),
	}
}
