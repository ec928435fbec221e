package engine_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/scenario"
)

// sceneAt is the explain scenarios' time zero plus d.
func sceneAt(d time.Duration) time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(d) }

// The devices section of testdata/explain/gpu-devices.yaml, checked by
// hand: train/t holds both of gpu-0's devices until 00:50; eval/a and
// eval/b hold gpu-1's 0 and 1 until 00:05 and 00:20. gpu-1 has two free
// first, at 00:20, so it comes first, and the estimate agrees.
func TestExplainNamesTheHoldersOfTheDevicesATaskWaitsFor(t *testing.T) {
	x, est, e := explainSteps(t, "gpu-devices", "tune", nil)
	want := &engine.GPUDeviceWait{Need: 2, Workers: []engine.WorkerDevices{
		{Worker: "gpu-1", Devices: 2, FreeBy: sceneAt(20 * time.Minute), Frees: []string{"eval/a", "eval/b"}, Held: []engine.DeviceHolder{
			{Device: 0, Job: "eval", Task: "a", ExpectedEnd: sceneAt(5 * time.Minute)},
			{Device: 1, Job: "eval", Task: "b", ExpectedEnd: sceneAt(20 * time.Minute)}}},
		{Worker: "gpu-0", Devices: 2, FreeBy: sceneAt(50 * time.Minute), Frees: []string{"train/t"}, Held: []engine.DeviceHolder{
			{Device: 0, Job: "train", Task: "t", ExpectedEnd: sceneAt(50 * time.Minute)},
			{Device: 1, Job: "train", Task: "t", ExpectedEnd: sceneAt(50 * time.Minute)}}},
	}}
	if len(x.Pending) != 1 || x.Pending[0].Placement == nil {
		t.Fatalf("pending = %+v, want one ready group with a placement section", x.Pending)
	}
	if got := x.Pending[0].Placement.GPUDevices; !reflect.DeepEqual(got, want) {
		t.Errorf("gpu devices:\n got %+v\nwant %+v", got, want)
	}
	hasHelp(t, x, "gpu_devices", "the task needs 2 free GPU device(s) on one worker: worker gpu-1 has them once eval/a and eval/b end, expected by 2026-01-01T00:20:00Z (from their declared durations); 1 other worker(s) that fit it are short of free devices too")
	if !est.Known || est.Wait() != 20*time.Minute || est.Worker != "gpu-1" {
		t.Errorf("estimate = %+v, want tune on gpu-1 in 20 minutes, when the help says its devices are free", est)
	}
	// The claim holds: once eval's tasks end, the next cycle starts tune
	// on gpu-1's devices 0 and 1.
	for _, task := range []string{"a", "b"} {
		if err := e.Apply(engine.FinishTask{Job: "eval", Task: task, Outcome: model.Succeeded, At: sceneAt(20 * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	d := e.Cycle(sceneAt(20 * time.Minute))
	if len(d.Starts) != 1 || d.Starts[0].Job != "tune" || d.Starts[0].Worker != "gpu-1" || model.DeviceList(d.Starts[0].GPUs) != "0,1" {
		t.Errorf("starts = %+v, want tune on gpu-1 with devices 0,1", d.Starts)
	}
}

// Once eval/a has ended, gpu-1 has one free device and one held: eval/b's
// end alone frees enough.
func TestExplainDevicesFreeAndHeldOnOneWorker(t *testing.T) {
	x, _, _ := explainSteps(t, "gpu-devices", "tune", []step{{at: 5 * time.Minute, finish: []string{"eval/a"}}})
	g := x.Pending[0].Placement.GPUDevices
	want := engine.WorkerDevices{Worker: "gpu-1", Devices: 2, Free: []int{0}, FreeBy: sceneAt(20 * time.Minute), Frees: []string{"eval/b"},
		Held: []engine.DeviceHolder{{Device: 1, Job: "eval", Task: "b", ExpectedEnd: sceneAt(20 * time.Minute)}}}
	if g == nil || len(g.Workers) != 2 {
		t.Fatalf("gpu devices = %+v, want gpu-1 and gpu-0", g)
	}
	if !reflect.DeepEqual(g.Workers[0], want) {
		t.Errorf("gpu-1:\n got %+v\nwant %+v", g.Workers[0], want)
	}
	hasHelp(t, x, "gpu_devices", "worker gpu-1 has them once eval/b end, expected by 2026-01-01T00:20:00Z")
}

// The section lists the first MaxDeviceWorkers workers short of devices
// and counts the others; a draining worker, a worker whose GPUs are free
// but whose slot is taken, and a job that asks for no GPU are not in it.
func TestExplainDevicesIsBoundedAndOnlyForWantOfDevices(t *testing.T) {
	s, err := scenario.Parse([]byte(`
queues: [{name: default}]
workers:
  - {name: gpu, count: 5, slots: 4, resources: {cpu: 16, memory: 64Gi, gpus: 2}}
  - {name: spare, resources: {cpu: 16, memory: 64Gi, gpus: 4}}
jobs:
  - id: hold
    tasks: [{name: t, count: 5, running: 5, resources: {cpu: 1, gpus: 2}}]
  - id: cpu
    tasks: [{name: c, running: 1, duration: 1h, resources: {cpu: 16}}]
  - id: wide
    tasks: [{name: w, resources: {cpu: 1, gpus: 2}}]
  - id: big
    tasks: [{name: b, resources: {cpu: 16}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Engine()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Apply(engine.SetWorkerState{Name: "gpu-4", State: model.WorkerDraining, At: s.Start}); err != nil {
		t.Fatal(err)
	}
	e.Cycle(s.Start)
	x, _ := e.Explain("wide")
	g := x.Pending[0].Placement.GPUDevices
	if g == nil {
		t.Fatalf("placement = %+v, want a gpu devices section", x.Pending[0].Placement)
	}
	var got []string
	for _, w := range g.Workers {
		held := ""
		for _, h := range w.Held {
			held += fmt.Sprintf(" %d:%s/%s", h.Device, h.Job, h.Task)
			if !h.ExpectedEnd.IsZero() {
				held += "@" + h.ExpectedEnd.String()
			}
		}
		got = append(got, fmt.Sprintf("%s%s; free %v by %v; frees %v", w.Worker, held, w.Free, w.FreeBy.IsZero(), w.Frees))
	}
	// No holder declares a duration: unknown ends (FreeBy zero), then
	// registration order.
	want := []string{
		"gpu-0 0:hold/t-0 1:hold/t-0; free [] by true; frees [hold/t-0]",
		"gpu-1 0:hold/t-1 1:hold/t-1; free [] by true; frees [hold/t-1]",
		"gpu-2 0:hold/t-2 1:hold/t-2; free [] by true; frees [hold/t-2]",
	}
	if !reflect.DeepEqual(got, want) || g.More != 1 || g.Need != 2 {
		t.Errorf("workers %q, %d more, need %d\nwant %q, 1 more (gpu-3; gpu-4 drains, spare's slot is taken), need 2", got, g.More, g.Need, want)
	}
	hasHelp(t, x, "gpu_devices", "worker gpu-0 has them once hold/t-0 end (one of them declares no duration: the estimate says when the task should start); 3 other worker(s)")
	if y, _ := e.Explain("big"); y.Pending[0].Placement.GPUDevices != nil || len(helpOf(y, "gpu_devices")) != 0 {
		t.Errorf("a job that asks for no GPU has a devices section: %+v", y.Pending[0].Placement.GPUDevices)
	}
}

// Explaining a job that waits for devices reads only: the cycles after it
// decide what they decide without it.
func TestExplainDevicesChangesNoDecision(t *testing.T) {
	s, err := scenario.Load("testdata/explain/gpu-devices.yaml")
	if err != nil {
		t.Fatal(err)
	}
	next := func(explain bool) string {
		e, now := stepScenario(t, s, nil, true)
		if explain {
			if _, ok := e.Explain("tune"); !ok {
				t.Fatal("tune not found")
			}
		}
		out := ""
		for _, d := range []*engine.Decisions{e.Cycle(now), e.Cycle(now.Add(30 * time.Minute))} {
			out += fmt.Sprintf("%+v %+v %+v\n", d.Starts, d.Deferred, d.Pending)
		}
		return out
	}
	if with, without := next(true), next(false); with != without {
		t.Errorf("the cycles after Explain differ:\n%s\nwithout it:\n%s", with, without)
	}
}

// The workers listed are those whose devices free soonest, wherever they
// were registered: here the last registered.
func TestExplainDevicesListsTheSoonestFreeFirst(t *testing.T) {
	s, err := scenario.Parse([]byte(`
queues: [{name: default}]
workers:
  - {name: gpu, count: 5, slots: 4, resources: {cpu: 16, memory: 64Gi, gpus: 2}}
jobs:
  - id: hold
    tasks:
      - {name: h0, running: 1, duration: 50m, resources: {cpu: 1, gpus: 2}}
      - {name: h1, running: 1, duration: 40m, resources: {cpu: 1, gpus: 2}}
      - {name: h2, running: 1, duration: 30m, resources: {cpu: 1, gpus: 2}}
      - {name: h3, running: 1, duration: 20m, resources: {cpu: 1, gpus: 2}}
      - {name: h4, running: 1, duration: 10m, resources: {cpu: 1, gpus: 2}}
  - id: wide
    tasks: [{name: w, resources: {cpu: 1, gpus: 1}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Engine()
	if err != nil {
		t.Fatal(err)
	}
	e.Cycle(s.Start)
	x, _ := e.Explain("wide")
	g := x.Pending[0].Placement.GPUDevices
	if g == nil {
		t.Fatalf("placement = %+v, want a gpu devices section", x.Pending[0].Placement)
	}
	var got []string
	for _, w := range g.Workers {
		got = append(got, fmt.Sprintf("%v %s", w.Frees, w.FreeBy.Sub(s.Start)))
	}
	want := []string{"[hold/h4] 10m0s", "[hold/h3] 20m0s", "[hold/h2] 30m0s"}
	if !reflect.DeepEqual(got, want) || g.More != 2 || g.Need != 1 {
		t.Errorf("workers %q, %d more, need %d; want %q, 2 more, need 1", got, g.More, g.Need, want)
	}
}
