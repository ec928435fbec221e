package engine

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/classload"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/model"
	"pgregory.net/rapid"
)

// mixSim drives an engine with random sequences that mix the features that
// meet in a cycle: gangs (some of GPU tasks), GPU devices, hold and
// release, requeue and cancel of one task or a job, resource changes,
// lost and new workers, and policies that stop tasks (fair-share
// preemption, classload rebalance under usage: dominant). It logs every
// event and cycle so that a second engine can replay them.
type mixSim struct {
	cfg     Config
	e       *Engine
	now     time.Time
	log     []any // Event or time.Time (a cycle)
	results []string
	jobs    int
	workers int
}

// mixConfig draws a queue's policy (some that stop tasks, some measuring
// dominant usage), and at times a second queue and an endpoint.
func mixConfig(t *rapid.T) Config {
	cfg := Config{Seed: rapid.Uint64().Draw(t, "seed")}
	pol := policy.Config{Kind: "fifo"}
	switch rapid.SampledFrom([]string{"fifo", "fairshare", "fairshare-dominant", "priority", "classload-dominant"}).Draw(t, "policy") {
	case "fairshare":
		pol = policy.Config{Kind: "fairshare", Settings: &fairshare.Config{Preemption: &fairshare.Preemption{}}}
	case "fairshare-dominant":
		pol = policy.Config{Kind: "fairshare", Usage: string(policy.UsageDominant), Settings: &fairshare.Config{Preemption: &fairshare.Preemption{}}}
	case "priority":
		pol = policy.Config{Kind: "priority"}
	case "classload-dominant":
		var c classload.Config
		for _, name := range []string{"a", "b"} {
			c.Classes = append(c.Classes, classload.LoadClass{Name: name, Percent: 50})
			c.RequestorMap = append(c.RequestorMap, classload.RequestorRule{Class: name, Pattern: "^" + name + "-"})
		}
		c.RebalanceThreshold, c.RebalanceMinimumDuration = 20, time.Second
		pol = policy.Config{Kind: "classload", Usage: string(policy.UsageDominant), Settings: &c}
	}
	cfg.Queues = []QueueConfig{{Name: "default", Policy: pol}}
	if rapid.Bool().Draw(t, "endpoint") {
		// Jobs of endpoint det are admitted two loads of 5 at a time.
		cfg.Admission = admit.Config{Settings: admit.Defaults(), Endpoints: []model.Endpoint{instanceEP("det", 2, 5)}}
	}
	if rapid.Bool().Draw(t, "twoQueues") {
		// A second queue over the same workers takes free slots first.
		cfg.Queues = append(cfg.Queues, QueueConfig{Name: "hi", Priority: 1, Policy: policy.Config{Kind: "fifo"}})
	}
	return cfg
}

func (s *mixSim) apply(ev Event) {
	s.log = append(s.log, ev)
	err := s.e.Apply(ev)
	s.results = append(s.results, fmt.Sprint(err))
}

func (s *mixSim) addWorker(t *rapid.T) {
	slots := rapid.IntRange(1, 3).Draw(t, "slots")
	gpus := rapid.SampledFrom([]int64{0, 0, 2, 4}).Draw(t, "gpus")
	w := model.Worker{Name: fmt.Sprintf("w%d", s.workers), Slots: slots,
		Capacity: model.Resources{MilliCPU: int64(slots) * 2000, MemoryMB: 8192, GPUs: gpus}}
	s.workers++
	var ds []model.GPUDevice
	if gpus > 0 && rapid.Bool().Draw(t, "deviceList") {
		for i := range gpus {
			ds = append(ds, model.GPUDevice{Index: int(10 + 3*i)})
		}
	}
	s.apply(AddWorker{Worker: w, GPUDevices: ds, At: s.now})
}

