package classload

import (
	"fmt"
	"strings"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// allocator hands out Distribute's starts: classes take turns, one slot
// each, while they have starts left, so a class whose tasks cannot be
// placed does not hold up the others. A class leaves the turn when its
// count is used up or the engine finds none of its tasks placeable.
//
// Under usage: dominant a class's starts are slot-equivalents: each task
// uses up what it adds to its class's slot-equivalents (Took), at least
// one, and the class keeps its turn while any are left, so it may end up to
// one task past its count, as a task cannot be split. When the first pass
// (entitlements, then loans of the slot-equivalents the classes leave) is
// handed out and slots are still free, further passes loan those slots
// (Input.FreeIsIdle) until no class starts a task: the pool fills until
// some kind runs out, as under usage: slots.
type allocator struct {
	p         *Policy
	v         *policy.View
	in        Input
	out       Output
	classOf   []int // view group → class, -1 when unknown
	groupOf   []int // class → view group, -1 when the view has none
	left      []int // per view group: starts (or slot-equivalents) still to hand out
	exhausted []bool
	ring      []int // view groups with starts left, highest class first
	pos       int
	// Under usage: dominant, per view group: the tasks and amounts its
	// running tasks and this cycle's starts hold, and the cost of the start
	// Took last told of.
	tasks []int
	held  []model.Amounts
	cost  []int
	// starts counts each view group's starts this cycle, for the further
	// passes under usage: dominant.
	starts []int
}

func newAllocator(p *Policy, v *policy.View, in Input, out Output, classOf, groupOf []int) *allocator {
	a := &allocator{p: p, v: v, in: in, out: out, classOf: classOf, groupOf: groupOf,
		left: make([]int, len(classOf)), exhausted: make([]bool, len(classOf))}
	if p.dominant {
		a.tasks, a.held, a.cost = make([]int, len(classOf)), make([]model.Amounts, len(classOf)), make([]int, len(classOf))
		a.starts = make([]int, len(classOf))
		for gi, g := range v.Groups {
			a.tasks[gi], a.held[gi] = g.Running, g.Held
		}
	}
	for _, ci := range walkOrder(in.Classes) {
		if gi := groupOf[ci]; gi >= 0 && out.Classes[ci].Starts > 0 {
			a.left[gi] = out.Classes[ci].Starts
			a.ring = append(a.ring, gi)
		}
	}
	return a
}

// Next implements policy.Allocator.
func (a *allocator) Next() (int, bool) {
	if len(a.ring) == 0 && (a.starts == nil || !a.pass()) {
		return 0, false
	}
	return a.ring[a.pos], true
}

// Took implements policy.SizedAllocator (usage: dominant): the task about to
// be reported Started holds amt; its cost is what it adds to its class's
// slot-equivalents, at least one.
func (a *allocator) Took(g int, amt model.Amounts) {
	if a.tasks == nil || g < 0 || g >= len(a.tasks) {
		return
	}
	before := slotEquivalents(a.tasks[g], a.held[g], a.v.Capacity)
	a.tasks[g]++
	a.held[g] = a.held[g].Add(amt)
	a.cost[g] = max(1, slotEquivalents(a.tasks[g], a.held[g], a.v.Capacity)-before)
}

// Started implements policy.Allocator: the class used one of its starts (or
// the slot-equivalents the task took) and the turn passes to the next
// class.
func (a *allocator) Started(g int) {
	if g < 0 || g >= len(a.left) || a.left[g] == 0 {
		return
	}
	cost := 1
	if a.cost != nil && a.cost[g] > 0 {
		cost, a.cost[g] = a.cost[g], 0
	}
	a.left[g] = max(0, a.left[g]-cost)
	if a.starts != nil {
		a.starts[g]++
	}
	if a.left[g] == 0 {
		a.drop(g)
		return
	}
	if k := a.find(g); k >= 0 {
		a.pos = (k + 1) % len(a.ring)
	}
}

// Exhausted implements policy.Allocator.
func (a *allocator) Exhausted(g int) {
	if g < 0 || g >= len(a.exhausted) {
		return
	}
	a.exhausted[g] = true
	a.drop(g)
}

// pass runs a further pass under usage: dominant: Distribute over what the
// classes hold and still wait for now, with the slots still free as idle,
// and reports whether it handed out any start.
func (a *allocator) pass() bool {
	in := Input{Slots: a.in.Slots, Free: a.v.Free, FreeIsIdle: true, Classes: make([]Class, len(a.in.Classes))}
	for gi := range a.starts {
		in.Free -= a.starts[gi]
	}
	if in.Free <= 0 {
		return false
	}
	for ci, c := range a.in.Classes {
		in.Classes[ci] = Class{Name: c.Name, Percent: c.Percent}
		if gi := a.groupOf[ci]; gi >= 0 {
			in.Classes[ci].Running = slotEquivalents(a.tasks[gi], a.held[gi], a.v.Capacity)
			if !a.exhausted[gi] {
				in.Classes[ci].Waiting = max(0, c.Waiting-a.starts[gi])
			}
		}
	}
	out := Distribute(in)
	for _, ci := range walkOrder(in.Classes) {
		if gi := a.groupOf[ci]; gi >= 0 && out.Classes[ci].Starts > 0 {
			a.left[gi] = out.Classes[ci].Starts
			a.ring = append(a.ring, gi)
		}
	}
	a.pos = 0
	return len(a.ring) > 0
}

func (a *allocator) find(g int) int {
	for k, x := range a.ring {
		if x == g {
			return k
		}
	}
	return -1
}

// drop removes g from the turn; the class after it is next.
func (a *allocator) drop(g int) {
	k := a.find(g)
	if k < 0 {
		return
	}
	a.ring = append(a.ring[:k], a.ring[k+1:]...)
	if len(a.ring) == 0 {
		a.pos = 0
		return
	}
	if a.pos > k {
		a.pos--
	}
	a.pos %= len(a.ring)
}

// Why implements policy.Allocator. The policy holds a class back when it
// got its computed share and would end at or above its entitlement, or
// when its percentage is 0. A class that ends below its entitlement was
// stopped by the pool filling up, and one the engine found no placeable
// task for by placement; for those ok is false and the engine says why.
func (a *allocator) Why(g int) (model.Reason, bool) {
	if g < 0 || g >= len(a.classOf) {
		return model.Reason{}, false
	}
	ci := a.classOf[g]
	if ci < 0 {
		return model.Because(model.ReasonPolicyLimit, "group is not a class of this queue's classload policy"), true
	}
	if a.exhausted[g] || a.left[g] > 0 {
		return model.Reason{}, false
	}
	c, r := a.in.Classes[ci], a.out.Classes[ci]
	if r.Percent == 0 {
		return model.Because(model.ReasonPolicyLimit,
			"class %s has a 0%% load share: its tasks never start until its percentage is raised", c.Name), true
	}
	if c.Running-r.Stops+r.Starts < r.Target || a.out.Left > 0 {
		// Below its entitlement, the pool filled up; with idle slots left,
		// the tasks were beyond what Input.Waiting counted (job slot
		// limits). Neither is the policy's doing.
		return model.Reason{}, false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "class %s %s, %s its entitlement %d (%d%% of %d slots)",
		c.Name, a.p.holds(c.Running), relation(c.Running, r.Target), r.Target, r.Percent, a.in.Slots)
	if r.Stops > 0 {
		fmt.Fprintf(&b, "; the rebalance stops %d of them", r.Stops)
	}
	switch {
	case r.Starts > 0 && r.Starts == r.Entitled+r.Loaned:
		fmt.Fprintf(&b, "; it starts %d more (%d entitled, %d on loan)", r.Starts, r.Entitled, r.Loaned)
	case r.Starts > 0:
		fmt.Fprintf(&b, "; it starts %d more", r.Starts)
	}
	b.WriteString("; no idle worker to loan")
	return model.Reason{Code: model.ReasonPolicyLimit, Message: b.String()}, true
}

func relation(running, target int) string {
	switch {
	case running > target:
		return "above"
	case running == target:
		return "at"
	}
	return "below"
}
