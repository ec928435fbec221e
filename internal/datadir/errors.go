package datadir

import "fmt"

// InUseError is a data directory another process holds the lock of.
type InUseError struct {
	Dir string
	PID int // 0: the holder has not written its PID yet
}

func (e *InUseError) Error() string {
	who := "another allot server"
	if e.PID > 0 {
		who = fmt.Sprintf("another allot server (PID %d)", e.PID)
	}
	return fmt.Sprintf("the data directory %s is in use by %s: two servers on one data directory would each run every job; "+
		"stop that server first, or give this one a data directory of its own (--data-dir)", e.Dir, who)
}
