//go:build !linux

package agent

import (
	"github.com/allot-sched/allot/internal/agent/cgroup"
	"github.com/allot-sched/allot/internal/api"
)

// gpuNodes finds no device nodes here: only Linux has the cgroups that
// deny them.
func gpuNodes(string, api.Register) map[int]cgroup.Device { return nil }
