package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newFIFO returns an engine with one fifo queue and n one-slot CPU workers.
func newFIFO(t testing.TB, n int) *Engine {
	t.Helper()
	e, err := New(Config{Queues: []QueueConfig{{Name: "default", Policy: policy.Config{Kind: "fifo"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		mustApply(t, e, AddWorker{Worker: model.Worker{Name: fmt.Sprintf("w%03d", i), Capacity: model.Resources{MilliCPU: 4000, MemoryMB: 8192}}})
	}
	return e
}

func mustApply(t testing.TB, e *Engine, ev Event) {
	t.Helper()
	if err := e.Apply(ev); err != nil {
		t.Fatalf("apply %T: %v", ev, err)
	}
}

// jobOf builds a job of n independent tasks named t0..t(n-1).
func jobOf(id string, n int) model.Job {
	j := model.Job{ID: id, Queue: "default", Submitted: t0}
	for i := 0; i < n; i++ {
		j.Tasks = append(j.Tasks, model.Task{Name: fmt.Sprintf("t%d", i), Resources: model.Resources{MilliCPU: 1000}})
	}
	return j
}

func TestFIFOStartsInSubmissionOrder(t *testing.T) {
	e := newFIFO(t, 3)
	mustApply(t, e, SubmitJob{Job: jobOf("a", 2)})
	mustApply(t, e, SubmitJob{Job: jobOf("b", 2)})
	d := e.Cycle(t0)
	var got []string
	for _, s := range d.Starts {
		got = append(got, s.Job+"/"+s.Task+"@"+s.Worker)
	}
	want := []string{"a/t0@w000", "a/t1@w001", "b/t0@w002"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("starts = %v, want %v", got, want)
	}
	if len(d.Pending) != 1 || d.Pending[0].Job != "b" || d.Pending[0].Reason.Code != model.ReasonNoFreeSlot {
		t.Fatalf("pending = %+v", d.Pending)
	}
}
