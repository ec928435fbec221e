package control

import (
	"fmt"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
)

// A live server's explanation names the devices a waiting GPU task needs
// and the tasks the loop gave them to, through the API's body.
func TestExplainNamesTheTasksHoldingTheDevicesOfALiveWorker(t *testing.T) {
	p := newPlane(t)
	if _, err := p.c.Register(p.ctx(), gpuWorker("w1")); err != nil {
		t.Fatal(err)
	}
	p.submit(spec.Job{ID: "train", Tasks: []spec.Task{
		{Name: "shard", Count: 2, Resources: spec.Resources{CPU: 1000, GPUs: 1}, Run: "true"},
	}})
	p.leaseUntil("w1", "both shards", func(l api.Lease) bool { return len(l.Assignments) == 2 })
	p.submit(spec.Job{ID: "wide", Tasks: []spec.Task{{Name: "t", Resources: spec.Resources{CPU: 1000, GPUs: 2}, Run: "true"}}})
	x, err := p.c.Explain(p.ctx(), "wide")
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Pending) != 1 || x.Pending[0].Placement == nil || x.Pending[0].Placement.GPUDevices == nil {
		t.Fatalf("pending = %+v, want the ready task with a gpuDevices section", x.Pending)
	}
	g := x.Pending[0].Placement.GPUDevices
	got := fmt.Sprintf("need %d more %d:", g.Need, g.More)
	for _, w := range g.Workers {
		got += fmt.Sprintf(" %s (%d devices, free %v):", w.Worker, w.Devices, w.Free)
		for _, h := range w.Held {
			got += fmt.Sprintf(" %d=%s/%s", h.Device, h.Job, h.Task)
		}
		got += fmt.Sprintf(" frees %v", w.Frees)
	}
	if want := "need 2 more 0: w1 (2 devices, free []): 0=train/shard-0 1=train/shard-1 frees [train/shard-0 train/shard-1]"; got != want {
		t.Errorf("gpu devices: %s\nwant %s", got, want)
	}
}
