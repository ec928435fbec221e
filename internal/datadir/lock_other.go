//go:build !unix

package datadir

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// lockDir only creates the lock file here: this system has no flock, so
// two servers on one directory are not prevented.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: lock: %w", dir, err)
	}
	return f, nil
}

// writePID records this process's PID in the lock file.
func writePID(f *os.File) error {
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}
