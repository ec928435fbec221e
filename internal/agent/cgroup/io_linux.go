package cgroup

import (
	"fmt"
	"os"
	"strings"
	"sync"

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

// openFiles keeps the control files a reused group uses at every attempt
// open (the cgroup.procs its task is moved in through, the counters read
// when it ends), so that each use is one system call, not an open, a read
// or write, and a close with the path walked each time. Not for reading
// cgroup.procs: on v1 a descriptor kept open goes on showing the list of
// processes it first read for up to a second.
type openFiles struct {
	mu  sync.Mutex
	fds map[fileMode]int
}

type fileMode struct {
	path  string
	flags int
}

func (o *openFiles) fd(path string, flags int) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := fileMode{path, flags}
	if fd, ok := o.fds[k]; ok {
		return fd, nil
	}
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if o.fds == nil {
		o.fds = map[fileMode]int{}
	}
	o.fds[k] = fd
	return fd, nil
}

// write writes value to the control file dir/file.
func (o *openFiles) write(dir, file, value string) error {
	path := dir + "/" + file
	fd, err := o.fd(path, unix.O_WRONLY)
	if err == nil {
		if _, werr := unix.Pwrite(fd, []byte(value), 0); werr != nil {
			err = &os.PathError{Op: "write", Path: path, Err: werr}
		}
	}
	if err != nil {
		return fmt.Errorf("cgroup: writing %q to %s: %w", value, path, err)
	}
	return nil
}

// read returns the content of the control file dir/file without the
// trailing newline, read from its start: the kernel makes it anew for a
// read at offset 0. A read shorter than asked is the end (the kernel
// fills what it is given).
func (o *openFiles) read(dir, file string) (string, error) {
	path := dir + "/" + file
	fd, err := o.fd(path, unix.O_RDONLY)
	if err != nil {
		return "", err
	}
	var buf [512]byte
	b := buf[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		want := cap(b) - len(b)
		n, err := unix.Pread(fd, b[len(b):cap(b)], int64(len(b)))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", &os.PathError{Op: "read", Path: path, Err: err}
		}
		b = b[:len(b)+n]
		if n < want {
			return strings.TrimSpace(string(b)), nil
		}
	}
}

// close closes the files.
func (o *openFiles) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, fd := range o.fds {
		unix.Close(fd)
		delete(o.fds, k)
	}
}
