//go:build unix

package netlimit

import "syscall"

// RaiseFileLimit raises the process's soft limit of open files to its hard
// limit, and returns the limit it has then. The Go runtime does the same
// at start on most systems; doing it here makes it certain and tells the
// limits what they are sized from.
func RaiseFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			return raised.Cur, nil
		}
		// Some systems refuse an unlimited hard limit as a soft one:
		// keep the soft limit we have.
	}
	return lim.Cur, nil
}
