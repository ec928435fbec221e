//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system, all threads) this process
// has used. `allot bench` reports it per task: on a shared machine the
// wall time also counts the time spent waiting for a core, the CPU time
// much less so.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakMemory is the most resident memory this process has held (its
// high-water mark), what the server's memory settings (GOGC) trade against
// CPU.
func peakMemory() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024 // kilobytes on Linux
}
