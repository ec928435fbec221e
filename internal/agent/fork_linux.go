package agent

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
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
	done chan error
}

// startTask starts cmd from a forking thread.
func startTask(cmd *exec.Cmd) error {
	forkerOnce.Do(func() {
		forks = make(chan forkRequest)
		for range forkers {
			go forker()
		}
	})
	req := forkRequest{cmd: cmd, done: make(chan error, 1)}
	forks <- req
	return <-req.done
}

func forker() {
	runtime.LockOSThread() // for good: see above
	for req := range forks {
		req.done <- req.cmd.Start()
	}
}
