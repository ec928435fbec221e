package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"syscall"
	"testing"

	"github.com/allot-sched/allot/internal/agent/cgroup"
	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
)

// The nodes of a worker's GPUs are found by index, and an attempt's cgroup
// denies those its task was not given; without a node for every GPU (GPUs
// declared with --gpus on a host that has none) nothing is denied.
func TestGPUNodesAndWhatAnAttemptIsDenied(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making device nodes needs root")
	}
	dev := t.TempDir()
	for i := range 3 {
		if err := syscall.Mknod(filepath.Join(dev, "nvidia"+strconv.Itoa(i)), syscall.S_IFCHR|0o666, 195<<8|i); err != nil {
			t.Skipf("cannot make device nodes here: %v", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dev, "nvidia7"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	reg := api.Register{Resources: model.ResourceSpec{GPUs: 3}}
	nodes := gpuNodes(dev, reg)
	want := map[int]cgroup.Device{0: nvidiaNode(0), 1: nvidiaNode(1), 2: nvidiaNode(2)}
	if !reflect.DeepEqual(nodes, want) {
		t.Fatalf("nodes %v, want %v", nodes, want)
	}
	as := api.Assignment{TaskCount: 1, GPUs: []model.GPUDevice{{Index: 1}}}
	if got := deniedGPUs(nodes, as); !reflect.DeepEqual(got, []cgroup.Device{nvidiaNode(0), nvidiaNode(2)}) {
		t.Errorf("a task given GPU 1 is denied %v, want 0 and 2", got)
	}
	if got := deniedGPUs(nodes, api.Assignment{TaskCount: 1}); len(got) != 3 {
		t.Errorf("a task given no GPU is denied %v, want all three", got)
	}
	// Detected devices are found by their own indices.
	reg = api.Register{Resources: model.ResourceSpec{GPUs: 2}, GPUDevices: []model.GPUDevice{{Index: 0}, {Index: 2}}}
	if got := gpuNodes(dev, reg); len(got) != 2 || got[2] != (nvidiaNode(2)) {
		t.Errorf("detected devices 0 and 2: nodes %v", got)
	}
	for name, reg := range map[string]api.Register{
		"a GPU without a node":   {Resources: model.ResourceSpec{GPUs: 4}},
		"a node that is a file":  {Resources: model.ResourceSpec{GPUs: 1}, GPUDevices: []model.GPUDevice{{Index: 7}}},
		"a worker without a GPU": {},
	} {
		if got := gpuNodes(dev, reg); got != nil {
			t.Errorf("%s: nodes %v, want none", name, got)
		}
	}
}

// nvidiaNode is the device of /dev/nvidiaN: NVIDIA's major 195.
func nvidiaNode(n int64) cgroup.Device { return cgroup.Device{Type: 'c', Major: 195, Minor: n} }

// An assignment of a server that predates GPU devices (no array place,
// TaskCount 0) gives its task no device list: the task sees every GPU, as
// its environment is left alone, so its cgroup denies none of them. From a
// server that knows devices, a task given none is denied them all.
func TestAnOlderServersTaskIsDeniedNoGPU(t *testing.T) {
	nodes := map[int]cgroup.Device{0: nvidiaNode(0), 1: nvidiaNode(1)}
	if got := deniedGPUs(nodes, api.Assignment{Resources: model.ResourceSpec{GPUs: 1}}); got != nil {
		t.Errorf("a GPU task of an older server is denied %v, want none", got)
	}
	if got := deniedGPUs(nodes, api.Assignment{TaskCount: 1}); len(got) != 2 {
		t.Errorf("a task given no GPU is denied %v, want both", got)
	}
	as := api.Assignment{TaskCount: 1, GPUs: []model.GPUDevice{{Index: 1}}}
	if got := deniedGPUs(nodes, as); !reflect.DeepEqual(got, []cgroup.Device{nvidiaNode(0)}) {
		t.Errorf("a task given GPU 1 is denied %v, want 0", got)
	}
}
