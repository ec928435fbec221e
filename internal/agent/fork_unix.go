//go:build unix && !linux

package agent

import (
	"os/exec"
	"syscall"

	"github.com/allot-sched/allot/internal/agent/cgroup"
)

// Other systems have no parent-death signal in SysProcAttr: tasks are
// stopped by the agent, and survive it if it is killed.

func parentDeath(*syscall.SysProcAttr) {}

// startTask starts cmd; there is never a cgroup to start it in here, and
// its start time is not known.
func startTask(cmd *exec.Cmd, _ *cgroup.Group) (startWindow, error) {
	return startWindow{}, cmd.Start()
}
