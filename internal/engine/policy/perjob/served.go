package perjob

import "github.com/allot-sched/allot/internal/engine/policy"

// Served remembers the service order of the last Allocate for
// policy.Ranker: the view and, in turn, the orders of the allocator's
// sequential passes. It holds references only, so a cycle pays nothing
// for it until someone asks.
type Served struct {
	v      *policy.View
	passes [][]int
	by     string
}

// Reset starts a new Allocate over v, whose order by describes.
func (s *Served) Reset(v *policy.View, by string) {
	s.v, s.passes, s.by = v, s.passes[:0], by
}

// Add records one pass's order of group indexes.
func (s *Served) Add(order []int) { s.passes = append(s.passes, order) }

// Order returns the group keys in service order, each once, and the phrase
// that says what orders them.
func (s *Served) Order() ([]string, string) {
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
