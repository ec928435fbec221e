package policy

import (
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// FIFOKind registers the fifo policy, the default; it has no settings.
var FIFOKind = Kind{Name: "fifo", New: func(Settings) (Policy, error) { return FIFO{}, nil }}

// FIFO serves a queue's jobs in submission order, higher job priority first.
// All jobs of the queue form one group, so a job waits for every job ahead of
// it; tasks of a job that cannot be placed let later jobs through (backfill).
type FIFO struct{}

// FIFOGroup is the one group of a fifo queue.
const FIFOGroup = "all"

// Name implements Policy.
func (FIFO) Name() string { return "fifo" }

// GroupOf implements Policy: every job is in the one group.
func (FIFO) GroupOf(*model.Job) string { return FIFOGroup }

// Order implements Policy.
func (FIFO) Order() (JobOrder, TaskOrder) { return ByPriorityThenAge, ByDeclaration }

// Account implements Policy; fifo keeps no usage.
func (FIFO) Account(string, int, time.Time) {}

// Allocate implements Policy: the one group takes every free slot it can use.
func (FIFO) Allocate(v *View) Plan {
	targets := make([]int, len(v.Groups))
	for i := range targets {
		targets[i] = -1
	}
	return Plan{Targets: targets, Alloc: &sequence{order: indexes(len(v.Groups))}}
}

// sequence serves groups in a fixed order, each until it is exhausted.
type sequence struct {
	order []int
	pos   int
}

func (s *sequence) Next() (int, bool) {
	if s.pos < len(s.order) {
		return s.order[s.pos], true
	}
	return 0, false
}

func (s *sequence) Started(int) {}

func (s *sequence) Exhausted(g int) {
	if s.pos < len(s.order) && s.order[s.pos] == g {
		s.pos++
	}
}

func (s *sequence) Why(int) (model.Reason, bool) { return model.Reason{}, false }

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
