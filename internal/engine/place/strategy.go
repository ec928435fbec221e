package place

import "fmt"

// Strategy chooses among the workers that can run a task now.
type Strategy uint8

const (
	// FirstFit takes the first worker in registration order.
	FirstFit Strategy = iota
	// MinSatisfying takes the smallest worker that fits, keeping large
	// machines free for the tasks that need them; ties go to registration
	// order.
	MinSatisfying
	// Best takes the worker with the highest adaptive score (score.go),
	// after context reuse: the adaptive mode's own ranking.
	Best
)

var strategyNames = [...]string{FirstFit: "first-fit", MinSatisfying: "min-satisfying", Best: "best"}

// ParseStrategy reads a strategy name as written in configuration. The
// engine reads "" as first-fit; the configuration layer (internal/spec)
// fills in best for the adaptive mode before it gets here.
func ParseStrategy(name string) (Strategy, error) {
	if name == "" {
		return FirstFit, nil
	}
	for s, n := range strategyNames {
		if n == name {
			return Strategy(s), nil
		}
	}
	return 0, fmt.Errorf("unknown selection strategy %q (known: best, first-fit, min-satisfying)", name)
}

// String returns the configuration name of s.
func (s Strategy) String() string {
	if int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return fmt.Sprintf("strategy(%d)", int(s))
}

// better reports whether a should be preferred to b by the capacity-blind
// rules: min-satisfying compares sizes, and every other strategy falls back
// to registration order.
func (s Strategy) better(a, b *Worker) bool {
	if s == MinSatisfying {
		ca, cb := a.Spec.Capacity, b.Spec.Capacity
		for _, d := range [][2]int64{{ca.GPUs, cb.GPUs}, {ca.GPUMemoryMB, cb.GPUMemoryMB},
			{ca.MemoryMB, cb.MemoryMB}, {ca.MilliCPU, cb.MilliCPU}} {
			if d[0] != d[1] {
				return d[0] < d[1]
			}
		}
	}
	return a.Idx < b.Idx
}
