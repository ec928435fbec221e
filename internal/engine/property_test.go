package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
	"pgregory.net/rapid"
)

// The property test drives an engine with random fleets, jobs and event
// sequences and checks, after every step, what must always hold: capacity is
// never exceeded, every waiting task has a reason, starts only use ready
// workers that fit, a free worker never sits next to a job it could serve,
// and the same events replayed on a fresh engine give the same decisions.

var (
	propShapes = []model.Resources{
		{MilliCPU: 2000, MemoryMB: 4096},
		{MilliCPU: 8000, MemoryMB: 32768},
		{MilliCPU: 8000, MemoryMB: 32768, GPUs: 2, GPUMemoryMB: 24576},
	}
	propRequests = []model.Resources{
		{},
		{MilliCPU: 1000, MemoryMB: 1024},
		{MilliCPU: 2000, MemoryMB: 4096},
		{MilliCPU: 4000, MemoryMB: 16384},
		{MilliCPU: 1000, MemoryMB: 2048, GPUs: 1, GPUMemoryMB: 16384},
		{MilliCPU: 1000, GPUs: 2, GPUMemoryMB: 32768}, // no worker has 32 GiB per GPU
	}
	propPools = map[string]model.Selector{"default": nil, "zone-a": {"zone": "a"}}
)

// propStep is one entry of the replay log: an event, or a cycle.
type propStep struct {
	ev    Event
	cycle bool
	at    time.Time
}

type propSim struct {
	cfg     Config
	e       *Engine
	now     time.Time
	log     []propStep
	results []string // per step: the error text, or the decisions as JSON

	workers  map[string]*model.Worker // live workers as the test knows them
	order    []string                 // live worker names, registration order
	nWorkers int
	jobs     []model.Job // accepted jobs
	nJobs    int
	held     map[string]bool // jobs held (hold), as the test knows them
}

