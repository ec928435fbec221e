package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

func TestPlacementFiltersAndPendingReasons(t *testing.T) {
	gpu := func(n, mb int64) model.Resources {
		return model.Resources{MilliCPU: 1000, GPUs: n, GPUMemoryMB: mb}
	}
	cases := []struct {
		name    string
		workers []*workerB
		// busy tasks of 1 CPU are placed first-fit before the task under
		// test is submitted.
		busy       int
		req        model.Resources
		sel        map[string]string
		wantWorker string   // where the task starts, or "" when it waits
		wantCode   string   // the pending reason when it waits
		wantIn     []string // fragments of the pending message
	}{
		{name: "gpu count", workers: []*workerB{newWorker("w1").gpus(1, 24576)}, req: gpu(2, 16384),
			wantCode: model.ReasonUnschedulable, wantIn: []string{"1 lack gpus", "no worker can ever run it"}},
		{name: "memory per gpu", workers: []*workerB{newWorker("w1").gpus(8, 24576)}, req: gpu(1, 40960),
			wantCode: model.ReasonUnschedulable, wantIn: []string{"1 lack gpu memory"}},
		{name: "memory", workers: []*workerB{newWorker("w1").mem(8192)}, req: model.Resources{MemoryMB: 16384},
			wantCode: model.ReasonUnschedulable, wantIn: []string{"1 lack memory"}},
		{name: "cpu", workers: []*workerB{newWorker("w1").cpu(4000)}, req: cpus(8),
			wantCode: model.ReasonUnschedulable, wantIn: []string{"1 lack cpu"}},
		{name: "labels", workers: []*workerB{newWorker("w1").label("gpu", "a10")}, req: cpus(1), sel: map[string]string{"gpu": "h100"},
			wantCode: model.ReasonUnschedulable, wantIn: []string{"1 lack labels", "gpu=h100"}},
		{name: "each filter is counted", workers: []*workerB{newWorker("w1").label("zone", "a"), newWorker("w2").gpus(1, 24576).label("zone", "b"), newWorker("w3").gpus(1, 8192).label("zone", "a")},
			req: gpu(1, 16384), sel: map[string]string{"zone": "a"},
			wantCode: model.ReasonUnschedulable, wantIn: []string{"1 lack labels", "1 lack gpu memory", "1 lack gpus", "(3 workers:"}},
		{name: "no workers", req: cpus(1),
			wantCode: model.ReasonUnschedulable, wantIn: []string{"no workers are registered"}},
		{name: "only the larger worker fits", workers: []*workerB{newWorker("w1").cpu(4000), newWorker("w2").cpu(16000)}, req: cpus(8),
			wantWorker: "w2"},
		{name: "enough memory per gpu beats more gpus", workers: []*workerB{newWorker("w1").gpus(2, 24576), newWorker("w2").gpus(1, 81920)}, req: gpu(1, 40960),
			wantWorker: "w2"},
		{name: "selector picks the labelled worker", workers: []*workerB{newWorker("w1").label("zone", "a"), newWorker("w2").label("zone", "b")}, req: cpus(1), sel: map[string]string{"zone": "b"},
			wantWorker: "w2"},
		{name: "fitting worker busy with a free one that does not fit", workers: []*workerB{newWorker("w1").cpu(16000), newWorker("w2").cpu(4000)}, busy: 1, req: cpus(8),
			wantCode: model.ReasonNoFreeSlot, wantIn: []string{"1 workers that fit are busy", "1 lack cpu"}},
		{name: "whole pool busy", workers: []*workerB{newWorker("w1")}, busy: 1, req: cpus(1),
			wantCode: model.ReasonNoFreeSlot},
		{name: "never fits while the pool is busy", workers: []*workerB{newWorker("w1")}, busy: 1, req: gpu(1, 1024),
			wantCode: model.ReasonUnschedulable, wantIn: []string{"1 lack gpus"}},
		{name: "fitting worker draining", workers: []*workerB{newWorker("w1").cpu(16000).state(model.WorkerDraining), newWorker("w2").cpu(4000)}, req: cpus(8),
			wantCode: model.ReasonWorkersDisabled, wantIn: []string{"draining or disabled", "1 lack cpu"}},
		{name: "fitting worker disabled", workers: []*workerB{newWorker("w1").state(model.WorkerDisabled)}, req: cpus(1),
			wantCode: model.ReasonWorkersDisabled},
		{name: "fitting worker draining while the pool is busy", workers: []*workerB{newWorker("w1").cpu(16000).state(model.WorkerDraining), newWorker("w2").cpu(4000)}, busy: 1, req: cpus(8),
			wantCode: model.ReasonWorkersDisabled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := engineWith(t, Config{})
			for _, w := range tc.workers {
				mustApply(t, e, w.add())
			}
			if tc.busy > 0 {
				b := newJob("busy")
				for i := 0; i < tc.busy; i++ {
					b.task(string(rune('a' + i)))
				}
				mustApply(t, e, b.submit())
				if d := e.Cycle(t0); len(d.Starts) != tc.busy {
					t.Fatalf("busy tasks started: %v", startsOf(d))
				}
			}
			j := newJob("j").task("x").res(tc.req)
			for k, v := range tc.sel {
				j.sel(k, v)
			}
			mustApply(t, e, j.submit())
			d := e.Cycle(t0)
			if tc.wantWorker != "" {
				if got := startsOf(d); !same(got, []string{"j/x@" + tc.wantWorker}) {
					t.Fatalf("started %v, want j/x@%s", got, tc.wantWorker)
				}
				return
			}
			if len(d.Starts) != 0 {
				t.Fatalf("started %v, want none", startsOf(d))
			}
			p := onlyPending(t, d, "j")
			if p.Tasks != 1 || p.Reason.Code != tc.wantCode {
				t.Fatalf("pending = %+v, want 1 task with %s", p, tc.wantCode)
			}
			for _, frag := range tc.wantIn {
				if !strings.Contains(p.Reason.Message, frag) {
					t.Errorf("message %q lacks %q", p.Reason.Message, frag)
				}
			}
			if r, ok := e.TaskReason("j", "x"); !ok || r != p.Reason {
				t.Errorf("TaskReason = %+v %v, want the pending reason", r, ok)
			}
		})
	}
}

