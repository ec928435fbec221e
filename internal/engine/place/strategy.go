package place

import "fmt"

// Strategy chooses among the workers that can run a task now.
type Strategy int

const (
	// FirstFit takes the first worker in registration order.
	FirstFit Strategy = iota
	// MinSatisfying takes the smallest worker that fits, keeping large
	// machines free for the tasks that need them; ties go to registration
	// order.
	MinSatisfying
)

var strategyNames = map[string]Strategy{"first-fit": FirstFit, "min-satisfying": MinSatisfying}

// ParseStrategy reads a strategy name as written in configuration.
func ParseStrategy(name string) (Strategy, error) {
	if name == "" {
		return FirstFit, nil
	}
	s, ok := strategyNames[name]
	if !ok {
		return 0, fmt.Errorf("unknown selection strategy %q (known: first-fit, min-satisfying)", name)
	}
	return s, nil
}

// String returns the configuration name of s.
func (s Strategy) String() string {
	for n, v := range strategyNames {
		if v == s {
			return n
		}
	}
	return fmt.Sprintf("strategy(%d)", int(s))
}

// better reports whether a should be preferred to b.
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
