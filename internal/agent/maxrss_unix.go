//go:build unix && !linux

package agent

import (
	"runtime"
	"syscall"
)

// maxRSS is the peak resident memory in bytes: macOS counts it in bytes,
// the BSDs in KiB.
func maxRSS(ru *syscall.Rusage) int64 {
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) << 10
}
