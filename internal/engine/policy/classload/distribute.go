package classload

import "sort"

// Class is one class's state at the start of a cycle.
type Class struct {
	Name string
	// Percent is the configured load percentage (normalized by Distribute).
	Percent int
	Running int
	// Waiting counts the tasks that could start now.
	Waiting int
}

// Input is what Distribute needs from one cycle.
type Input struct {
	// Slots is the number of slots of the queue's pool (N in the seed).
	Slots int
	// Free is the number of slots that can take a task now. The slots the
	// classes may use are min(Free, Slots − Σ Running): idle = N minus all
	// running tasks, as DESIGN settles, but never more than the pool can
	// actually take (another queue may share it).
	Free int
	// Classes in configuration order; the order breaks percentage ties.
	Classes []Class
	// Rebalance asks for the rebalance: stop tasks of classes above their
	// target and start the others toward theirs.
	Rebalance bool
	// FreeIsIdle makes the idle slots Free alone. Under usage: dominant,
	// Running counts slot-equivalents, and those of classes whose scarcest
	// kinds differ can add up to Slots while every kind still has room;
	// once a cycle's first pass has handed out the entitlements, the
	// allocator loans what is really free in further passes with this set,
	// as dominant resource fairness fills a pool until some kind runs out.
	FreeIsIdle bool
}

// Output is Distribute's answer. Classes is in Input order.
type Output struct {
	// Idle is the number of idle slots the rounds share out: idle at the
	// start of the cycle plus the slots a rebalance frees.
	Idle int
	// Left is the number of idle slots no class takes: every class with
	// waiting tasks and a positive percentage got all it asked for.
	Left    int
	Classes []Result
	// Rounds traces the computation, for explanations and docs.
	Rounds []Round
}

// Result is one class's part of an Output.
type Result struct {
	// Percent is the normalized percentage; the highest class absorbs the
	// rounding remainder, so the percentages sum to 100.
	Percent int
	// Target is the class's entitlement: floor(N × Percent / 100), the
	// highest class taking N minus the others.
	Target int
	// Starts is the number of tasks to start, net of stops.
	Starts int
	// Stops is the number of running tasks to stop (rebalance only), net of
	// the loan share the class gets back.
	Stops int
	// Entitled and Loaned split the gross starts (before netting stops) by
	// the kind of round that granted them.
	Entitled int
	Loaned   int
}

// RoundKind names a kind of round.
type RoundKind string

// Round kinds.
const (
	// EntitlementRound shares idle slots by unused entitlement.
	EntitlementRound RoundKind = "entitlement"
	// LoanRound shares idle slots by loan entitlement.
	LoanRound RoundKind = "loan"
	// RebalanceRound starts, in a rebalance, each class below its target
	// exactly target − running tasks (fewer when fewer wait).
	RebalanceRound RoundKind = "rebalance"
	// RebalanceLoanRound shares, in a rebalance, the slots left after the
	// RebalanceRound by the percentages normalized over the classes still
	// waiting.
	RebalanceLoanRound RoundKind = "rebalance-loan"
	// FillRound shares idle slots by normalized percentage among the
	// classes still waiting. It only runs when a loan round could start
	// nothing (every loan entitlement rounded to 0 while idle slots and
	// waiting tasks remain), a case the seed does not cover; it keeps the
	// policy from leaving slots idle that some class could use.
	FillRound RoundKind = "fill"
)

// Round is one round of the computation. Slices are in Input order.
type Round struct {
	Kind RoundKind
	// Idle is the number of idle slots at the start of the round, K the
	// number the round shares out.
	Idle, K int
	// Weight is what the percents derive from: unused entitlement in an
	// entitlement round, loan entitlement in a loan round, percentage in a
	// fill round.
	Weight  []int
	Percent []int
	Starts  []int
}

