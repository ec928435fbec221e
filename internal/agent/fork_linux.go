package agent

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"github.com/allot-sched/allot/internal/agent/cgroup"
	"golang.org/x/sys/unix"
)

// Tasks die with the agent: each gets SIGKILL as its parent-death signal
// (PR_SET_PDEATHSIG), so a worker killed with SIGKILL does not leave its
// tasks running beside the retries of their attempts. What a task started
// in its process group outlives it; a restarted agent kills that
// (leftovers_linux.go).

// parentDeath makes the kernel kill the task when its parent dies.
func parentDeath(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// The kernel sends the parent-death signal when the THREAD that forked the
// task ends, not the process: a task forked from a goroutine that happens
// to run on a thread the runtime later ends would be killed with it. So
// every task is forked from one of a few goroutines, each locked to its
// thread for the life of the process (the lock is never released, so the
// runtime never reuses or ends those threads). A fork holds its thread
// until the child has called exec: with one forker, the slots of a busy
// worker would wait in line for each other's exec; forkers lets that many
// forks run at once.
const forkers = 4

var (
	forkerOnce sync.Once
	forks      chan forkRequest
)

type forkRequest struct {
	cmd  *exec.Cmd
	g    *cgroup.Group // nil: started unconfined
	done chan forkResult
}

// forkResult is how a fork went: the error, or when the task started
// (see forkClock).
type forkResult struct {
	start startWindow
	err   error
}

// clockTicks is the kernel's USER_HZ, the unit of a process's start time
// in /proc/PID/stat: 100 on every architecture Go runs on but alpha, and
// checked against /proc on the first tasks (taskGroups.add).
const clockTicks = 100

// maxStartSpan bounds the ticks a fork's start window may span (100 ms):
// a process group whose leader started in the window is the task's, the
// window being far too short for its ID to be used again meanwhile.
const maxStartSpan = 10

// bootTicks reads CLOCK_BOOTTIME, the clock of a process's start time, in
// clock ticks; 0 if it cannot.
func bootTicks() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano()) / (1e9 / clockTicks)
}

// forkClock calls start (which forks) between two readings of the boot
// clock: the kernel stamps the child's start on that clock when it forks,
// so its start time, as /proc/PID/stat will give it, lies between the
// two, known without reading it (which costs more than the rest of the
// task's record). A zero window when the fork took too long.
func forkClock(start func() error) (startWindow, error) {
	before := bootTicks()
	err := start()
	after := bootTicks()
	if err != nil || before == 0 || after < before || after-before > maxStartSpan {
		return startWindow{}, err
	}
	return startWindow{From: before, Span: after - before}, nil
}

// startTask starts cmd from a forking thread, inside the cgroup g when it
// is not nil: on cgroup v1 the forking thread traces the task to its exec
// (or enters the group for the fork), which is why it must be one of
// these locked threads.
//
// It returns when the task started, as far as the fork tells (see
// forkClock).
func startTask(cmd *exec.Cmd, g *cgroup.Group) (startWindow, error) {
	forkerOnce.Do(func() {
		forks = make(chan forkRequest)
		for range forkers {
			go forker()
		}
	})
	req := forkRequest{cmd: cmd, g: g, done: make(chan forkResult, 1)}
	forks <- req
	res := <-req.done
	return res.start, res.err
}

func forker() {
	runtime.LockOSThread() // for good: see above
	for req := range forks {
		var res forkResult
		start := func() (err error) {
			res.start, err = forkClock(req.cmd.Start)
			return err
		}
		if req.g == nil {
			res.err = start()
			req.done <- res
			continue
		}
		startErr, leaveErr := req.g.Start(req.cmd, start)
		if leaveErr != nil {
			// The thread is stuck in the task's cgroup: it must fork
			// nothing more. The goroutine ends locked, which ends the
			// thread (and, through the parent-death signal, the task
			// it just started); another forker takes its place.
			go forker()
			req.done <- forkResult{err: errors.Join(startErr, fmt.Errorf("the forking thread could not leave the task's cgroup: %w", leaveErr))}
			return
		}
		if startErr != nil {
			res = forkResult{err: startErr}
		}
		req.done <- res
	}
}
