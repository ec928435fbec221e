package cgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Group is the control group of one attempt. Its methods may be called
// from several goroutines (a stop order kills while the runner waits).
type Group struct {
	impl group
	// Kill sets emptied when it finds the group empty, and killed when
	// it finds a process in it (a daemon of the task): only a group
	// found empty and never killed in is reused (Release).
	emptied, killed atomic.Bool
}

// group is what a version's group does.
type group interface {
	// start runs start (which starts cmd) so that the process begins in
	// the group: no process of the task ever runs outside it.
	// leaveErr says the calling thread could not be moved back out of
	// the group (v1): it must not fork anything else.
	start(cmd *exec.Cmd, start func() error) (startErr, leaveErr error)
	procs() ([]int, error)
	// empty says cheaply that the group holds no process; false when
	// it does or cannot tell.
	empty() bool
	// freeze stops (true) or resumes (false) every process of the group,
	// so that none forks while they are killed; false if it cannot.
	freeze(bool) bool
	// killAll kills every process at once where the kernel can (v2's
	// cgroup.kill); false if it cannot.
	killAll() bool
	usage() Usage
	dirs() []string
	// release gives the group back for a later attempt (reusable: its
	// task left nothing in it) or removes it.
	release(reusable bool) error
}

// Start starts cmd inside the group, calling start (cmd.Start, or a
// wrapper of it) on the calling thread, which must be locked to its
// goroutine (runtime.LockOSThread): on v1 that thread traces the child
// to its exec, moves it in and lets it go (or, where ptrace is refused,
// enters the group for the fork), so that no instruction of the task
// runs outside the group. A non-nil leaveErr says the thread could not
// leave the group again: the caller must end the thread (return from
// the goroutine without unlocking it).
func (g *Group) Start(cmd *exec.Cmd, start func() error) (startErr, leaveErr error) {
	return g.impl.start(cmd, start)
}

// Procs lists the processes in the group.
func (g *Group) Procs() ([]int, error) { return g.impl.procs() }

// Signal sends sig to every process of the group (a SIGTERM that reaches
// what left the task's process group).
func (g *Group) Signal(sig syscall.Signal) error {
	pids, err := g.impl.procs()
	if err != nil {
		return err
	}
	for _, p := range pids {
		if err := syscall.Kill(p, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("cgroup: signalling process %d: %w", p, err)
		}
	}
	return nil
}

// killWait bounds how long Kill and Remove wait for the processes of a
// group to be gone.
const killWait = 5 * time.Second

// Kill kills every process of the group, including those a task detached
// (setsid, double fork), and returns once the group is empty: cgroup.kill
// on v2; on v1 the group is frozen so that nothing forks meanwhile, each
// process gets SIGKILL, and it is thawed for the signals to land.
func (g *Group) Kill() error {
	if g.impl.empty() {
		g.emptied.Store(true)
		return nil
	}
	deadline := time.Now().Add(killWait)
	for {
		pids, err := g.impl.procs()
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			g.emptied.Store(true)
			return nil
		}
		g.killed.Store(true)
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup: %d processes still in %s after SIGKILL", len(pids), g.impl.dirs()[0])
		}
		if !g.impl.killAll() {
			frozen := g.impl.freeze(true)
			if frozen {
				// Listed again: a process may have forked before the
				// freeze took.
				if pids, err = g.impl.procs(); err != nil {
					g.impl.freeze(false)
					return err
				}
			}
			for _, p := range pids {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			if frozen {
				g.impl.freeze(false)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Usage reads what the group's processes used so far.
func (g *Group) Usage() Usage { return g.impl.usage() }

// Remove removes the group, once the processes it held are gone (Kill
// first); a group still busy after a few seconds is an error.
func (g *Group) Remove() error { return g.impl.release(false) }

// Release ends the group's use by its attempt, once Kill found it empty:
// a group from Manager.Take whose task left nothing behind (no process
// for Kill to kill, no out-of-memory kill, almost no memory still
// charged to it) goes back to the manager for a later attempt; any other
// is removed, as Remove does.
func (g *Group) Release() error {
	return g.impl.release(g.emptied.Load() && !g.killed.Load())
}

// removeDirs removes the group directories dirs (see rmdir).
func removeDirs(dirs []string) error {
	var errs []error
	for _, d := range dirs {
		errs = append(errs, rmdir(d))
	}
	return errors.Join(errs...)
}

// rmdir removes the group directory d, waiting for the kernel to let go of
// processes that just died; a missing directory is not an error.
func rmdir(d string) error {
	deadline := time.Now().Add(killWait)
	for {
		err := syscall.Rmdir(d)
		switch {
		case err == nil, errors.Is(err, syscall.ENOENT):
			return nil
		case errors.Is(err, syscall.EBUSY) && time.Now().Before(deadline):
			time.Sleep(10 * time.Millisecond)
		case errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EEXIST):
			// A plain directory (a test's fake tree): its files go
			// with it.
			if rerr := os.RemoveAll(d); rerr != nil {
				return fmt.Errorf("cgroup: removing %s: %w", d, rerr)
			}
			return nil
		default:
			return fmt.Errorf("cgroup: removing %s: %w", d, err)
		}
	}
}

// removeTree kills what runs in the group d and in the groups under it,
// and removes them all (an agent's group, with attempts' groups that a
// crash left behind).
func removeTree(d string) error {
	children, err := readDirs(d)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range children {
		errs = append(errs, removeTree(filepath.Join(d, c)))
	}
	// A group frozen by a kill its agent did not finish: SIGKILL lands
	// only once it is thawed.
	if exists(d, "freezer.state") {
		_ = write(d, "freezer.state", "THAWED")
	}
	if exists(d, "cgroup.freeze") {
		_ = write(d, "cgroup.freeze", "0")
	}
	deadline := time.Now().Add(killWait)
	for {
		pids, err := readProcs(d)
		if err != nil || len(pids) == 0 || time.Now().After(deadline) {
			break
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return errors.Join(append(errs, rmdir(d))...)
}

// readProcs reads the PIDs in dir/cgroup.procs.
func readProcs(dir string) ([]int, error) {
	s, err := read(dir, "cgroup.procs")
	if err != nil {
		return nil, fmt.Errorf("cgroup: listing the processes of %s: %w", dir, err)
	}
	var out []int
	for f := range strings.FieldsSeq(s) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// mkdir makes a group directory; one left by an earlier run of the same
// name is reused.
func mkdir(d string) error {
	if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("cgroup: making %s: %w", d, err)
	}
	return nil
}