func TestDrainingAndDisabledWorkersTakeNothingNew(t *testing.T) {
	for _, state := range []model.WorkerState{model.WorkerDraining, model.WorkerDisabled} {
		t.Run(string(state), func(t *testing.T) {
			e := engineWith(t, Config{}, newWorker("w1").add(), newJob("j").task("a").task("b").submit())
			if got := startsOf(e.Cycle(t0)); !same(got, []string{"j/a@w1"}) {
				t.Fatalf("started %v", got)
			}
			mustApply(t, e, SetWorkerState{Name: "w1", State: state, At: t0})
			if s, w, _ := e.TaskState("j", "a"); s != model.TaskRunning || w != "w1" {
				t.Fatalf("running task after %s: %s on %q, want it to keep running", state, s, w)
			}
			mustApply(t, e, finishOK("j", "a"))
			d := e.Cycle(t0)
			if len(d.Starts) != 0 {
				t.Fatalf("a %s worker took %v", state, startsOf(d))
			}
			if p := onlyPending(t, d, "j"); p.Reason.Code != model.ReasonWorkersDisabled {
				t.Fatalf("pending = %+v, want %s", p, model.ReasonWorkersDisabled)
			}
			mustApply(t, e, SetWorkerState{Name: "w1", State: model.WorkerReady, At: t0})
			if got := startsOf(e.Cycle(t0)); !same(got, []string{"j/b@w1"}) {
				t.Fatalf("after ready again, started %v", got)
			}
		})
	}
	t.Run("registered disabled", func(t *testing.T) {
		e := engineWith(t, Config{}, newWorker("w1").state(model.WorkerDisabled).add(), newWorker("w2").add(),
			newJob("j").task("a").task("b").submit())
		if got := startsOf(e.Cycle(t0)); !same(got, []string{"j/a@w2"}) {
			t.Fatalf("started %v, want only w2 used", got)
		}
	})
	t.Run("unknown worker", func(t *testing.T) {
		e := engineWith(t, Config{})
		if err := e.Apply(SetWorkerState{Name: "nope", State: model.WorkerDraining}); !errors.Is(err, ErrUnknownWorker) {
			t.Fatalf("draining an unknown worker: err = %v", err)
		}
	})
	t.Run("unknown state", func(t *testing.T) {
		e := engineWith(t, Config{}, newWorker("w1").add(), newJob("j").task("a").submit())
		if err := e.Apply(SetWorkerState{Name: "w1", State: "offline"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "state") {
			t.Fatalf("err = %v, want ErrInvalid naming the state", err)
		}
		if err := e.Apply(newWorker("w2").state("asleep").add()); !errors.Is(err, ErrInvalid) {
			t.Fatalf("registering a worker in an unknown state: err = %v", err)
		}
		if got := startsOf(e.Cycle(t0)); !same(got, []string{"j/a@w1"}) {
			t.Fatalf("after the rejected events, started %v, want j/a on w1 only", got)
		}
	})
}

func TestQueuesSharingAPoolAreServedByQueuePriority(t *testing.T) {
	cases := []struct {
		name       string
		queues     []QueueConfig
		wantFirst  string // queue whose job takes both workers
		wantWaiter string
	}{
		{name: "higher priority first", queues: []QueueConfig{{Name: "batch", Priority: 0}, {Name: "urgent", Priority: 10}},
			wantFirst: "urgent", wantWaiter: "batch"},
		{name: "declaration order does not matter", queues: []QueueConfig{{Name: "urgent", Priority: 10}, {Name: "batch", Priority: 0}},
			wantFirst: "urgent", wantWaiter: "batch"},
		{name: "equal priority goes by name", queues: []QueueConfig{{Name: "b"}, {Name: "a"}},
			wantFirst: "a", wantWaiter: "b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := engineWith(t, Config{Queues: tc.queues}, newWorker("w1").add(), newWorker("w2").add(),
				newJob("in-"+tc.wantWaiter).queue(tc.wantWaiter).task("a").task("b").submit(),
				newJob("in-"+tc.wantFirst).queue(tc.wantFirst).task("a").task("b").submit())
			d := e.Cycle(t0)
			want := []string{"in-" + tc.wantFirst + "/a@w1", "in-" + tc.wantFirst + "/b@w2"}
			if got := startsOf(d); !same(got, want) {
				t.Fatalf("started %v, want %v", got, want)
			}
			if p := onlyPending(t, d, "in-"+tc.wantWaiter); p.Tasks != 2 || p.Reason.Code != model.ReasonNoFreeSlot {
				t.Fatalf("pending = %+v", p)
			}
		})
	}
}

