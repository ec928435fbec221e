//go:build !unix

package main

import "time"

// processCPU is not measured on this system: `allot bench` reports no CPU
// time.
func processCPU() time.Duration { return 0 }

// peakMemory is not measured on this system.
func peakMemory() int64 { return 0 }
