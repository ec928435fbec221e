package cgroup

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// write writes value to the control file dir/file. Control files are
// written and read with plain system calls, not through os.File: an
// attempt's cgroup costs a dozen of them, and os.File's bookkeeping (the
// poller's registration, the finalizer) doubles each one's cost.
func write(dir, file, value string) error {
	path := dir + "/" + file
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err == nil {
		_, err = unix.Write(fd, []byte(value))
		if cerr := unix.Close(fd); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("cgroup: writing %q to %s: %w", value, path, &os.PathError{Op: "write", Path: path, Err: err})
	}
	return nil
}

// read returns the content of dir/file without the trailing newline.
func read(dir, file string) (string, error) {
	var buf [512]byte
	b, err := readSmall(dir+"/"+file, buf[:0])
	return strings.TrimSpace(string(b)), err
}

// readSmall appends the content of the file at path to b, read with
// plain system calls (see write).
func readSmall(path string, b []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return b, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return b, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}
