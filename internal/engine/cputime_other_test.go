//go:build !unix

package engine

import "time"

// cpuTime is not measured on this platform; benchmarks then omit cpu-ns/op.
func cpuTime() time.Duration { return 0 }
