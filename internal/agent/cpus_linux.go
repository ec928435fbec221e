package agent

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// agentCPUs lists the CPUs the agent may run on (its affinity), which it
// hands to attempts that ask for whole CPUs.
func agentCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var out []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}

// maxRSS is the peak resident memory in bytes: Linux counts it in KiB.
func maxRSS(ru *syscall.Rusage) int64 { return ru.Maxrss << 10 }
