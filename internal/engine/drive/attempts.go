package drive

import "time"

// Attempts holds the scheduled ends of running attempts, keyed by task
// (K). Starting a task again or stopping it makes its earlier scheduled end
// stale, so a preempted attempt never ends on the old schedule. Ends at
// one time come out in the order they were scheduled.
type Attempts[K comparable] struct {
	q   Queue[attempt[K]]
	gen map[K]uint32
	// live, when set, says whether k still runs: an end whose task has
	// stopped running by other means (it ended with its batch) is
	// skipped.
	live func(K) bool
}

type attempt[K comparable] struct {
	k   K
	gen uint32
	at  time.Time
}

// NewAttempts returns an empty schedule. live, when not nil, is asked
// before an end is handed out whether its task still runs.
func NewAttempts[K comparable](live func(K) bool) *Attempts[K] {
	return &Attempts[K]{gen: map[K]uint32{}, live: live}
}

// Start schedules the end of k's attempt at end, replacing any earlier
// schedule of k.
func (a *Attempts[K]) Start(k K, end time.Time) {
	a.gen[k]++
	a.q.Push(end.UnixNano(), attempt[K]{k: k, gen: a.gen[k], at: end})
}

// Stop forgets k's scheduled end: its attempt was stopped.
func (a *Attempts[K]) Stop(k K) { a.gen[k]++ }

func (a *Attempts[K]) valid(x *attempt[K]) bool {
	return x.gen == a.gen[x.k] && (a.live == nil || a.live(x.k))
}

// Next returns the earliest scheduled end that still applies; ok is false
// when none does.
func (a *Attempts[K]) Next() (at time.Time, ok bool) {
	for a.q.Len() > 0 {
		_, top := a.q.Peek()
		if a.valid(&top) {
			return top.at, true
		}
		a.q.Pop()
	}
	return time.Time{}, false
}

// Pop removes and returns the earliest end that still applies if it is at
// or before until; ok is false when there is none. Whether an end applies
// is decided as it is popped, after the caller acted on the ends before.
func (a *Attempts[K]) Pop(until time.Time) (k K, at time.Time, ok bool) {
	for a.q.Len() > 0 {
		_, top := a.q.Peek()
		if top.at.After(until) {
			break
		}
		a.q.Pop()
		if a.valid(&top) {
			return top.k, top.at, true
		}
	}
	return k, time.Time{}, false
}
