package agent

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"github.com/allot-sched/allot/internal/agent/cgroup"
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
	done chan error
}

// startTask starts cmd from a forking thread, inside the cgroup g when it
// is not nil: on cgroup v1 the forking thread traces the task to its exec
// (or enters the group for the fork), which is why it must be one of
// these locked threads.
func startTask(cmd *exec.Cmd, g *cgroup.Group) error {
	forkerOnce.Do(func() {
		forks = make(chan forkRequest)
		for range forkers {
			go forker()
		}
	})
	req := forkRequest{cmd: cmd, g: g, done: make(chan error, 1)}
	forks <- req
	return <-req.done
}

func forker() {
	runtime.LockOSThread() // for good: see above
	for req := range forks {
		if req.g == nil {
			req.done <- req.cmd.Start()
			continue
		}
		startErr, leaveErr := req.g.Start(req.cmd, req.cmd.Start)
		if leaveErr != nil {
			// The thread is stuck in the task's cgroup: it must fork
			// nothing more. The goroutine ends locked, which ends the
			// thread (and, through the parent-death signal, the task
			// it just started); another forker takes its place.
			go forker()
			req.done <- errors.Join(startErr, fmt.Errorf("the forking thread could not leave the task's cgroup: %w", leaveErr))
			return
		}
		req.done <- startErr
	}
}
