package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/allot-sched/allot/internal/agent/cgroup"
	"github.com/allot-sched/allot/internal/api"
)

// gpuNodes finds the device node of each of the worker's GPUs, NVIDIA's
// /dev/nvidiaN under dev, so that an attempt's cgroup can deny it the GPUs
// its task was not given. It returns nil unless every GPU has its node: a
// worker declared with --gpus on a host without them has nothing to deny.
func gpuNodes(dev string, reg api.Register) map[int]cgroup.Device {
	indices := make([]int, 0, reg.Resources.GPUs)
	if len(reg.GPUDevices) > 0 {
		for _, d := range reg.GPUDevices {
			indices = append(indices, d.Index)
		}
	} else {
		for i := range reg.Resources.GPUs {
			indices = append(indices, i)
		}
	}
	if len(indices) == 0 {
		return nil
	}
	nodes := make(map[int]cgroup.Device, len(indices))
	for _, i := range indices {
		fi, err := os.Stat(filepath.Join(dev, "nvidia"+strconv.Itoa(i)))
		if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			return nil
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		nodes[i] = cgroup.Device{Type: 'c', Major: int64(major(st.Rdev)), Minor: int64(minor(st.Rdev))}
	}
	return nodes
}

// major and minor split a Linux device number (the kernel's new encoding,
// which also reads the old).
func major(dev uint64) uint32 { return uint32((dev>>8)&0xfff) | uint32((dev>>32)&^0xfff) }
func minor(dev uint64) uint32 { return uint32(dev&0xff) | uint32((dev>>12)&^0xff) }
