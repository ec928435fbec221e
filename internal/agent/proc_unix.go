//go:build unix

package agent

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// setTaskAttrs shapes a task's process: a process group of its own, so
// signals to the group reach everything it starts (a shell's children, a
// pipeline) and nothing of the agent's; the user it runs as, with that
// user's groups, when u is set (nil: the agent's own); and, where the
// system has one, a signal that kills it when the agent dies
// (parentDeath).
func setTaskAttrs(cmd *exec.Cmd, u *taskUser) {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if u != nil {
		attr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
	}
	parentDeath(attr)
	cmd.SysProcAttr = attr
}

// signalGroup sends sig to the process group led by p. A group that is
// already gone is not an error.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	if err := syscall.Kill(-p.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

func terminateGroup(p *os.Process) error { return signalGroup(p, syscall.SIGTERM) }
func killGroup(p *os.Process) error      { return signalGroup(p, syscall.SIGKILL) }

// exitCode is the process's exit status, or 128+N when signal N killed it,
// as shells report it; -1 stays reserved for "could not start".
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// rusage is the CPU time and peak resident memory (bytes) of the process
// and of the children it waited for, from its resource usage: what an
// attempt used when no cgroup measures it.
func rusage(ps *os.ProcessState) (time.Duration, int64) {
	if ps == nil {
		return 0, 0
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0
	}
	return usageTime(ru.Utime) + usageTime(ru.Stime), maxRSS(ru)
}

// usageTime converts a resource usage time to a duration.
func usageTime(tv syscall.Timeval) time.Duration {
	return time.Duration(tv.Sec)*time.Second + time.Duration(tv.Usec)*time.Microsecond
}