func (s *mixSim) submit(t *rapid.T) {
	class := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "class")
	queue := "default"
	if len(s.cfg.Queues) > 1 && rapid.IntRange(0, 3).Draw(t, "hiQueue") == 0 {
		queue = "hi"
	}
	j := model.Job{ID: fmt.Sprintf("j%d", s.jobs), Queue: queue, Submitted: s.now, Share: class, Requestor: class + "-user",
		Priority: rapid.IntRange(1, 3).Draw(t, "priority")}
	if s.jobs > 0 && rapid.IntRange(0, 3).Draw(t, "dependsOn") == 0 {
		j.DependsOn = []model.JobDependency{{Job: fmt.Sprintf("j%d", rapid.IntRange(0, s.jobs-1).Draw(t, "parent")),
			Type: rapid.SampledFrom([]model.DependencyType{model.After, model.AfterOK, model.AfterNotOK, model.AfterAny}).Draw(t, "depType")}}
	}
	if len(s.cfg.Admission.Endpoints) > 0 && rapid.Bool().Draw(t, "endpointJob") {
		j.Endpoint, j.Load = "det", 5
	}
	s.jobs++
	gpus := rapid.SampledFrom([]int64{0, 0, 1, 2}).Draw(t, "taskGPUs")
	d := time.Duration(rapid.IntRange(1, 20).Draw(t, "minutes")) * time.Minute
	n := rapid.IntRange(1, 4).Draw(t, "tasks")
	attempts := rapid.IntRange(1, 2).Draw(t, "maxAttempts")
	gang := rapid.IntRange(0, 2).Draw(t, "gang") == 0
	least := 0
	if gang {
		least = rapid.IntRange(1, n).Draw(t, "minAvailable")
	}
	for k := range n {
		ts := model.Task{Name: fmt.Sprintf("t%d", k), Duration: d, MaxAttempts: attempts,
			Resources: model.Resources{MilliCPU: 1000, GPUs: gpus}}
		if gang {
			ts.Gang, ts.GangMin = "job", least
		}
		j.Tasks = append(j.Tasks, ts)
	}
	s.apply(SubmitJob{Job: j})
}