func newPropSim(t *rapid.T) *propSim {
	cfg := Config{
		Seed: rapid.Uint64().Draw(t, "seed"),
		Queues: []QueueConfig{
			{Name: "default", Policy: policy.Config{Kind: "fifo"}},
			{Name: "zone-a", Priority: rapid.IntRange(-1, 1).Draw(t, "zoneAPriority"), Pool: propPools["zone-a"], Policy: policy.Config{Kind: "fifo"}},
		},
		Placement: PlacementConfig{Strategy: rapid.SampledFrom([]string{"first-fit", "min-satisfying", "best"}).Draw(t, "strategy")},
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &propSim{cfg: cfg, e: e, now: t0, workers: map[string]*model.Worker{}}
	for n := rapid.IntRange(0, 6).Draw(t, "workers"); n > 0; n-- {
		s.addWorker(t)
	}
	return s
}

// apply applies ev, logs it for the replay and returns the error.
func (s *propSim) apply(ev Event) error {
	err := s.e.Apply(ev)
	s.log = append(s.log, propStep{ev: ev})
	s.results = append(s.results, fmt.Sprint(err))
	return err
}

func (s *propSim) tick(t *rapid.T) {
	s.now = s.now.Add(time.Duration(rapid.IntRange(0, 90).Draw(t, "seconds")) * time.Second)
}

func (s *propSim) addWorker(t *rapid.T) {
	w := model.Worker{
		Name:     fmt.Sprintf("w%d", s.nWorkers),
		Capacity: rapid.SampledFrom(propShapes).Draw(t, "shape"),
		Slots:    rapid.IntRange(1, 3).Draw(t, "slots"),
		Labels:   model.Labels{"zone": rapid.SampledFrom([]string{"a", "b"}).Draw(t, "zone")},
		State:    rapid.SampledFrom([]model.WorkerState{model.WorkerReady, model.WorkerReady, model.WorkerDraining}).Draw(t, "state"),
	}
	s.nWorkers++
	if err := s.apply(AddWorker{Worker: w, At: s.now}); err != nil {
		t.Fatalf("add worker: %v", err)
	}
	s.workers[w.Name] = &w
	s.order = append(s.order, w.Name)
}

func (s *propSim) submit(t *rapid.T) {
	j := model.Job{
		ID:        fmt.Sprintf("j%d", s.nJobs),
		Queue:     rapid.SampledFrom([]string{"default", "zone-a"}).Draw(t, "queue"),
		Priority:  rapid.IntRange(0, 2).Draw(t, "priority"),
		MaxSlots:  rapid.IntRange(0, 2).Draw(t, "maxSlots"),
		Submitted: s.now,
	}
	s.nJobs++
	if rapid.IntRange(0, 3).Draw(t, "hasSelector") == 0 {
		j.Selector = model.Selector{"zone": rapid.SampledFrom([]string{"a", "b"}).Draw(t, "selZone")}
	}
	for i, n := 0, rapid.IntRange(1, 4).Draw(t, "tasks"); i < n; i++ {
		ts := model.Task{
			Name:        fmt.Sprintf("t%d", i),
			Resources:   rapid.SampledFrom(propRequests).Draw(t, "request"),
			MaxAttempts: rapid.IntRange(0, 2).Draw(t, "maxAttempts"),
		}
		for k := 0; k < i; k++ { // needs only point back: a DAG
			if rapid.IntRange(0, 2).Draw(t, "needs") == 0 {
				ts.Needs = append(ts.Needs, fmt.Sprintf("t%d", k))
			}
		}
		j.Tasks = append(j.Tasks, ts)
	}
	err := s.apply(SubmitJob{Job: j})
	_, poolOK := propPools[j.Queue].Merge(j.Selector)
	switch {
	case err == nil && poolOK:
		s.jobs = append(s.jobs, j)
	case err != nil && !poolOK && errors.Is(err, ErrInvalid):
	default:
		t.Fatalf("submit %s (pool %v, selector %v): err = %v", j.ID, propPools[j.Queue], j.Selector, err)
	}
}

// taskView is a task as the engine reports it.
type taskView struct {
	job    *model.Job
	spec   *model.Task
	state  model.TaskState
	worker string
}

// tasks queries the state of every accepted task.
func (s *propSim) tasks(t *rapid.T) []taskView {
	var out []taskView
	for i := range s.jobs {
		j := &s.jobs[i]
		for k := range j.Tasks {
			st, w, ok := s.e.TaskState(j.ID, j.Tasks[k].Name)
			if !ok {
				t.Fatalf("task %s/%s unknown to the engine", j.ID, j.Tasks[k].Name)
			}
			out = append(out, taskView{job: j, spec: &j.Tasks[k], state: st, worker: w})
		}
	}
	return out
}

func (s *propSim) running(t *rapid.T) []taskView {
	var out []taskView
	for _, tv := range s.tasks(t) {
		if tv.state == model.TaskRunning {
			out = append(out, tv)
		}
	}
	return out
}

func (s *propSim) finish(t *rapid.T) {
	run := s.running(t)
	if len(run) == 0 {
		return
	}
	tv := rapid.SampledFrom(run).Draw(t, "finished")
	s.tick(t)
	oc := rapid.SampledFrom([]model.Outcome{model.Succeeded, model.Succeeded, model.Failed, model.Requeued}).Draw(t, "outcome")
	ev := FinishTask{Job: tv.job.ID, Task: tv.spec.Name, Outcome: oc, At: s.now}
	if err := s.apply(ev); err != nil {
		t.Fatalf("finish %+v: %v", ev, err)
	}
	if err := s.apply(ev); !errors.Is(err, ErrNotRunning) && (oc != model.Failed && oc != model.Requeued || err != nil) {
		// A duplicate report is refused unless the task was started
		// again in between, which cannot happen without a cycle.
		t.Fatalf("duplicate report %+v: err = %v, want ErrNotRunning", ev, err)
	}
}

func (s *propSim) pickWorker(t *rapid.T) (string, bool) {
	if len(s.order) == 0 {
		return "", false
	}
	return rapid.SampledFrom(s.order).Draw(t, "worker"), true
}

func (s *propSim) removeWorker(t *rapid.T) {
	name, ok := s.pickWorker(t)
	if !ok {
		return
	}
	s.tick(t)
	if err := s.apply(RemoveWorker{Name: name, At: s.now}); err != nil {
		t.Fatalf("remove %s: %v", name, err)
	}
	delete(s.workers, name)
	for i, n := range s.order {
		if n == name {
			s.order = append(s.order[:i:i], s.order[i+1:]...)
			break
		}
	}
	for _, tv := range s.running(t) {
		if tv.worker == name {
			t.Fatalf("task %s/%s still runs on removed worker %s", tv.job.ID, tv.spec.Name, name)
		}
	}
}

func (s *propSim) setWorkerState(t *rapid.T) {
	name, ok := s.pickWorker(t)
	if !ok {
		return
	}
	st := rapid.SampledFrom([]model.WorkerState{model.WorkerReady, model.WorkerDraining, model.WorkerDisabled}).Draw(t, "newState")
	if err := s.apply(SetWorkerState{Name: name, State: st, At: s.now}); err != nil {
		t.Fatalf("set state of %s: %v", name, err)
	}
	s.workers[name].State = st
}

func (s *propSim) cancel(t *rapid.T) {
	if len(s.jobs) == 0 {
		return
	}
	j := rapid.SampledFrom(s.jobs).Draw(t, "cancelled")
	if err := s.apply(CancelJob{Job: j.ID, At: s.now}); err != nil {
		t.Fatalf("cancel %s: %v", j.ID, err)
	}
}

func (s *propSim) setPriority(t *rapid.T) {
	if len(s.jobs) == 0 {
		return
	}
	j := rapid.SampledFrom(s.jobs).Draw(t, "reprioritised")
	if err := s.apply(SetJobPriority{Job: j.ID, Priority: rapid.IntRange(0, 3).Draw(t, "newPriority")}); err != nil {
		t.Fatalf("set priority of %s: %v", j.ID, err)
	}
}

// hold holds a job, or releases a held one; a held job starts nothing
// (checked in cycle).
func (s *propSim) hold(t *rapid.T) {
	if len(s.jobs) == 0 {
		return
	}
	j := rapid.SampledFrom(s.jobs).Draw(t, "held")
	if s.held[j.ID] {
		if err := s.apply(ReleaseJob{Job: j.ID}); err != nil && !errors.Is(err, ErrUnknownJob) { // it may have ended
			t.Fatalf("release %s: %v", j.ID, err)
		}
		delete(s.held, j.ID)
		return
	}
	if err := s.apply(HoldJob{Job: j.ID, By: "prop"}); err != nil {
		if errors.Is(err, ErrUnknownJob) {
			return // it ended
		}
		t.Fatalf("hold %s: %v", j.ID, err)
	}
	if s.held == nil {
		s.held = map[string]bool{}
	}
	s.held[j.ID] = true
}

// regroup reinstalls a queue's policy, which rebuilds its groups.
func (s *propSim) regroup(t *rapid.T) {
	q := rapid.SampledFrom([]string{"default", "zone-a"}).Draw(t, "regrouped")
	if err := s.apply(SetPolicy{Queue: q, Policy: policy.Config{Kind: "fifo"}, At: s.now}); err != nil {
		t.Fatalf("set policy of %s: %v", q, err)
	}
}

// restore marks a ready task as running where the engine would place it.
func (s *propSim) restore(t *rapid.T) {
	var ready []taskView
	for _, tv := range s.tasks(t) {
		if tv.state == model.TaskReady {
			ready = append(ready, tv)
		}
	}
	if len(ready) == 0 {
		return
	}
	tv := rapid.SampledFrom(ready).Draw(t, "restored")
	err := s.apply(RestoreRunning{Job: tv.job.ID, Task: tv.spec.Name, Started: s.now})
	if err != nil && !errors.Is(err, ErrInvalid) {
		t.Fatalf("restore %s/%s: %v", tv.job.ID, tv.spec.Name, err)
	}
}

// fits reports whether a task of job j fits worker w given what already runs
// there (used: resources of running tasks, n: their count).
func fitsWorker(j *model.Job, ts *model.Task, w *model.Worker, used model.Resources, n int) bool {
	sel, ok := propPools[j.Queue].Merge(j.Selector)
	return ok && sel.Matches(w.Labels) && n < max(1, w.Slots) && ts.Resources.FitsIn(w.Capacity.Sub(used))
}

// load sums what runs on each worker.
func load(tvs []taskView) (used map[string]model.Resources, n map[string]int) {
	used, n = map[string]model.Resources{}, map[string]int{}
	for _, tv := range tvs {
		if tv.state == model.TaskRunning {
			used[tv.worker] = used[tv.worker].Add(tv.spec.Resources)
			n[tv.worker]++
		}
	}
	return used, n
}

// checkState holds at any time: capacity and reasons.
func (s *propSim) checkState(t *rapid.T) {
	tvs := s.tasks(t)
	used, n := load(tvs)
	for name, k := range n {
		w, ok := s.workers[name]
		if !ok {
			t.Fatalf("%d tasks run on unknown worker %q", k, name)
		}
		if k > max(1, w.Slots) {
			t.Fatalf("worker %s runs %d tasks on %d slots", name, k, w.Slots)
		}
		if sf := used[name].Shortfall(w.Capacity); sf != "" {
			t.Fatalf("worker %s runs %s on %s: over in %s", name, used[name], w.Capacity, sf)
		}
	}
	for _, tv := range tvs {
		if tv.state == model.TaskRunning && tv.spec.Resources.GPUs > 0 && tv.spec.Resources.GPUMemoryMB > s.workers[tv.worker].Capacity.GPUMemoryMB {
			t.Fatalf("%s/%s needs %d MB per GPU on %s", tv.job.ID, tv.spec.Name, tv.spec.Resources.GPUMemoryMB, tv.worker)
		}
		r, ok := s.e.TaskReason(tv.job.ID, tv.spec.Name)
		waiting := tv.state == model.TaskReady || tv.state == model.TaskBlocked
		if waiting != ok || (ok && (r.Code == "" || r.Message == "")) {
			t.Fatalf("%s/%s is %s; TaskReason = %+v, %v", tv.job.ID, tv.spec.Name, tv.state, r, ok)
		}
	}
}

func (s *propSim) cycle(t *rapid.T) {
	s.tick(t)
	before := s.tasks(t)
	usedBefore, nBefore := load(before)
	free := 0
	for name, w := range s.workers {
		if w.State == model.WorkerReady {
			free += max(1, w.Slots) - nBefore[name]
		}
	}
	runningBefore := map[string]int{}
	wasRunning := map[string]bool{}
	for _, tv := range before {
		if tv.state == model.TaskRunning {
			runningBefore[tv.job.ID]++
			wasRunning[tv.job.ID+"/"+tv.spec.Name] = true
		}
	}

	d := s.e.Cycle(s.now)
	s.log = append(s.log, propStep{cycle: true, at: s.now})
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	s.results = append(s.results, string(b))

	if len(d.Starts) > free {
		t.Fatalf("%d starts with %d free slots", len(d.Starts), free)
	}
	specs := map[string]*model.Job{}
	for i := range s.jobs {
		specs[s.jobs[i].ID] = &s.jobs[i]
	}
	started := map[string]bool{}
	startsOfJob := map[string]int{}
	for _, st := range d.Starts {
		key := st.Job + "/" + st.Task
		if started[key] || wasRunning[key] {
			t.Fatalf("start of %s while it runs", key)
		}
		if s.held[st.Job] {
			t.Fatalf("start of %s, whose job is held", key)
		}
		started[key] = true
		startsOfJob[st.Job]++
		j := specs[st.Job]
		var ts *model.Task
		for k := range j.Tasks {
			if j.Tasks[k].Name == st.Task {
				ts = &j.Tasks[k]
			}
		}
		w, ok := s.workers[st.Worker]
		if !ok || w.State != model.WorkerReady {
			t.Fatalf("start of %s on worker %q that is not ready (%v)", key, st.Worker, w)
		}
		if !fitsWorker(j, ts, w, usedBefore[st.Worker], nBefore[st.Worker]) {
			t.Fatalf("start of %s (%s, selector %v) on %s (%s, %v, %d of %d slots used) that cannot take it",
				key, ts.Resources, j.Selector, w.Name, w.Capacity.Sub(usedBefore[st.Worker]), w.Labels, nBefore[st.Worker], w.Slots)
		}
		usedBefore[st.Worker] = usedBefore[st.Worker].Add(ts.Resources)
		nBefore[st.Worker]++
		if stt, wn, _ := s.e.TaskState(st.Job, st.Task); stt != model.TaskRunning || wn != st.Worker {
			t.Fatalf("started %s is %s on %q", key, stt, wn)
		}
	}
	for id, k := range startsOfJob {
		if m := specs[id].MaxSlots; m > 0 && k > max(0, m-runningBefore[id]) {
			t.Fatalf("job %s (maxSlots %d, %d running) got %d starts", id, m, runningBefore[id], k)
		}
	}

	// Every waiting task is explained exactly once, per job.
	after := s.tasks(t)
	waitingOf := map[string]int{}
	for _, tv := range after {
		if tv.state == model.TaskReady || tv.state == model.TaskBlocked {
			waitingOf[tv.job.ID]++
		}
	}
	pendingSum := map[string]int{}
	for _, p := range d.Pending {
		if p.Tasks <= 0 || p.Reason.Code == "" {
			t.Fatalf("pending entry %+v", p)
		}
		pendingSum[p.Job] += p.Tasks
	}
	if fmt.Sprint(pendingSum) != fmt.Sprint(waitingOf) {
		t.Fatalf("pending tasks per job %v, waiting tasks per job %v", pendingSum, waitingOf)
	}
	// The counts the engine keeps are those of the list.
	if got, want := s.e.PendingSummary(), summaryOf(d.Pending); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("PendingSummary %+v, the list counts %+v", got, want)
	}
	// A job's entries carry the reason TaskReason gives its ready tasks and
	// its first blocked task.
	want := map[string]model.Reason{}
	for _, tv := range after {
		key := tv.job.ID + "/" + string(tv.state)
		if _, seen := want[key]; seen || (tv.state != model.TaskReady && tv.state != model.TaskBlocked) {
			continue
		}
		want[key], _ = s.e.TaskReason(tv.job.ID, tv.spec.Name)
	}
	for _, p := range d.Pending {
		key := p.Job + "/" + string(model.TaskReady)
		if p.Reason.Code == model.ReasonWaitingDependency {
			key = p.Job + "/" + string(model.TaskBlocked)
		}
		if p.Reason != want[key] {
			t.Fatalf("pending entry %+v; TaskReason of the first %s task is %+v", p, key, want[key])
		}
	}

	// Work conservation: no ready worker with room is left idle next to the
	// head task of a job that may still start tasks (not held) and that it
	// could run.
	used, n := load(after)
	heads := map[string]*model.Task{}
	for _, tv := range after {
		if tv.state == model.TaskReady && heads[tv.job.ID] == nil {
			heads[tv.job.ID] = tv.spec // tasks are in declaration order
		}
	}
	runningAfter := map[string]int{}
	for id, k := range runningBefore {
		runningAfter[id] = k
	}
	for id, k := range startsOfJob {
		runningAfter[id] += k
	}
	for id, h := range heads {
		j := specs[id]
		if j.MaxSlots > 0 && runningAfter[id] >= j.MaxSlots || s.held[id] {
			continue
		}
		for _, name := range s.order {
			w := s.workers[name]
			if w.State == model.WorkerReady && fitsWorker(j, h, w, used[name], n[name]) {
				t.Fatalf("worker %s (%s free, %d of %d slots used) stays idle while %s/%s (%s) waits: %+v",
					name, w.Capacity.Sub(used[name]), n[name], w.Slots, id, h.Name, h.Resources, pendingOf(d, id))
			}
		}
	}
}

