package perjob

import (
	"sort"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// PerJob is what the priority and sla policies share: every job is its own
// group (an SLA group is an attribute the policy reads from the view), jobs
// are served by priority then age, and each job's usage is booked over the
// usage window.
type PerJob struct{ Book *Book }

// GroupOf implements policy.Policy: every job is its own group.
func (PerJob) GroupOf(j *model.Job) string { return j.ID }

// Order implements policy.Policy.
func (PerJob) Order() (policy.JobOrder, policy.TaskOrder) {
	return policy.ByPriorityThenAge, policy.ByDeclaration
}

// Account implements policy.Policy: it integrates the job's usage.
func (p PerJob) Account(group string, delta int, at time.Time) { p.Book.Account(group, delta, at) }

// Dominant implements policy.DominantPolicy: the usage window books each
// job's slot-equivalents (Book.Dominant).
func (p PerJob) Dominant() { p.Book.Dominant() }

// AccountAmounts implements policy.AmountsAccounter.
func (p PerJob) AccountAmounts(group string, delta model.Amounts, pool policy.Capacity, at time.Time) {
	p.Book.SetPool(pool)
	p.Book.AccountAmounts(group, delta, at)
}

// History implements policy.HistoryGiver: each job's usage over the
// window, as of now.
func (p PerJob) History(now time.Time) policy.History {
	return policy.History{Usage: p.Book.Usages(now)}
}

// SetHistory implements policy.HistoryTaker: usage per job, in slot-seconds
// over the window, as of now.
func (p PerJob) SetHistory(h policy.History, now time.Time) {
	for key, u := range h.Usage {
		p.Book.Restore(key, u, now)
	}
}

// Book keeps each job's usage: the slot-time it held over a sliding window,
// running tasks included (seed 001, Usage algorithm).
//
// Usage is integrated exactly. Each job keeps the step function of its
// running-task count as a list of change points (an exact interval list, not
// buckets): Account appends a point, and points that have slid out of the
// window are dropped, the first kept point being clamped to the window's
// start. The integral over the kept points is held in slot-nanoseconds as an
// int64, so it is exact; MaxUsageWindow keeps it far from overflow. A new
// job's starting usage ("as if it had run at its ideal share for the whole
// window") is a separate virtual rate over the window before the job was
// first seen, which slides out linearly as time passes.
//
// Under usage: dominant (Dominant) a job's rate is not its running count but
// its slot-equivalents, its dominant share of the pool times the pool's
// slots, measured against the pool as of the last event (SetPool); it is a
// fraction, so it is integrated in float64 seconds beside the exact integer
// integral, which stays 0.
type Book struct {
	window time.Duration
	jobs   map[string]*Record
	cycle  uint64 // Allocate calls so far; marks which accounts a view saw
	// dominant says rates are slot-equivalents; pool is the pool they are
	// measured against.
	dominant bool
	pool     policy.Capacity
}

// Record is one job's usage record; See returns it for Usage.
type Record struct {
	points []point // running count from each point's time on; time ordered
	// closed is the integral, in slot-nanoseconds, from points[0].at to the
	// last point's at.
	closed  int64
	running int
	// held is what the running tasks hold, and fclosed the integral of the
	// points' frate in slot-seconds (usage: dominant).
	held    model.Amounts
	fclosed float64
	created time.Time // first Account call or first view
	// The virtual starting usage: rate slots over [initEnd-window, initEnd).
	initialised bool
	initRate    float64
	initEnd     time.Time
	seen        uint64 // Book.cycle of the last view that listed the job
}

type point struct {
	at    time.Time
	rate  int64   // running tasks from at on
	frate float64 // slot-equivalents from at on (usage: dominant)
}

// NewBook returns an empty book that counts usage over window.
func NewBook(window time.Duration) *Book {
	return &Book{window: window, jobs: map[string]*Record{}}
}

func (b *Book) get(key string, at time.Time) *Record {
	a, ok := b.jobs[key]
	if !ok {
		a = &Record{created: at}
		b.jobs[key] = a
	}
	return a
}

// Account records that key's running count changed by delta at time at.
// Calls normally come in time order; an earlier time (a task restored as
// running since a past instant) is inserted where it belongs.
func (b *Book) Account(key string, delta int, at time.Time) {
	a := b.get(key, at)
	a.running += delta
	if b.dominant {
		b.setRate(a, at)
		return
	}
	d := int64(delta)
	n := len(a.points)
	switch {
	case n == 0:
		a.points = append(a.points, point{at: at, rate: d})
	case at.Equal(a.points[n-1].at):
		a.points[n-1].rate += d
	case at.After(a.points[n-1].at):
		last := a.points[n-1]
		a.closed += last.rate * int64(at.Sub(last.at))
		a.points = append(a.points, point{at: at, rate: last.rate + d})
	default:
		a.insert(at, d)
	}
	a.prune(at.Add(-b.window))
}

// Dominant makes the book measure usage by dominant share: each job's rate
// is its slot-equivalents (policy.DominantShare × the pool's slots).
func (b *Book) Dominant() { b.dominant = true }

// SetPool sets the pool that rates are measured against from now on (usage:
// dominant): the policies pass it on at each start and end, and at the start
// of each cycle.
func (b *Book) SetPool(c policy.Capacity) { b.pool = c }

// AccountAmounts records that what key's running tasks hold changed by
// delta at time at (usage: dominant).
func (b *Book) AccountAmounts(key string, delta model.Amounts, at time.Time) {
	a := b.get(key, at)
	a.held = a.held.Add(delta)
	if b.dominant {
		b.setRate(a, at)
	}
}

// rateOf is a's slot-equivalents now.
func (b *Book) rateOf(a *Record) float64 {
	return policy.DominantShare(a.running, a.held, b.pool) * float64(b.pool.Slots)
}

// setRate starts a's current rate at at (usage: dominant). A dominant share
// is not a sum of its tasks' shares, so a change dated before a's last point
// (a task restored as running since a past instant) counts from that point.
func (b *Book) setRate(a *Record, at time.Time) {
	r := b.rateOf(a)
	n := len(a.points)
	switch {
	case n == 0:
		a.points = append(a.points, point{at: at, frate: r})
	case at.After(a.points[n-1].at):
		last := a.points[n-1]
		a.fclosed += last.frate * at.Sub(last.at).Seconds()
		a.points = append(a.points, point{at: at, frate: r})
	default:
		a.points[n-1].frate = r
		at = a.points[n-1].at
	}
	a.prune(at.Add(-b.window))
}

// insert adds d to the running count from at on, at lies before the last
// point, and recomputes the integral.
func (a *Record) insert(at time.Time, d int64) {
	k := sort.Search(len(a.points), func(i int) bool { return !a.points[i].at.Before(at) })
	if k == len(a.points) || !a.points[k].at.Equal(at) {
		var before int64
		if k > 0 {
			before = a.points[k-1].rate
		}
		a.points = append(a.points, point{})
		copy(a.points[k+1:], a.points[k:])
		a.points[k] = point{at: at, rate: before}
	}
	for i := k; i < len(a.points); i++ {
		a.points[i].rate += d
	}
	a.closed = 0
	for i := 1; i < len(a.points); i++ {
		a.closed += a.points[i-1].rate * int64(a.points[i].at.Sub(a.points[i-1].at))
	}
}

// prune drops what lies before lo, clamping the first kept point to lo.
func (a *Record) prune(lo time.Time) {
	for len(a.points) >= 2 && !a.points[1].at.After(lo) {
		a.closed -= a.points[0].rate * int64(a.points[1].at.Sub(a.points[0].at))
		a.fclosed -= a.points[0].frate * a.points[1].at.Sub(a.points[0].at).Seconds()
		a.points = a.points[1:]
	}
	if len(a.points) > 0 && a.points[0].at.Before(lo) {
		if len(a.points) >= 2 {
			a.closed -= a.points[0].rate * int64(lo.Sub(a.points[0].at))
			a.fclosed -= a.points[0].frate * lo.Sub(a.points[0].at).Seconds()
		}
		a.points[0].at = lo
	}
}

// Usage returns key's usage at now in slot-seconds: real slot-time over
// (now-window, now] plus what is left of the virtual starting usage.
func (b *Book) Usage(a *Record, now time.Time) float64 {
	a.prune(now.Add(-b.window))
	var ns int64
	var f float64
	if n := len(a.points); n > 0 {
		ns, f = a.closed, a.fclosed
		if last := a.points[n-1]; now.After(last.at) {
			ns += last.rate * int64(now.Sub(last.at))
			f += last.frate * now.Sub(last.at).Seconds()
		}
	}
	u := float64(ns)/float64(time.Second) + max(0, f)
	if a.initialised {
		left := b.window - now.Sub(a.initEnd)
		if left > b.window {
			left = b.window
		}
		if left > 0 {
			u += a.initRate * left.Seconds()
		}
	}
	return u
}

// See marks key as listed in the current view and, the first time, starts
// its usage as if it had run at rate slots for the whole window before it
// was first seen.
func (b *Book) See(key string, rate float64, now time.Time) *Record {
	a := b.get(key, now)
	a.seen = b.cycle
	if !a.initialised {
		a.initialised = true
		a.initRate = rate
		a.initEnd = a.created
		if len(a.points) > 0 && a.points[0].at.Before(a.initEnd) {
			a.initEnd = a.points[0].at
		}
		if now.Before(a.initEnd) {
			a.initEnd = now
		}
	}
	return a
}

// Usages returns every job's usage over the window at now, in
// slot-seconds, leaving out those with none.
func (b *Book) Usages(now time.Time) map[string]float64 {
	out := make(map[string]float64, len(b.jobs))
	for key, a := range b.jobs {
		if u := b.Usage(a, now); u > 0 {
			out[key] = u
		}
	}
	return out
}

// Restore sets key's usage to u slot-seconds as of now (from a scenario's or
// the store's history): a virtual rate over the window before now.
func (b *Book) Restore(key string, u float64, now time.Time) {
	a := b.get(key, now)
	a.points = a.points[:0]
	a.closed, a.fclosed = 0, 0
	if b.dominant {
		if r := b.rateOf(a); r != 0 {
			a.points = append(a.points, point{at: now, frate: r})
		}
	} else if a.running != 0 {
		a.points = append(a.points, point{at: now, rate: int64(a.running)})
	}
	a.initialised = true
	a.initRate = u / b.window.Seconds()
	a.initEnd = now
}

// StartCycle begins a view: accounts seen from now on belong to it.
func (b *Book) StartCycle() { b.cycle++ }

// Sweep forgets jobs the last view did not list, that run nothing and whose
// usage has slid out of the window: ended jobs must not pile up.
func (b *Book) Sweep(now time.Time) {
	lo := now.Add(-b.window)
	for key, a := range b.jobs {
		if a.seen == b.cycle || a.running != 0 {
			continue
		}
		if n := len(a.points); n > 0 && a.points[n-1].at.After(lo) {
			continue
		}
		if a.initialised && a.initEnd.After(lo) {
			continue
		}
		delete(b.jobs, key)
	}
}