// Distribute computes one cycle of the classload policy over counts: how
// many tasks each class starts and, when in.Rebalance is set, stops. It
// follows DESIGN.md §4:
//
//   - Classes are walked in descending percentage (ties: configuration
//     order); the first class absorbs every rounding remainder.
//   - Entitlement rounds (at most one per class, while idle slots and unused
//     entitlement remain): unused = target − (running + started) for classes
//     still waiting, else 0; k = min(idle, Σ unused); every class but the
//     first gets floor(unused × 100 / Σ unused) percent, the first 100 minus
//     the rest; a class starts min(waiting, ceil(k × percent / 100)), cut so
//     the round never exceeds k.
//   - Loan rounds (while idle slots and waiting tasks remain): among waiting
//     classes, L = Σ max(0, running − target) over all classes (running as
//     at the start of the cycle) + idle; loan entitlement = max(0,
//     floor(L × pct / Σ pct) − the class's loan); percent = trunc(loan
//     entitlement × 100 / Σ loan entitlements); starts as above with k =
//     idle.
//   - A 0% class never starts.
//   - Rebalance (Scoot's rebalanceClassTasks): classes above target stop
//     running − target tasks, which become waiting and free their slots;
//     every other class with a positive percentage starts exactly
//     min(target − running, waiting) (a RebalanceRound, not the
//     entitlement rounds, whose rounding overshoots the first class); the
//     slots left are loaned in one pass by the percentages normalized over
//     the classes still waiting, the first taking the remainder, a class
//     starting min(waiting, ceil(k × percent / 100)) within k (a
//     RebalanceLoanRound; repeated only while slots are left and classes
//     wait, which Scoot leaves idle until its next cycle). Whatever a
//     stopping class is granted back cancels stops instead of restarting
//     tasks.
func Distribute(in Input) Output {
	n := len(in.Classes)
	out := Output{Classes: make([]Result, n)}
	if n == 0 {
		return out
	}
	order := walkOrder(in.Classes)
	pct := normalize(in.Classes, order)
	target := targets(in.Slots, pct, order)

	running := make([]int, n)
	waiting := make([]int, n)
	sumRunning := 0
	for i, c := range in.Classes {
		running[i], waiting[i] = max(0, c.Running), max(0, c.Waiting)
		sumRunning += running[i]
		out.Classes[i].Percent, out.Classes[i].Target = pct[i], target[i]
	}
	idle := max(0, min(in.Free, in.Slots-sumRunning))
	if in.FreeIsIdle {
		idle = max(0, in.Free)
	}

	stops := make([]int, n)
	if in.Rebalance {
		for i := range running {
			if running[i] > target[i] {
				stops[i] = running[i] - target[i]
				running[i] = target[i]
				waiting[i] += stops[i]
				idle += stops[i]
			}
		}
	}
	out.Idle = idle
	for i := range waiting {
		if pct[i] == 0 {
			waiting[i] = 0 // a 0% class never starts
		}
	}

	d := &distribution{order: order, pct: pct, target: target, running: running, waiting: waiting,
		entitled: make([]int, n), loaned: make([]int, n), idle: idle}
	if in.Rebalance {
		d.rebalanceStarts(stops)
		d.rebalanceLoans()
	} else {
		d.entitlementRounds()
		d.loanRounds()
	}

	for i := range out.Classes {
		r := &out.Classes[i]
		r.Entitled, r.Loaned = d.entitled[i], d.loaned[i]
		starts := r.Entitled + r.Loaned
		back := min(stops[i], starts)
		r.Stops, r.Starts = stops[i]-back, starts-back
	}
	out.Left = d.idle
	out.Rounds = d.rounds
	return out
}

// distribution is the working state of one Distribute call.
type distribution struct {
	order   []int // class indexes, highest percentage first
	pct     []int // normalized percentages
	target  []int
	running []int // at the start of the cycle (after rebalance stops)
	waiting []int // still waiting
	// entitled and loaned count the starts granted by each kind of round.
	entitled, loaned []int
	idle             int
	rounds           []Round
}

