package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/model"
)

// gpuTask asks for n GPUs and one CPU.
func gpuTask(n int64) model.Resources { return model.Resources{MilliCPU: 1000, GPUs: n} }

// gpusOf renders the devices of each start as "task=0,1".
func gpusOf(d *Decisions) []string {
	out := []string{}
	for _, s := range d.Starts {
		out = append(out, s.Task+"="+model.DeviceList(s.GPUs))
	}
	return out
}

func TestGPUDevicesAreDistinctAndLowestFirst(t *testing.T) {
	cases := []struct {
		name    string
		devices []model.GPUDevice // registered; nil for 0..GPUs-1
		gpus    int64
		job     *jobB
		want    []string
	}{
		{name: "one GPU each", gpus: 4,
			job:  newJob("j").task("a").res(gpuTask(1)).task("b").res(gpuTask(1)).task("c").res(gpuTask(1)),
			want: []string{"a=0", "b=1", "c=2"}},
		{name: "a task asking two gets two", gpus: 4,
			job:  newJob("j").task("a").res(gpuTask(1)).task("b").res(gpuTask(2)).task("c").res(gpuTask(1)),
			want: []string{"a=0", "b=1,2", "c=3"}},
		{name: "a task without GPUs gets none", gpus: 2,
			job:  newJob("j").task("a").res(cpus(1)).task("b").res(gpuTask(1)),
			want: []string{"a=", "b=0"}},
		{name: "registered indices, lowest first", gpus: 2,
			devices: []model.GPUDevice{{Index: 3, UUID: "GPU-3"}, {Index: 1, UUID: "GPU-1"}},
			job:     newJob("j").task("a").res(gpuTask(1)).task("b").res(gpuTask(1)),
			want:    []string{"a=1", "b=3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			add := newWorker("w1").slots(8).gpus(tc.gpus, 0).add()
			add.GPUDevices = tc.devices
			e := engineWith(t, Config{}, add, tc.job.submit())
			if got := gpusOf(e.Cycle(t0)); !slices.Equal(got, tc.want) {
				t.Fatalf("devices %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGPUDevicesAreFreedWhenTheTaskLeaves(t *testing.T) {
	// Each case runs "old" on device 1 of a 2-GPU worker beside "keep" on
	// device 0, makes "old" leave, and expects the next start (of "new",
	// or of "old" again when it was requeued) to get device 1.
	cases := []struct {
		name  string
		leave func(t *testing.T, e *Engine)
	}{
		{name: "succeeded", leave: func(t *testing.T, e *Engine) { mustApply(t, e, finishOK("j", "old")) }},
		{name: "failed", leave: func(t *testing.T, e *Engine) { mustApply(t, e, finishFail("j", "old")) }},
		{name: "requeued", leave: func(t *testing.T, e *Engine) {
			mustApply(t, e, FinishTask{Job: "j", Task: "old", Outcome: model.Requeued, Message: "worker restarted", At: t0})
		}},
		{name: "cancelled", leave: func(t *testing.T, e *Engine) { mustApply(t, e, CancelJob{Job: "j", At: t0}) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := engineWith(t, Config{}, newWorker("w1").slots(2).gpus(2, 0).add(),
				newJob("keep").task("keep").res(gpuTask(1)).submit())
			e.Cycle(t0)
			mustApply(t, e, newJob("j").task("old").res(gpuTask(1)).submit())
			if got := gpusOf(e.Cycle(t0)); !slices.Equal(got, []string{"old=1"}) {
				t.Fatalf("first start %v", got)
			}
			tc.leave(t, e)
			if gpus := e.TaskGPUs("j", "old"); gpus != nil {
				t.Fatalf("old still holds %v", gpus)
			}
			mustApply(t, e, newJob("n").task("new").res(gpuTask(1)).submit())
			got := gpusOf(e.Cycle(t0.Add(time.Second)))
			if len(got) != 1 || got[0] != "new=1" && got[0] != "old=1" {
				t.Fatalf("starts %v, want one on device 1", got)
			}
			if held := e.TaskGPUs("keep", "keep"); !slices.Equal(held, []int{0}) {
				t.Fatalf("keep holds %v, want [0]", held)
			}
		})
	}
}

func TestPreemptedTaskGivesItsDeviceToTheOneThatStopsIt(t *testing.T) {
	q := QueueConfig{Name: "default", Policy: policy.Config{Kind: "priority", Settings: &priority.Config{PreemptablePercent: 100}}}
	e := engineWith(t, Config{Queues: []QueueConfig{q}}, newWorker("w1").gpus(1, 0).add(),
		newJob("low").prio(1).task("a").res(gpuTask(1)).submit())
	if got := gpusOf(e.Cycle(t0)); !slices.Equal(got, []string{"a=0"}) {
		t.Fatalf("first start %v", got)
	}
	urgent := newJob("urgent").prio(5).task("u").res(gpuTask(1))
	urgent.j.Urgent = true
	mustApply(t, e, urgent.submit())
	d := e.Cycle(t0.Add(time.Minute))
	if len(d.Stops) != 1 || d.Stops[0].Task != "a" {
		t.Fatalf("stops %+v, want a", d.Stops)
	}
	if got := gpusOf(d); !slices.Equal(got, []string{"u=0"}) {
		t.Fatalf("starts %v, want u on device 0", got)
	}
}

func TestLostWorkerFreesItsDevices(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").gpus(1, 0).add(), newJob("j").task("a").res(gpuTask(1)).submit())
	e.Cycle(t0)
	mustApply(t, e, RemoveWorker{Name: "w1", At: t0})
	if gpus := e.TaskGPUs("j", "a"); gpus != nil {
		t.Fatalf("a holds %v after its worker left", gpus)
	}
	mustApply(t, e, newWorker("w1").gpus(1, 0).add())
	if got := gpusOf(e.Cycle(t0.Add(time.Second))); !slices.Equal(got, []string{"a=0"}) {
		t.Fatalf("restart on the new worker: %v", got)
	}
}

func TestBatchMembersShareTheirHeadsDevices(t *testing.T) {
	e := engineWith(t, Config{Placement: PlacementConfig{MergeMax: 3}}, newWorker("w1").gpus(2, 0).add())
	job := batchJob("j", 3, "m")
	for i := range job.j.Tasks {
		job.j.Tasks[i].Resources = gpuTask(1)
	}
	mustApply(t, e, job.submit())
	d := e.Cycle(t0)
	if got := gpusOf(d); !slices.Equal(got, []string{"infer-0=0", "infer-1=0", "infer-2=0"}) {
		t.Fatalf("batch starts %v", got)
	}
	mustApply(t, e, finishOK("j", "infer-0"))
	mustApply(t, e, newJob("n").task("x").res(gpuTask(2)).submit())
	if got := gpusOf(e.Cycle(t0.Add(time.Second))); !slices.Equal(got, []string{"x=0,1"}) {
		t.Fatalf("after the batch: %v", got)
	}
}

func TestRestoreGivesRecordedDevicesBack(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").slots(4).gpus(4, 0).add(),
		newJob("j").task("a").res(gpuTask(1)).task("b").res(gpuTask(2)).task("c").res(gpuTask(1)).task("d").res(gpuTask(1)).submit())
	// b and a come back on the devices they had; c recorded a device b
	// holds now (a store that lost a write) and takes the lowest free one.
	mustApply(t, e, RestoreRunning{Job: "j", Task: "b", Worker: "w1", Started: t0, Attempt: 1, GPUs: []int{3, 1}})
	mustApply(t, e, RestoreRunning{Job: "j", Task: "a", Worker: "w1", Started: t0, Attempt: 1, GPUs: []int{2}})
	mustApply(t, e, RestoreRunning{Job: "j", Task: "c", Worker: "w1", Started: t0, Attempt: 1, GPUs: []int{1}})
	for task, want := range map[string][]int{"a": {2}, "b": {1, 3}, "c": {0}} {
		if got := e.TaskGPUs("j", task); !slices.Equal(got, want) {
			t.Fatalf("%s holds %v, want %v", task, got, want)
		}
	}
	if d := e.Cycle(t0); len(d.Starts) != 0 {
		t.Fatalf("every device is held, yet %v started", gpusOf(d))
	}
	mustApply(t, e, finishOK("j", "b"))
	if got := gpusOf(e.Cycle(t0.Add(time.Second))); !slices.Equal(got, []string{"d=1"}) {
		t.Fatalf("after b: %v", got)
	}
}

func TestRestoreWithoutRecordedDevicesTakesTheLowestFree(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").slots(2).gpus(2, 0).add(),
		newJob("j").task("a").res(gpuTask(1)).task("b").res(gpuTask(1)).submit())
	mustApply(t, e, RestoreRunning{Job: "j", Task: "a", Worker: "w1", Started: t0, Attempt: 1, GPUs: []int{1}})
	mustApply(t, e, RestoreRunning{Job: "j", Task: "b", Worker: "w1", Started: t0, Attempt: 1})
	if got := e.TaskGPUs("j", "b"); !slices.Equal(got, []int{0}) {
		t.Fatalf("b holds %v, want [0]", got)
	}
}

func TestWorkerDeviceListMustMatchItsGPUs(t *testing.T) {
	cases := map[string][]model.GPUDevice{
		"fewer devices than GPUs": {{Index: 0}},
		"a repeated index":        {{Index: 0}, {Index: 0}},
		"a negative index":        {{Index: -1}, {Index: 0}},
	}
	for name, ds := range cases {
		t.Run(name, func(t *testing.T) {
			e := engineWith(t, Config{})
			add := newWorker("w1").gpus(2, 0).add()
			add.GPUDevices = ds
			if err := e.Apply(add); !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

// TestNoDeviceIsEverHeldTwice starts and ends GPU tasks of random sizes on
// a few workers at random and checks, after every step, that each running
// task holds as many distinct devices as it asks for, on its worker, and
// that no device is held by two tasks.
func TestNoDeviceIsEverHeldTwice(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	e := engineWith(t, Config{}, newWorker("w1").slots(4).gpus(4, 0).add(), newWorker("w2").slots(8).gpus(8, 0).add())
	job := newJob("j")
	for i := range 200 {
		job.task(fmt.Sprintf("t%03d", i)).res(gpuTask(1 + rng.Int64N(3))).attempts(2)
	}
	mustApply(t, e, job.submit())
	running := map[string]bool{}
	now := t0
	for step := 0; step < 400 && !e.jobs["j"].done; step++ {
		now = now.Add(time.Second)
		for _, s := range e.Cycle(now).Starts {
			running[s.Task] = true
		}
		held := map[string]string{} // worker/device → task
		for name := range running {
			tk := e.jobs["j"].byName[name]
			gpus := e.TaskGPUs("j", name)
			if int64(len(gpus)) != tk.spec.Resources.GPUs {
				t.Fatalf("step %d: %s asks %d GPUs, holds %v", step, name, tk.spec.Resources.GPUs, gpus)
			}
			for _, g := range gpus {
				key := fmt.Sprintf("%s/%d", tk.worker.Spec.Name, g)
				if other, dup := held[key]; dup {
					t.Fatalf("step %d: device %s held by %s and %s", step, key, other, name)
				}
				held[key] = name
			}
		}
		names := make([]string, 0, len(running))
		for name := range running {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if rng.IntN(3) != 0 {
				continue
			}
			ev := finishOK("j", name)
			if rng.IntN(4) == 0 {
				ev = finishFail("j", name)
			}
			mustApply(t, e, ev)
			delete(running, name)
		}
	}
	if !e.jobs["j"].done {
		t.Fatal("the job did not end in 400 steps")
	}
}
