package priority

import "github.com/allot-sched/allot/internal/engine/policy"

// served remembers the service order of the last Allocate for
// policy.Ranker: the view and, in turn, the orders of the allocator's
// sequential passes. It holds references only, so a cycle pays nothing
// for it until someone asks.
type served struct {
	v      *policy.View
	passes [][]int
	by     string
}

func (s *served) reset(v *policy.View, by string) {
	s.v, s.passes, s.by = v, s.passes[:0], by
}

func (s *served) add(order []int) { s.passes = append(s.passes, order) }

// order returns the group keys in service order, each once.
func (s *served) order() ([]string, string) {
	if s.v == nil {
		return nil, s.by
	}
	seen := make([]bool, len(s.v.Groups))
	var out []string
	for _, pass := range s.passes {
		for _, g := range pass {
			if !seen[g] {
				seen[g] = true
				out = append(out, s.v.Groups[g].Key)
			}
		}
	}
	return out, s.by
}

// ServiceOrder implements policy.Ranker: urgent jobs in creation order,
// then the others as the last Allocate served them (by least usage per unit
// of weight, or by creation for the time algorithm; by level first with
// serial priority). Suspended jobs are left out.
func (p *Priority) ServiceOrder() ([]string, string) { return p.last.order() }

// ServiceOrder implements policy.Ranker: jobs of known SLA groups by least
// usage per unit of their share, then creation.
func (s *SLA) ServiceOrder() ([]string, string) { return s.last.order() }

// Config returns the policy's configuration with defaults, so that an
// explanation can check what a priority change would do.
func (p *Priority) Config() policy.PriorityConfig { return p.cfg }

func (p *Priority) rankPhrase() string {
	by := "least usage per unit of weight, then creation"
	if p.cfg.Algorithm == policy.AlgorithmTime {
		by = "creation order (time algorithm)"
	}
	if p.cfg.SerialPriority {
		by = "higher priority level first, then " + by
	}
	return "urgent jobs first, then " + by
}