func (d *distribution) started(i int) int { return d.entitled[i] + d.loaned[i] }

func (d *distribution) entitlementRounds() {
	n := len(d.order)
	for round := 0; round < n && d.idle > 0; round++ {
		unused := make([]int, n)
		sum := 0
		for i := range unused {
			if d.waiting[i] > 0 {
				unused[i] = max(0, d.target[i]-d.running[i]-d.started(i))
				sum += unused[i]
			}
		}
		if sum == 0 {
			return
		}
		k := min(d.idle, sum)
		percent := make([]int, n)
		rest := 100
		for _, i := range d.order[1:] {
			percent[i] = unused[i] * 100 / sum
			rest -= percent[i]
		}
		percent[d.order[0]] = rest
		if d.share(EntitlementRound, k, unused, percent, d.entitled) == 0 {
			return
		}
	}
}

func (d *distribution) loanRounds() {
	n := len(d.order)
	loan := make([]int, n)
	onLoan := 0
	for i := range loan {
		loan[i] = max(0, d.running[i]-d.target[i])
		onLoan += loan[i]
	}
	for d.idle > 0 {
		sumPct := 0
		for i := range d.waiting {
			if d.waiting[i] > 0 {
				sumPct += d.pct[i]
			}
		}
		if sumPct == 0 {
			return
		}
		l := onLoan + d.idle
		ent := make([]int, n)
		sumEnt := 0
		for i := range ent {
			if d.waiting[i] > 0 {
				ent[i] = max(0, l*d.pct[i]/sumPct-loan[i])
				sumEnt += ent[i]
			}
		}
		if sumEnt > 0 {
			percent := make([]int, n)
			for i := range percent {
				percent[i] = ent[i] * 100 / sumEnt
			}
			if d.share(LoanRound, d.idle, ent, percent, d.loaned) > 0 {
				continue
			}
		}
		if d.fill(FillRound) == 0 {
			return // cannot happen (see fill); never spin
		}
	}
}

// rebalanceStarts brings every class below its target to it: each starts
// min(target − running, waiting) tasks. The rebalance's stops free enough
// slots for all of them unless another queue holds some of the pool's free
// slots; then the idle slots are shared in proportion to what each class
// needs (floors, the remainder one slot each in walk order), so no class
// goes past its target.
func (d *distribution) rebalanceStarts(stops []int) {
	n := len(d.order)
	need := make([]int, n)
	sum := 0
	for i := range need {
		if stops[i] == 0 && d.pct[i] > 0 {
			need[i] = max(0, min(d.target[i]-d.running[i], d.waiting[i]))
			sum += need[i]
		}
	}
	r := Round{Kind: RebalanceRound, Idle: d.idle, K: min(d.idle, sum), Weight: need, Starts: make([]int, n)}
	if sum > d.idle {
		given := 0
		for i := range need {
			r.Starts[i] = d.idle * need[i] / sum
			given += r.Starts[i]
		}
		for _, i := range d.order {
			if given == d.idle {
				break
			}
			if r.Starts[i] < need[i] {
				r.Starts[i]++
				given++
			}
		}
	} else {
		copy(r.Starts, need)
	}
	for i, s := range r.Starts {
		d.entitled[i] += s
		d.waiting[i] -= s
		d.idle -= s
	}
	d.rounds = append(d.rounds, r)
}

// rebalanceLoans loans the slots a rebalance's starts leave: the
// percentages normalized over the classes still waiting (a stopping class
// counts its stopped tasks as waiting, so a share it gets cancels stops),
// the first in walk order taking the remainder, and one share round over
// them. Scoot runs that round once; when a class takes less than its share
// (it has fewer tasks waiting) and others still wait, the round is repeated
// over the classes still waiting rather than leaving the slots idle.
func (d *distribution) rebalanceLoans() {
	for d.idle > 0 {
		if d.fill(RebalanceLoanRound) == 0 {
			return // no class waits
		}
	}
}

