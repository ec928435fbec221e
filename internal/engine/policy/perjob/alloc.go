package perjob

import "github.com/allot-sched/allot/internal/model"

// Unlimited is a Phase target that never stops a job.
const Unlimited = int(^uint(0) >> 1)

// Phase is one pass of an allocation: a list of jobs in service order and,
// per job, the slot count up to which this pass serves it (running tasks
// included). A sequential pass serves each job up to its target before the
// next; a round-robin pass hands one slot to each job in turn. A Phase owns
// its order slice: round-robin compacts it.
type Phase struct {
	Order      []int
	Target     func(g int) int
	RoundRobin bool
	pos        int
}

// Allocator serves phases one after the other. It implements
// policy.Allocator.
type Allocator struct {
	phases []*Phase
	cur    int
	given  []int  // running tasks (after this cycle's stops) plus starts
	done   []bool // exhausted: no placeable task this cycle
	why    func(g int) (model.Reason, bool)
}

// NewAllocator returns an allocator over given (each job's running tasks,
// counted up as it starts more) whose Why is why.
func NewAllocator(given []int, why func(int) (model.Reason, bool)) *Allocator {
	return &Allocator{given: given, done: make([]bool, len(given)), why: why}
}

// Add appends a pass; an empty one is dropped.
func (a *Allocator) Add(p *Phase) {
	if len(p.Order) > 0 {
		a.phases = append(a.phases, p)
	}
}

func (a *Allocator) eligible(p *Phase, g int) bool {
	return !a.done[g] && a.given[g] < p.Target(g)
}

// Next implements policy.Allocator.
func (a *Allocator) Next() (int, bool) {
	for ; a.cur < len(a.phases); a.cur++ {
		p := a.phases[a.cur]
		if !p.RoundRobin {
			for p.pos < len(p.Order) && !a.eligible(p, p.Order[p.pos]) {
				p.pos++
			}
			if p.pos < len(p.Order) {
				return p.Order[p.pos], true
			}
			continue
		}
		// Round-robin: walk the ring; at the end of each lap drop the jobs
		// that can take no more, so a lap costs what it hands out.
		for len(p.Order) > 0 {
			if p.pos >= len(p.Order) {
				kept := p.Order[:0]
				for _, g := range p.Order {
					if a.eligible(p, g) {
						kept = append(kept, g)
					}
				}
				p.Order, p.pos = kept, 0
				continue
			}
			if g := p.Order[p.pos]; a.eligible(p, g) {
				return g, true
			}
			p.pos++
		}
	}
	return 0, false
}

// Started implements policy.Allocator.
func (a *Allocator) Started(g int) {
	a.given[g]++
	if a.cur < len(a.phases) {
		if p := a.phases[a.cur]; p.RoundRobin && p.pos < len(p.Order) && p.Order[p.pos] == g {
			p.pos++
		}
	}
}

// Exhausted implements policy.Allocator.
func (a *Allocator) Exhausted(g int) { a.done[g] = true }

// Why implements policy.Allocator.
func (a *Allocator) Why(g int) (model.Reason, bool) { return a.why(g) }

// UpTo returns a target function reading a per-job table.
func UpTo(t []int) func(int) int { return func(g int) int { return t[g] } }

// NoLimit is a Phase target without a limit.
func NoLimit(int) int { return Unlimited }

// Share splits total slots among jobs (listed in service order) as evenly as
// their caps allow; a job that cannot use its part leaves it to the others,
// and the indivisible remainder goes to the jobs first in order.
func Share(total int, order []int, caps []int) map[int]int {
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