func TestQueuePoolRestrictsWorkers(t *testing.T) {
	cfg := Config{Queues: []QueueConfig{
		{Name: "gpu", Priority: 1, Pool: model.Selector{"kind": "gpu"}},
		{Name: "default"},
	}}
	e := engineWith(t, cfg,
		newWorker("c1").label("kind", "cpu").add(), newWorker("c2").label("kind", "cpu").add(),
		newWorker("g1").label("kind", "gpu").add(),
		newJob("train").queue("gpu").task("a").task("b").submit(),
		newJob("etl").task("a").submit())
	d := e.Cycle(t0)
	if got := startsOf(d); !same(got, []string{"train/a@g1", "etl/a@c1"}) {
		t.Fatalf("started %v, want train on g1 only and etl on c1", got)
	}
	if p := onlyPending(t, d, "train"); p.Reason.Code != model.ReasonNoFreeSlot {
		t.Fatalf("train pending = %+v, want no_free_slot although c2 is idle", p)
	}
	var sums []string
	for _, g := range d.Groups {
		sums = append(sums, g.Queue+"/"+g.Group)
	}
	if !same(sums, []string{"gpu/" + policy.FIFOGroup, "default/" + policy.FIFOGroup}) {
		t.Fatalf("group summaries %v, want queues in priority order", sums)
	}
	err := e.Apply(newJob("bad").queue("gpu").sel("kind", "cpu").task("a").submit())
	if err == nil || !strings.Contains(err.Error(), "selector") {
		t.Fatalf("a selector contradicting the pool: err = %v", err)
	}
}

