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

// ---- builders -------------------------------------------------------------

// workerB builds a worker: by default one slot, 4 CPU and 8 GiB, ready.
type workerB struct{ w model.Worker }

func newWorker(name string) *workerB {
	return &workerB{model.Worker{Name: name, Capacity: model.Resources{MilliCPU: 4000, MemoryMB: 8192}, Slots: 1}}
}

func (b *workerB) cpu(milli int64) *workerB { b.w.Capacity.MilliCPU = milli; return b }
func (b *workerB) mem(mb int64) *workerB    { b.w.Capacity.MemoryMB = mb; return b }
func (b *workerB) slots(n int) *workerB     { b.w.Slots = n; return b }
func (b *workerB) gpus(n, mb int64) *workerB {
	b.w.Capacity.GPUs, b.w.Capacity.GPUMemoryMB = n, mb
	return b
}
func (b *workerB) state(s model.WorkerState) *workerB { b.w.State = s; return b }
func (b *workerB) label(k, v string) *workerB {
	if b.w.Labels == nil {
		b.w.Labels = model.Labels{}
	}
	b.w.Labels[k] = v
	return b
}
func (b *workerB) add() AddWorker { return AddWorker{Worker: b.w, At: t0} }

// jobB builds a job in queue "default"; task adds a 1-CPU task and the
// modifiers after it change the last task added.
type jobB struct{ j model.Job }

func newJob(id string) *jobB { return &jobB{model.Job{ID: id, Queue: "default", Submitted: t0}} }

func (b *jobB) queue(q string) *jobB { b.j.Queue = q; return b }
func (b *jobB) prio(p int) *jobB     { b.j.Priority = p; return b }
func (b *jobB) maxSlots(n int) *jobB { b.j.MaxSlots = n; return b }
func (b *jobB) sel(k, v string) *jobB {
	if b.j.Selector == nil {
		b.j.Selector = model.Selector{}
	}
	b.j.Selector[k] = v
	return b
}
func (b *jobB) task(name string, needs ...string) *jobB {
	b.j.Tasks = append(b.j.Tasks, model.Task{Name: name, Needs: needs, Resources: model.Resources{MilliCPU: 1000}})
	return b
}
func (b *jobB) last() *model.Task           { return &b.j.Tasks[len(b.j.Tasks)-1] }
func (b *jobB) res(r model.Resources) *jobB { b.last().Resources = r; return b }
func (b *jobB) attempts(n int) *jobB        { b.last().MaxAttempts = n; return b }
func (b *jobB) submit() SubmitJob           { return SubmitJob{Job: b.j} }

// cpus is a resource request of n whole cores.
func cpus(n int64) model.Resources { return model.Resources{MilliCPU: n * 1000} }

// engineWith builds an engine from cfg (one fifo queue "default" when cfg has
// no queues) and applies evs.
func engineWith(t testing.TB, cfg Config, evs ...Event) *Engine {
	t.Helper()
	if len(cfg.Queues) == 0 {
		cfg.Queues = []QueueConfig{{Name: "default", Policy: policy.Config{Kind: "fifo"}}}
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		mustApply(t, e, ev)
	}
	return e
}

// ---- reading decisions ----------------------------------------------------

// startsOf renders starts as "job/task@worker".
func startsOf(d *Decisions) []string {
	out := []string{}
	for _, s := range d.Starts {
		out = append(out, s.Job+"/"+s.Task+"@"+s.Worker)
	}
	return out
}

// endedOf renders ended tasks as "job/task:state:code".
func endedOf(d *Decisions) []string {
	out := []string{}
	for _, x := range d.Ended {
		out = append(out, x.Job+"/"+x.Task+":"+string(x.State)+":"+x.Reason.Code)
	}
	return out
}

// pendingOf returns the pending entries of one job.
func pendingOf(d *Decisions, jobID string) []Pending {
	var out []Pending
	for _, p := range d.Pending {
		if p.Job == jobID {
			out = append(out, p)
		}
	}
	return out
}

// onlyPending returns the single pending entry of a job, failing otherwise.
func onlyPending(t testing.TB, d *Decisions, jobID string) Pending {
	t.Helper()
	ps := pendingOf(d, jobID)
	if len(ps) != 1 {
		t.Fatalf("pending entries of %s = %+v, want exactly one", jobID, ps)
	}
	return ps[0]
}

func jobsDoneOf(d *Decisions) []string {
	out := []string{}
	for _, x := range d.JobsDone {
		out = append(out, x.Job+":"+string(x.State))
	}
	return out
}

func stateOf(t testing.TB, e *Engine, jobID, task string) model.TaskState {
	t.Helper()
	s, _, ok := e.TaskState(jobID, task)
	if !ok {
		t.Fatalf("task %s/%s unknown", jobID, task)
	}
	return s
}

func finishOK(jobID, task string) FinishTask {
	return FinishTask{Job: jobID, Task: task, Outcome: model.Succeeded, At: t0}
}

func finishFail(jobID, task string) FinishTask {
	return FinishTask{Job: jobID, Task: task, Outcome: model.Failed, At: t0, Message: "exit status 1"}
}

func same(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }
