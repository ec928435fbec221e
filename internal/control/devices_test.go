package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

// gpuWorker is a registration of a worker with two detected GPUs.
func gpuWorker(name string, running ...api.Attempt) api.Register {
	return api.Register{Name: name, Resources: spec.Resources{CPU: 8000, Memory: 8192, GPUs: 2, GPUMemory: 24576}, Slots: 3,
		GPUDevices: []model.GPUDevice{{Index: 0, UUID: "GPU-aaa", MemoryMB: 24576}, {Index: 1, UUID: "GPU-bbb", MemoryMB: 24576}},
		Running:    running}
}

func TestGPUDevicesReachTheWorkerTheRecordAndTheEvents(t *testing.T) {
	p := newPlane(t)
	if _, err := p.c.Register(p.ctx(), gpuWorker("w1")); err != nil {
		t.Fatal(err)
	}
	p.submit(spec.Job{ID: "train", Tasks: []spec.Task{
		{Name: "shard", Count: 4, Resources: spec.Resources{CPU: 1000, GPUs: 1}, Run: "true"},
	}})
	// Three slots, two GPUs: two of the four shards start, each on its own device.
	l := p.leaseUntil("w1", "two shards", func(l api.Lease) bool { return len(l.Assignments) == 2 })
	byTask := map[string]api.Assignment{}
	for _, a := range l.Assignments {
		byTask[a.Task] = a
	}
	want := map[string]model.GPUDevice{
		"shard-0": {Index: 0, UUID: "GPU-aaa", MemoryMB: 24576},
		"shard-1": {Index: 1, UUID: "GPU-bbb", MemoryMB: 24576},
	}
	for task, dev := range want {
		a := byTask[task]
		if !slices.Equal(a.GPUs, []model.GPUDevice{dev}) {
			t.Errorf("%s: devices %+v, want %+v", task, a.GPUs, dev)
		}
		if a.TaskCount != 4 || fmt.Sprintf("shard-%d", a.TaskIndex) != task {
			t.Errorf("%s: array place %d of %d", task, a.TaskIndex, a.TaskCount)
		}
		if got := p.task("train", task).GPUs; !slices.Equal(got, []int{dev.Index}) {
			t.Errorf("%s: the API shows devices %v, want [%d]", task, got, dev.Index)
		}
	}
	started := map[string][]int{}
	for _, e := range p.events(EventTaskStarted) {
		var d struct {
			GPUs []int `json:"gpus"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("event data %s: %v", e.Data, err)
		}
		started[e.Task] = d.GPUs
	}
	if !slices.Equal(started["shard-0"], []int{0}) || !slices.Equal(started["shard-1"], []int{1}) {
		t.Errorf("task_started events record devices %v", started)
	}

	// shard-0 ends and shard-2 takes its device 0: shard-1 and shard-2 now
	// run on devices 1 and 0, the reverse of their order in the spec.
	if err := p.report("w1", succeeded(byTask["shard-0"].Attempt)); err != nil {
		t.Fatal(err)
	}
	l = p.leaseUntil("w1", "shard-2", func(l api.Lease) bool { return len(l.Assignments) == 1 })
	shard2 := l.Assignments[0]
	if shard2.Task != "shard-2" || len(shard2.GPUs) != 1 || shard2.GPUs[0].Index != 0 || shard2.TaskIndex != 2 {
		t.Fatalf("after shard-0 ended: %+v, want shard-2 (index 2) on device 0", shard2)
	}

	// After a restart each running shard holds its own device again (not
	// the lowest free in spec order): when shard-1 ends, shard-3 gets
	// shard-1's device 1, not shard-2's device 0.
	p.restart()
	if _, err := p.c.Register(p.ctx(), gpuWorker("w1", byTask["shard-1"].Attempt, shard2.Attempt)); err != nil {
		t.Fatal(err)
	}
	if got := p.task("train", "shard-2").GPUs; !slices.Equal(got, []int{0}) {
		t.Errorf("after the restart shard-2 holds %v, want [0]", got)
	}
	if err := p.report("w1", succeeded(byTask["shard-1"].Attempt)); err != nil {
		t.Fatal(err)
	}
	l = p.leaseUntil("w1", "shard-3", func(l api.Lease) bool { return len(l.Assignments) == 1 })
	if a := l.Assignments[0]; a.Task != "shard-3" || len(a.GPUs) != 1 || a.GPUs[0].UUID != "GPU-bbb" {
		t.Errorf("after shard-1 ended: %+v, want shard-3 on GPU-bbb", a)
	}
}

func TestTaskWithoutCountIsTaskZeroOfOne(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "only", Run: "true"}}})
	a := p.leaseUntil("w1", "the task", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0]
	if a.TaskIndex != 0 || a.TaskCount != 1 || a.GPUs != nil {
		t.Errorf("assignment %+v, want task 0 of 1 without devices", a)
	}
}

func TestRegistrationDeviceListIsChecked(t *testing.T) {
	cases := map[string][]model.GPUDevice{
		"one device for two GPUs": {{Index: 0}},
		"a device twice":          {{Index: 1}, {Index: 1}},
		"a negative index":        {{Index: -1}, {Index: 0}},
	}
	for name, ds := range cases {
		t.Run(name, func(t *testing.T) {
			p := newPlane(t)
			reg := gpuWorker("w1")
			reg.GPUDevices = ds
			var fe model.FieldErrors
			if _, err := p.c.Register(p.ctx(), reg); !errors.As(err, &fe) || len(fe) == 0 || !strings.HasPrefix(fe[0].Path, "gpuDevices") {
				t.Fatalf("register: %v, want a gpuDevices field error", err)
			}
		})
	}
}