func TestJobMaxSlots(t *testing.T) {
	e := engineWith(t, Config{},
		newWorker("w1").add(), newWorker("w2").add(), newWorker("w3").add(), newWorker("w4").add(),
		newJob("capped").maxSlots(2).task("a").task("b").task("c").task("d").submit(),
		newJob("other").task("a").task("b").task("c").submit())
	d := e.Cycle(t0)
	want := []string{"capped/a@w1", "capped/b@w2", "other/a@w3", "other/b@w4"}
	if got := startsOf(d); !same(got, want) {
		t.Fatalf("started %v, want %v", got, want)
	}
	if p := onlyPending(t, d, "capped"); p.Tasks != 2 || p.Reason.Code != model.ReasonMaxSlots {
		t.Fatalf("capped pending = %+v, want 2 tasks held by max_slots", p)
	}
	if p := onlyPending(t, d, "other"); p.Reason.Code != model.ReasonNoFreeSlot {
		t.Fatalf("other pending = %+v", p)
	}
	mustApply(t, e, finishOK("capped", "a"))
	if got := startsOf(e.Cycle(t0)); !same(got, []string{"capped/c@w1"}) {
		t.Fatalf("after a capped task ended, started %v", got)
	}
}

func TestBackfillPastAJobThatCannotBePlaced(t *testing.T) {
	cases := []struct {
		name     string
		workers  []*workerB
		head     model.Resources
		wantCode string
	}{
		{name: "head never fits", workers: []*workerB{newWorker("c1"), newWorker("c2")},
			head: model.Resources{MilliCPU: 1000, GPUs: 1, GPUMemoryMB: 1024}, wantCode: model.ReasonUnschedulable},
		{name: "head fits only a busy worker", workers: []*workerB{newWorker("big").cpu(16000), newWorker("c1"), newWorker("c2")},
			head: cpus(8), wantCode: model.ReasonNoFreeSlot},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := engineWith(t, Config{})
			for _, w := range tc.workers {
				mustApply(t, e, w.add())
			}
			occupied := len(tc.workers) - 2
			if occupied > 0 { // keep the big worker busy
				mustApply(t, e, newJob("busy").task("a").res(cpus(8)).submit())
				e.Cycle(t0)
			}
			mustApply(t, e, newJob("head").prio(5).task("x").res(tc.head).task("y").submit())
			mustApply(t, e, newJob("later").task("a").task("b").task("c").submit())
			d := e.Cycle(t0)
			if got := startsOf(d); !same(got, []string{"later/a@c1", "later/b@c2"}) {
				t.Fatalf("started %v, want the later job to use both free workers", got)
			}
			if p := onlyPending(t, d, "head"); p.Tasks != 2 || p.Reason.Code != tc.wantCode {
				t.Fatalf("head pending = %+v, want 2 tasks with %s", p, tc.wantCode)
			}
		})
	}
}

