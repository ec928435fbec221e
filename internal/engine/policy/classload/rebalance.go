package classload

import "time"

// rebalanceClock remembers since when the delta entitlement spread has been
// above the threshold. A rebalance is due once it has stayed there for the
// minimum duration; the clock then restarts, so the next rebalance needs a
// whole new period above the threshold and a rebalance that could not close
// the gap (not enough waiting work) does not stop tasks every cycle.
//
// The clock lives in the Policy value, so replacing the queue's policy
// (engine.SetPolicy) restarts it; History.RebalanceExceededFor carries it
// across a server restart or into a plan scenario.
type rebalanceClock struct {
	since   time.Time
	running bool
}

// restore sets the clock as if the spread had been above the threshold for
// d until now.
func (c *rebalanceClock) restore(d time.Duration, now time.Time) {
	c.since, c.running = now.Add(-d), d > 0
}

// due observes the spread at now and reports whether a rebalance is due. A
// threshold of 0 turns rebalancing off.
func (c *rebalanceClock) due(spread, threshold int, minimum time.Duration, now time.Time) bool {
	if threshold <= 0 || spread <= threshold {
		c.running = false
		return false
	}
	if !c.running {
		c.since, c.running = now, true
	}
	if now.Sub(c.since) < minimum {
		return false
	}
	c.running = false
	return true
}
