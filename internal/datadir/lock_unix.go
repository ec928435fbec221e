//go:build unix

package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockDir takes an exclusive flock on the directory's lock file. The kernel
// releases the lock when the process ends, however it ends, so a server
// killed with SIGKILL leaves no stale lock behind.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		if why, ok := readOnly(err); ok {
			return nil, &ReadOnlyError{Path: dir, Dir: true, Why: why, Err: err}
		}
		return nil, fmt.Errorf("data directory %s: lock: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &InUseError{Dir: dir, PID: holder(f)}
		}
		return nil, fmt.Errorf("data directory %s: lock %s: %w", dir, path, err)
	}
	return f, nil
}

// writePID records this process's PID in the lock file, for the refusal
// another server gets. It overwrites in place and then cuts what is left,
// so that on a full disk it reuses the block the file has.
func writePID(f *os.File) error {
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if _, err := f.WriteAt(pid, 0); err != nil {
		return err
	}
	return f.Truncate(int64(len(pid)))
}

// holder reads the PID the lock's holder wrote; 0 when it wrote none yet.
func holder(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil {
		return 0
	}
	return pid
}