func TestMultiSlotWorkersHoldTasksByResources(t *testing.T) {
	cases := []struct {
		name    string
		worker  *workerB
		tasks   []model.Resources // one job each, in order
		started int
	}{
		{name: "two 1-CPU tasks share a 2-slot 2-CPU worker", worker: newWorker("w").slots(2).cpu(2000),
			tasks: []model.Resources{cpus(1), cpus(1)}, started: 2},
		{name: "a 2-CPU task does not fit beside a 1-CPU task", worker: newWorker("w").slots(2).cpu(2000),
			tasks: []model.Resources{cpus(1), cpus(2)}, started: 1},
		{name: "slots cap tasks that resources would allow", worker: newWorker("w").slots(2).cpu(8000),
			tasks: []model.Resources{cpus(1), cpus(1), cpus(1)}, started: 2},
		{name: "resources cap tasks that slots would allow", worker: newWorker("w").slots(3).cpu(2000),
			tasks: []model.Resources{cpus(1), cpus(1), cpus(1)}, started: 2},
		{name: "memory is a dimension too", worker: newWorker("w").slots(2).mem(8192),
			tasks: []model.Resources{{MemoryMB: 6000}, {MemoryMB: 6000}}, started: 1},
		{name: "gpus are counted, memory per gpu is not summed", worker: newWorker("w").slots(3).gpus(2, 24576),
			tasks: []model.Resources{{GPUs: 1, GPUMemoryMB: 20000}, {GPUs: 1, GPUMemoryMB: 20000}, {GPUs: 1, GPUMemoryMB: 20000}}, started: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := engineWith(t, Config{}, tc.worker.add())
			for i, r := range tc.tasks {
				mustApply(t, e, newJob(string(rune('a'+i))).task("t").res(r).submit())
			}
			d := e.Cycle(t0)
			if len(d.Starts) != tc.started {
				t.Fatalf("started %v, want %d", startsOf(d), tc.started)
			}
			for i := tc.started; i < len(tc.tasks); i++ {
				if p := onlyPending(t, d, string(rune('a'+i))); p.Reason.Code != model.ReasonNoFreeSlot {
					t.Errorf("pending = %+v, want no_free_slot", p)
				}
			}
			// Freeing the first task makes room for the first waiter.
			if tc.started < len(tc.tasks) {
				mustApply(t, e, finishOK("a", "t"))
				want := string(rune('a'+tc.started)) + "/t@w"
				if got := startsOf(e.Cycle(t0)); !same(got, []string{want}) {
					t.Fatalf("after a finished, started %v, want %s", got, want)
				}
			}
		})
	}
}

func TestSelectionStrategies(t *testing.T) {
	// Registration order puts the largest worker first.
	fleet := []*workerB{
		newWorker("big").cpu(16000).mem(65536),
		newWorker("gpu").cpu(8000).mem(32768).gpus(1, 24576),
		newWorker("small-1").cpu(2000).mem(4096),
		newWorker("mid").cpu(4000).mem(8192),
		newWorker("small-2").cpu(2000).mem(4096),
	}
	cases := []struct {
		strategy string
		req      model.Resources
		want     string
	}{
		{"first-fit", cpus(1), "big"},
		{"", cpus(1), "big"},
		{"min-satisfying", cpus(1), "small-1"},
		{"min-satisfying", model.Resources{MilliCPU: 3000, MemoryMB: 6000}, "mid"},
		// GPUs weigh first: a CPU task keeps off GPU machines even when a
		// GPU machine is the smaller one.
		{"min-satisfying", model.Resources{MilliCPU: 6000}, "big"},
		{"min-satisfying", model.Resources{MilliCPU: 6000, GPUs: 1}, "gpu"},
		{"min-satisfying", model.Resources{GPUs: 1}, "gpu"},
		{"first-fit", model.Resources{MilliCPU: 3000, MemoryMB: 6000}, "big"},
	}
	for _, tc := range cases {
		t.Run(tc.strategy+"/"+tc.req.String(), func(t *testing.T) {
			e := engineWith(t, Config{Placement: PlacementConfig{Strategy: tc.strategy}})
			for _, w := range fleet {
				mustApply(t, e, w.add())
			}
			mustApply(t, e, newJob("j").task("x").res(tc.req).submit())
			if got := startsOf(e.Cycle(t0)); !same(got, []string{"j/x@" + tc.want}) {
				t.Fatalf("started %v, want j/x@%s", got, tc.want)
			}
		})
	}
	t.Run("min-satisfying fills the small workers in order", func(t *testing.T) {
		e := engineWith(t, Config{Placement: PlacementConfig{Strategy: "min-satisfying"}})
		for _, w := range fleet {
			mustApply(t, e, w.add())
		}
		mustApply(t, e, newJob("j").task("a").task("b").task("c").submit())
		if got := startsOf(e.Cycle(t0)); !same(got, []string{"j/a@small-1", "j/b@small-2", "j/c@mid"}) {
			t.Fatalf("started %v", got)
		}
	})
}
