package priority

import "github.com/allot-sched/allot/internal/model"

// unlimited is a phase target that never stops a job.
const unlimited = int(^uint(0) >> 1)

// phase is one pass of an allocation: a list of jobs in service order and,
// per job, the slot count up to which this pass serves it (running tasks
// included). A sequential pass serves each job up to its target before the
// next; a round-robin pass hands one slot to each job in turn. A phase owns
// its order slice: round-robin compacts it.
type phase struct {
	order      []int
	target     func(g int) int
	roundRobin bool
	pos        int
}

// allocator serves phases one after the other. It implements
// policy.Allocator.
type allocator struct {
	phases []*phase
	cur    int
	given  []int  // running tasks (after this cycle's stops) plus starts
	done   []bool // exhausted: no placeable task this cycle
	why    func(g int) (model.Reason, bool)
}

func newAllocator(given []int, why func(int) (model.Reason, bool)) *allocator {
	return &allocator{given: given, done: make([]bool, len(given)), why: why}
}

func (a *allocator) add(p *phase) {
	if len(p.order) > 0 {
		a.phases = append(a.phases, p)
	}
}

func (a *allocator) eligible(p *phase, g int) bool {
	return !a.done[g] && a.given[g] < p.target(g)
}

// Next implements policy.Allocator.
func (a *allocator) Next() (int, bool) {
	for ; a.cur < len(a.phases); a.cur++ {
		p := a.phases[a.cur]
		if !p.roundRobin {
			for p.pos < len(p.order) && !a.eligible(p, p.order[p.pos]) {
				p.pos++
			}
			if p.pos < len(p.order) {
				return p.order[p.pos], true
			}
			continue
		}
		// Round-robin: walk the ring; at the end of each lap drop the jobs
		// that can take no more, so a lap costs what it hands out.
		for len(p.order) > 0 {
			if p.pos >= len(p.order) {
				kept := p.order[:0]
				for _, g := range p.order {
					if a.eligible(p, g) {
						kept = append(kept, g)
					}
				}
				p.order, p.pos = kept, 0
				continue
			}
			if g := p.order[p.pos]; a.eligible(p, g) {
				return g, true
			}
			p.pos++
		}
	}
	return 0, false
}

// Started implements policy.Allocator.
func (a *allocator) Started(g int) {
	a.given[g]++
	if a.cur < len(a.phases) {
		if p := a.phases[a.cur]; p.roundRobin && p.pos < len(p.order) && p.order[p.pos] == g {
			p.pos++
		}
	}
}

// Exhausted implements policy.Allocator.
func (a *allocator) Exhausted(g int) { a.done[g] = true }

// Why implements policy.Allocator.
func (a *allocator) Why(g int) (model.Reason, bool) { return a.why(g) }

// upTo returns a target function reading a per-job table.
func upTo(t []int) func(int) int { return func(g int) int { return t[g] } }

func noLimit(int) int { return unlimited }

// share splits total slots among jobs (listed in service order) as evenly as
// their caps allow; a job that cannot use its part leaves it to the others,
// and the indivisible remainder goes to the jobs first in order.
func share(total int, order []int, caps []int) map[int]int {
	out := make(map[int]int, len(order))
	open := append([]int(nil), order...)
	for total > 0 && len(open) > 0 {
		q := total / len(open)
		if q == 0 {
			for _, g := range open[:total] {
				out[g]++
			}
			break
		}
		kept := open[:0]
		for _, g := range open {
			add := min(q, caps[g]-out[g])
			out[g] += add
			total -= add
			if out[g] < caps[g] {
				kept = append(kept, g)
			}
		}
		open = kept
	}
	return out
}
