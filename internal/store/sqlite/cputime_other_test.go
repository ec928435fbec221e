//go:build !unix

package sqlite

import "time"

// cpuTime is zero where the process's CPU time is not read: a benchmark's
// cpu-µs/job then says nothing.
func cpuTime() time.Duration { return 0 }
