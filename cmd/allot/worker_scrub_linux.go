package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// scrubToken sheds the token from what the process shows. Unsetting the
// variable is not enough on Linux: /proc/PID/environ and /proc/PID/cmdline
// show the memory the process started with, which unsetenv does not touch.
// So the agent starts itself again in place (execve: the same PID), with
// an environment and arguments without the token, and hands the token to
// its new self through a pipe (--token-fd) that the new self reads and
// closes. It returns only if that fails.
func scrubToken(token string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("shedding the token: %w", err)
	}
	defer r.Close()
	// The token is far smaller than the pipe's buffer: the write does not
	// wait for a reader.
	_, err = w.WriteString(token)
	w.Close()
	if err != nil {
		return fmt.Errorf("shedding the token: %w", err)
	}
	fd := int(r.Fd())
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil { // inherited across execve
		return fmt.Errorf("shedding the token: %w", err)
	}
	args := append(withoutToken(os.Args), "--token-fd", strconv.Itoa(fd))
	env := withoutEnv(os.Environ(), "ALLOT_TOKEN")
	err = syscall.Exec("/proc/self/exe", args, env)
	return fmt.Errorf("shedding the token: starting again without it: %w", err)
}

// protectProcess marks the agent non-dumpable: a process of the same user
// (a task, when the agent is not root) may then not read its memory,
// environment or open files through /proc, nor attach to it, and it
// leaves no core dump with the token in it.
func protectProcess() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("marking the agent non-dumpable: %w", err)
	}
	return nil
}
