//go:build unix && !linux

package agent

import (
	"os/exec"
	"syscall"
)

// Other systems have no parent-death signal in SysProcAttr: tasks are
// stopped by the agent, and survive it if it is killed.

func parentDeath(*syscall.SysProcAttr) {}

func startTask(cmd *exec.Cmd) error { return cmd.Start() }