// fill shares the idle slots by normalized percentage among the classes
// still waiting, the first of them taking the remainder, and returns how
// many started. The first waiting class always gets a positive percent, so
// a fill round starts a task whenever a class waits.
func (d *distribution) fill(kind RoundKind) int {
	n := len(d.order)
	weight := make([]int, n)
	sum := 0
	var waiting []int
	for _, i := range d.order {
		if d.waiting[i] > 0 && d.pct[i] > 0 {
			weight[i] = d.pct[i]
			sum += weight[i]
			waiting = append(waiting, i)
		}
	}
	if len(waiting) == 0 {
		return 0
	}
	percent := make([]int, n)
	rest := 100
	for _, i := range waiting[1:] {
		percent[i] = weight[i] * 100 / sum
		rest -= percent[i]
	}
	percent[waiting[0]] = rest
	return d.share(kind, d.idle, weight, percent, d.loaned)
}

// share runs one round: each class, in walk order, starts min(waiting,
// ceil(k × percent / 100)), cut so the round's total stays within k. It
// records the starts in into and returns how many started.
func (d *distribution) share(kind RoundKind, k int, weight, percent, into []int) int {
	r := Round{Kind: kind, Idle: d.idle, K: k, Weight: weight, Percent: percent, Starts: make([]int, len(d.order))}
	total := 0
	for _, i := range d.order {
		if percent[i] == 0 || d.waiting[i] == 0 {
			continue
		}
		s := min(d.waiting[i], (k*percent[i]+99)/100, k-total)
		r.Starts[i] = s
		into[i] += s
		d.waiting[i] -= s
		total += s
	}
	d.idle -= total
	d.rounds = append(d.rounds, r)
	return total
}

// walkOrder returns the class indexes by descending percentage, ties in
// configuration order.
func walkOrder(cs []Class) []int {
	order := make([]int, len(cs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return cs[order[a]].Percent > cs[order[b]].Percent })
	return order
}

// normalize scales the percentages to sum to 100: every class but the first
// in walk order gets floor(pct × 100 / Σ pct), the first the rest. Negative
// percentages count as 0; when all are 0, so are the results.
func normalize(cs []Class, order []int) []int {
	out := make([]int, len(cs))
	sum := 0
	for _, c := range cs {
		sum += max(0, c.Percent)
	}
	if sum == 0 {
		return out
	}
	rest := 100
	for _, i := range order[1:] {
		out[i] = max(0, cs[i].Percent) * 100 / sum
		rest -= out[i]
	}
	out[order[0]] = rest
	return out
}

// targets returns floor(n × pct / 100) per class, the first in walk order
// taking n minus the others.
func targets(n int, pct, order []int) []int {
	out := make([]int, len(pct))
	n = max(0, n)
	rest := n
	for _, i := range order[1:] {
		out[i] = n * pct[i] / 100
		rest -= out[i]
	}
	out[order[0]] = rest
	return out
}

// Spread is the delta entitlement spread of the seed, in percentage points:
// max(0, max diff) − min(0, min diff), where diff = pct − floor(running ×
// 100 / N) over the classes that wait or run above their target. It is 0
// when no class qualifies or the pool has no slots.
func Spread(in Input) int {
	if len(in.Classes) == 0 || in.Slots <= 0 {
		return 0
	}
	order := walkOrder(in.Classes)
	pct := normalize(in.Classes, order)
	target := targets(in.Slots, pct, order)
	hi, lo := 0, 0
	for i, c := range in.Classes {
		if c.Waiting <= 0 && c.Running <= target[i] {
			continue
		}
		diff := pct[i] - max(0, c.Running)*100/in.Slots
		hi, lo = max(hi, diff), min(lo, diff)
	}
	return hi - lo
}
