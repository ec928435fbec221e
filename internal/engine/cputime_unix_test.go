//go:build unix

package engine

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) the test process has used, all
// threads included. Benchmarks report it beside wall time because on a
// shared machine a cycle's wall time also counts time spent waiting for a
// core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