// replay applies the log to a fresh engine and compares every result.
func (s *propSim) replay(t *rapid.T) {
	e, err := New(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range s.log {
		var got string
		if st.cycle {
			b, err := json.Marshal(e.Cycle(st.at))
			if err != nil {
				t.Fatal(err)
			}
			got = string(b)
		} else {
			got = fmt.Sprint(e.Apply(st.ev))
		}
		if got != s.results[i] {
			t.Fatalf("replay differs at step %d (%T):\n got %s\nwant %s", i, st.ev, got, s.results[i])
		}
	}
}

// replayOnDemand applies the log to a fresh engine that builds the list of
// waiting jobs only when asked (Config.LazyPending) and checks that it
// decides exactly what the logged engine decided, and that the list it
// gives right after each cycle is the one the logged cycle carried.
func (s *propSim) replayOnDemand(t *rapid.T) {
	cfg := s.cfg
	cfg.LazyPending = true
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range s.log {
		var got string
		if st.cycle {
			d := e.Cycle(st.at)
			if len(d.Pending) != 0 {
				t.Fatalf("step %d: the cycle listed %d waiting jobs with the list on demand", i, len(d.Pending))
			}
			d.Pending = e.Pending()
			if got, want := e.PendingSummary(), summaryOf(d.Pending); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("on demand, step %d: PendingSummary %+v, the list counts %+v", i, got, want)
			}
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			got = string(b)
		} else {
			got = fmt.Sprint(e.Apply(st.ev))
		}
		if got != s.results[i] {
			t.Fatalf("on demand, step %d (%T) differs:\n got %s\nwant %s", i, st.ev, got, s.results[i])
		}
	}
}

func TestPropertyEngineInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := propRun(t)
		s.replay(t)
	})
}

// TestPropertyPendingOnDemandMatchesCycle checks that an engine building the
// pending list on demand decides the same and explains the same as one
// listing every waiting job each cycle.
func TestPropertyPendingOnDemandMatchesCycle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := propRun(t)
		s.replayOnDemand(t)
	})
}

// propRun runs random events and cycles on a new engine, checking its
// invariants after each step, and returns the run with its log.
func propRun(t *rapid.T) *propSim {
	s := newPropSim(t)
	actions := []struct {
		name   string
		weight int
		do     func(*rapid.T)
	}{
		{"cycle", 6, s.cycle}, {"submit", 4, s.submit}, {"finish", 6, s.finish},
		{"addWorker", 1, s.addWorker}, {"removeWorker", 1, s.removeWorker},
		{"setWorkerState", 1, s.setWorkerState}, {"cancel", 1, s.cancel},
		{"setPriority", 1, s.setPriority}, {"regroup", 1, s.regroup}, {"restore", 1, s.restore},
		{"hold", 1, s.hold},
	}
	var names []string
	for _, a := range actions {
		for k := 0; k < a.weight; k++ {
			names = append(names, a.name)
		}
	}
	for steps := rapid.IntRange(1, 80).Draw(t, "steps"); steps > 0; steps-- {
		name := rapid.SampledFrom(names).Draw(t, "action")
		for _, a := range actions {
			if a.name == name {
				a.do(t)
			}
		}
		s.checkState(t)
	}
	s.cycle(t)
	s.checkState(t)
	return s
}
