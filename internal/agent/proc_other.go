//go:build !unix

package agent

import (
	"os"
	"os/exec"
	"time"

	"github.com/allot-sched/allot/internal/agent/cgroup"
)

// Without process groups, stops and timeouts reach the task's own process
// only, and both kill it at once; tasks run as the agent's user.

func setTaskAttrs(*exec.Cmd, *taskUser) {}

// startTask starts cmd; there is never a cgroup to start it in here, and
// its start time is not known.
func startTask(cmd *exec.Cmd, _ *cgroup.Group) (startWindow, error) {
	return startWindow{}, cmd.Start()
}

func terminateGroup(p *os.Process) error { return p.Kill() }
func killGroup(p *os.Process) error      { return p.Kill() }

func exitCode(ps *os.ProcessState) int { return ps.ExitCode() }

// rusage is unknown here.
func rusage(*os.ProcessState) (time.Duration, int64) { return 0, 0 }