// pick returns a random task of a random live job, or nil.
func (s *mixSim) pick(t *rapid.T, keep func(*task) bool) *task {
	var out []*task
	for _, j := range s.e.active {
		if j.done {
			continue
		}
		for _, task := range j.tasks {
			if keep(task) {
				out = append(out, task)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out[rapid.IntRange(0, len(out)-1).Draw(t, "task")]
}

func (s *mixSim) finish(t *rapid.T) {
	task := s.pick(t, func(x *task) bool { return x.state == model.TaskRunning && !x.member() })
	if task == nil {
		return
	}
	oc := rapid.SampledFrom([]model.Outcome{model.Succeeded, model.Succeeded, model.Failed, model.Requeued}).Draw(t, "outcome")
	s.apply(FinishTask{Job: task.job.id, Task: task.spec.Name, Outcome: oc, At: s.now})
}

func (s *mixSim) requeueTask(t *rapid.T) {
	task := s.pick(t, func(x *task) bool {
		return x.state == model.TaskRunning || x.state == model.TaskFailed || x.state == model.TaskCancelled
	})
	if task == nil {
		return
	}
	s.apply(RequeueTasks{Job: task.job.id, Tasks: []string{task.spec.Name}, At: s.now})
}

func (s *mixSim) requeueJob(t *rapid.T) {
	if task := s.pick(t, func(*task) bool { return true }); task != nil {
		s.apply(RequeueTasks{Job: task.job.id, At: s.now})
	}
}

func (s *mixSim) cancelTask(t *rapid.T) {
	if task := s.pick(t, func(x *task) bool { return !x.state.Terminal() }); task != nil {
		s.apply(CancelTask{Job: task.job.id, Task: task.spec.Name, At: s.now})
	}
}

func (s *mixSim) hold(t *rapid.T) {
	task := s.pick(t, func(*task) bool { return true })
	if task == nil {
		return
	}
	if task.job.held != "" {
		s.apply(ReleaseJob{Job: task.job.id})
	} else {
		s.apply(HoldJob{Job: task.job.id, By: "mix"})
	}
}

func (s *mixSim) resize(t *rapid.T) {
	task := s.pick(t, func(*task) bool { return true })
	if task == nil {
		return
	}
	rs := make([]model.Resources, len(task.job.tasks))
	gpus := rapid.SampledFrom([]int64{0, 1, 2}).Draw(t, "newGPUs")
	for i := range rs {
		rs[i] = model.Resources{MilliCPU: 1000, GPUs: gpus}
	}
	s.apply(SetJobResources{Job: task.job.id, Resources: rs})
}

func (s *mixSim) setPolicy(t *rapid.T) {
	s.apply(SetPolicy{Queue: "default", Policy: mixConfig(t).Queues[0].Policy, At: s.now})
}

func (s *mixSim) setWorkerState(t *rapid.T) {
	ws := s.e.fleet.Workers()
	w := ws[rapid.IntRange(0, len(ws)-1).Draw(t, "worker")]
	if w.Gone() {
		return
	}
	st := rapid.SampledFrom([]model.WorkerState{model.WorkerReady, model.WorkerReady, model.WorkerDraining, model.WorkerDisabled}).Draw(t, "state")
	s.apply(SetWorkerState{Name: w.Spec.Name, State: st, At: s.now})
}

func (s *mixSim) removeWorker(t *rapid.T) {
	ws := s.e.fleet.Workers()
	var names []string
	for _, w := range ws {
		if !w.Gone() {
			names = append(names, w.Spec.Name)
		}
	}
	if len(names) <= 1 {
		return
	}
	s.apply(RemoveWorker{Name: names[rapid.IntRange(0, len(names)-1).Draw(t, "worker")], At: s.now})
}

func (s *mixSim) cycle(t *rapid.T) {
	s.now = s.now.Add(time.Duration(rapid.IntRange(0, 90).Draw(t, "seconds")) * time.Second)
	s.log = append(s.log, s.now)
	before := map[*gang]bool{}
	held := map[string]bool{}
	for _, j := range s.e.active {
		held[j.id] = j.held != ""
		for _, task := range j.tasks {
			if task.gang != nil {
				before[task.gang] = task.gang.launched
			}
		}
	}
	d := s.e.Cycle(s.now)
	s.results = append(s.results, fmt.Sprint(*d))
	started := map[*gang]int{}
	for _, st := range d.Starts {
		if held[st.Job] {
			t.Fatalf("held job %s started %s", st.Job, st.Task)
		}
		if task, err := s.e.lookup(st.Job, st.Task); err == nil && task.gang != nil {
			started[task.gang]++
		}
	}
	for gg, launched := range before {
		if done := gg.count(model.TaskSucceeded); !launched && started[gg] > 0 && started[gg]+done < gg.min {
			t.Fatalf("%s of job %s started %d tasks with %d done, below its minimum %d", gg.label(), gg.job.id, started[gg], done, gg.min)
		}
	}
	if got, want := s.e.PendingSummary(), summaryOf(d.Pending); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("PendingSummary %+v, the list counts %+v", got, want)
	}
	for _, w := range s.e.fleet.Workers() {
		if w.Held() {
			t.Fatalf("worker %s is still held after the cycle", w.Spec.Name)
		}
	}
}

// check holds after every event and cycle.
func (s *mixSim) check(t *rapid.T) {
	e := s.e
	if got, want := e.PendingSummary(), summaryOf(e.Pending()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("PendingSummary %+v, the list counts %+v: %+v\nafter %s", got, want, e.Pending(), s.short())
	}
	used := map[*task]int{}
	for idx, b := range e.gpus {
		if b == nil {
			continue
		}
		for p, h := range b.holder {
			if h == nil {
				continue
			}
			if h.state != model.TaskRunning || h.member() || h.worker == nil || h.worker.Idx != idx {
				t.Fatalf("device %d of worker %d is held by %s/%s, %s on %v", b.device(p), idx, h.job.id, h.spec.Name, h.state, h.worker)
			}
			used[h]++
		}
	}
	gangs := map[*gang]bool{}
	for _, j := range e.active {
		if !j.done && rapid.IntRange(0, 9).Draw(t, "explain") == 0 {
			// Explain reads every feature's state: it must not fail.
			if _, ok := e.Explain(j.id); !ok {
				t.Fatalf("no explanation of live job %s", j.id)
			}
		}
		running, left := 0, 0
		for _, task := range j.tasks {
			if task.gang != nil {
				gangs[task.gang] = true
			}
			if !task.state.Terminal() {
				left++
			}
			if task.state != model.TaskRunning {
				continue
			}
			running++
			if g := int(task.spec.Resources.GPUs); !task.member() && used[task] != g {
				t.Fatalf("%s/%s asks for %d GPUs and holds %d devices", j.id, task.spec.Name, g, used[task])
			}
		}
		if running != j.running || left != j.left {
			t.Fatalf("job %s counts %d running and %d left, its tasks %d and %d", j.id, j.running, j.left, running, left)
		}
	}
	for gg := range gangs {
		run, done := gg.count(model.TaskRunning), gg.count(model.TaskSucceeded)
		if run > 0 && run+done < gg.min {
			t.Fatalf("%s of job %s runs %d with %d done, below its minimum %d", gg.label(), gg.job.id, run, done, gg.min)
		}
		if gg.launched && run+done < gg.min {
			t.Fatalf("%s of job %s is launched with %d running and %d done, below its minimum %d: its members would start one by one",
				gg.label(), gg.job.id, run, done, gg.min)
		}
	}
	for _, w := range e.fleet.Workers() {
		if w.Gone() {
			continue
		}
		var sum model.Resources
		n := 0
		if w.Idx < len(e.onWorker) {
			for task := e.onWorker[w.Idx]; task != nil; task = task.nextOnWorker {
				if task.worker != w || task.state != model.TaskRunning {
					t.Fatalf("%s/%s is listed on worker %s but is %s", task.job.id, task.spec.Name, w.Spec.Name, task.state)
				}
				if !task.member() {
					sum = sum.Add(task.spec.Resources)
					n++
				}
			}
		}
		if w.Running != n || w.Used != sum || w.Running > w.Spec.Slots {
			t.Fatalf("worker %s counts %d running using %+v; its tasks %d using %+v; %d slots", w.Spec.Name, w.Running, w.Used, n, sum, w.Spec.Slots)
		}
	}
}

// drain releases every hold, readies every worker, adds two workers that
// fit any task and gang, and runs the tasks to their ends: every job must
// end, so that no gang, hold or reservation is stuck.
func (s *mixSim) drain(t *rapid.T) {
	for _, j := range s.e.active {
		if j.held != "" && !j.done {
			s.apply(ReleaseJob{Job: j.id})
		}
	}
	for _, w := range s.e.fleet.Workers() {
		if !w.Gone() && w.Spec.State != model.WorkerReady {
			s.apply(SetWorkerState{Name: w.Spec.Name, State: model.WorkerReady, At: s.now})
		}
	}
	for i := range 2 {
		s.apply(AddWorker{Worker: model.Worker{Name: fmt.Sprintf("big%d", i), Slots: 8,
			Capacity: model.Resources{MilliCPU: 64000, MemoryMB: 65536, GPUs: 8}}, At: s.now})
	}
	for round := 0; ; round++ {
		s.now = s.now.Add(time.Minute)
		s.log = append(s.log, s.now)
		d := s.e.Cycle(s.now)
		s.results = append(s.results, fmt.Sprint(*d))
		s.check(t)
		live := 0
		for _, j := range s.e.active {
			if j.done {
				continue
			}
			live++
			for _, task := range j.tasks {
				if task.state == model.TaskRunning && !task.member() {
					s.apply(FinishTask{Job: j.id, Task: task.spec.Name, Outcome: model.Succeeded, At: s.now})
				}
			}
		}
		if live == 0 {
			return
		}
		if round > 200 {
			for _, j := range s.e.active {
				if !j.done {
					t.Fatalf("job %s did not end: %d of %d tasks left, pending %+v", j.id, j.left, len(j.tasks), s.e.PendingOf(j.id))
				}
			}
		}
	}
}

// TestPropertyFeaturesMixed drives random mixes of gangs, GPUs, holds,
// requeues, cancels, resource changes, lost workers and stopping policies,
// checks after every step that no device is held twice or by a task that
// does not run there, that every running GPU task holds as many devices as
// it asks for, that no gang runs (or is marked started) below its minimum,
// that job and worker counts match their tasks, that no hold outlives a
// cycle, that the pending summary matches the list; and in the end that a
// second engine fed the same events decides the same.
func TestPropertyFeaturesMixed(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := mixConfig(rt)
		e, err := New(cfg)
		if err != nil {
			rt.Fatal(err)
		}
		s := &mixSim{cfg: cfg, e: e, now: t0}
		for range rapid.IntRange(1, 4).Draw(rt, "workers") {
			s.addWorker(rt)
		}
		ops := []struct {
			weight int
			do     func(*rapid.T)
		}{
			{6, s.cycle}, {3, s.submit}, {4, s.finish}, {1, s.requeueTask}, {1, s.requeueJob},
			{1, s.cancelTask}, {1, s.hold}, {1, s.resize}, {1, s.removeWorker}, {1, s.addWorker}, {1, s.setPolicy}, {1, s.setWorkerState},
		}
		var table []func(*rapid.T)
		for _, op := range ops {
			for range op.weight {
				table = append(table, op.do)
			}
		}
		for range rapid.IntRange(10, 80).Draw(rt, "steps") {
			table[rapid.IntRange(0, len(table)-1).Draw(rt, "op")](rt)
			s.check(rt)
		}
		s.drain(rt)
		// The same events, the same decisions.
		e2, err := New(cfg)
		if err != nil {
			rt.Fatal(err)
		}
		var got []string
		for _, x := range s.log {
			switch x := x.(type) {
			case time.Time:
				got = append(got, fmt.Sprint(*e2.Cycle(x)))
			case Event:
				got = append(got, fmt.Sprint(e2.Apply(x)))
			}
		}
		if i := slices.Compare(got, s.results); i != 0 {
			for k := range got {
				if got[k] != s.results[k] {
					rt.Fatalf("replay differs at step %d:\n%s\nfirst run:\n%s", k, got[k], s.results[k])
				}
			}
		}
	})
}

// short lists the events and cycles so far, one line each, for a failure
// message.
func (s *mixSim) short() string {
	out := ""
	for _, x := range s.log {
		switch x := x.(type) {
		case time.Time:
			out += "C "
		case SubmitJob:
			out += fmt.Sprintf("\nsubmit %s ep=%s deps=%v gang=%q n=%d\n", x.Job.ID, x.Job.Endpoint, x.Job.DependsOn, x.Job.Tasks[0].Gang, len(x.Job.Tasks))
		default:
			out += fmt.Sprintf("\n%T%+v\n", x, x)
		}
	}
	return out
}
