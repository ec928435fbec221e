//go:build !unix

package agent

import (
	"os"
	"os/exec"
)

// Without process groups, stops and timeouts reach the task's own process
// only, and both kill it at once; tasks run as the agent's user.

func setTaskAttrs(*exec.Cmd, *taskUser) {}

func startTask(cmd *exec.Cmd) error { return cmd.Start() }

func terminateGroup(p *os.Process) error { return p.Kill() }
func killGroup(p *os.Process) error      { return p.Kill() }

func exitCode(ps *os.ProcessState) int { return ps.ExitCode() }

// resourceUsage is the ended process's CPU time; peak memory is not
// measured here.
func resourceUsage(ps *os.ProcessState) (cpuSeconds float64, peakMemory int64) {
	if ps == nil {
		return 0, 0
	}
	return (ps.UserTime() + ps.SystemTime()).Seconds(), 0
}
