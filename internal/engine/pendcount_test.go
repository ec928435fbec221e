package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/model"
	"pgregory.net/rapid"
)

// summaryOf counts a pending list the way the dashboard and the metrics
// count it: distinct jobs, tasks, and tasks per reason code.
func summaryOf(list []Pending) PendingSummary {
	s := PendingSummary{ByReason: []ReasonCount{}}
	jobs := map[string]bool{}
	by := map[string]int{}
	for _, p := range list {
		jobs[p.Job] = true
		s.Tasks += p.Tasks
		by[p.Reason.Code] += p.Tasks
	}
	s.Jobs = len(jobs)
	for code, n := range by {
		s.ByReason = append(s.ByReason, ReasonCount{Code: code, Tasks: n})
	}
	slices.SortFunc(s.ByReason, func(a, b ReasonCount) int { return strings.Compare(a.Code, b.Code) })
	return s
}

// pendingOfJob is the entries of list that name job, in list order.
func pendingOfJob(list []Pending, job string) []Pending {
	out := []Pending{}
	for _, p := range list {
		if p.Job == job {
			out = append(out, p)
		}
	}
	return out
}

// summarySim drives two engines with the same events: one that lists every
// waiting job each cycle and one that builds the list on demand, as the
// server runs it. Its events cover what moves the counts: submissions to
// three policies (one group, a group per share, a group per job), endpoint
// jobs waiting for admission, DAGs, merged batches, slot limits and
// requests no worker fits; starts, finishes, failures and requeues; workers joining, leaving
// and changing state; policy changes that regroup a queue; and endpoint
// capacity changes.
type summarySim struct {
	listed, lazy *Engine
	now          time.Time
	nJobs, nWork int
	workers      []string
	jobs         []model.Job
}

func summaryConfig(seed uint64) Config {
	return Config{
		Seed: seed,
		Queues: []QueueConfig{
			{Name: "default", Policy: policy.Config{Kind: "fifo"}},
			{Name: "fair", Pool: model.Selector{"zone": "a"}, Policy: policy.Config{Kind: "fairshare", Settings: &fairshare.Config{ShareDecaySeconds: 600}}},
			{Name: "prio", Priority: 1, Policy: policy.Config{Kind: "priority", Settings: &priority.Config{}}},
		},
		Admission: admit.Config{Settings: admit.Defaults(), Endpoints: []model.Endpoint{
			{Name: "ep", Type: model.EndpointInstanceBacked, Instances: 2, InstanceConcurrency: 2},
		}},
	}
}

// apply applies ev to both engines, which must agree on its outcome.
func (s *summarySim) apply(t *rapid.T, ev Event) error {
	err1, err2 := s.listed.Apply(ev), s.lazy.Apply(ev)
	if fmt.Sprint(err1) != fmt.Sprint(err2) {
		t.Fatalf("%T: listed engine says %v, on-demand engine %v", ev, err1, err2)
	}
	return err1
}

func (s *summarySim) addWorker(t *rapid.T) {
	w := model.Worker{
		Name:     fmt.Sprintf("w%d", s.nWork),
		Capacity: rapid.SampledFrom(propShapes).Draw(t, "shape"),
		Slots:    rapid.IntRange(1, 2).Draw(t, "slots"),
		Labels:   model.Labels{"zone": rapid.SampledFrom([]string{"a", "b"}).Draw(t, "zone")},
		State:    rapid.SampledFrom([]model.WorkerState{model.WorkerReady, model.WorkerReady, model.WorkerDisabled}).Draw(t, "state"),
	}
	s.nWork++
	if err := s.apply(t, AddWorker{Worker: w, At: s.now}); err != nil {
		t.Fatalf("add worker: %v", err)
	}
	s.workers = append(s.workers, w.Name)
}

func (s *summarySim) removeWorker(t *rapid.T) {
	if len(s.workers) == 0 {
		return
	}
	i := rapid.IntRange(0, len(s.workers)-1).Draw(t, "removed")
	if err := s.apply(t, RemoveWorker{Name: s.workers[i], At: s.now}); err != nil {
		t.Fatalf("remove worker: %v", err)
	}
	s.workers = slices.Delete(s.workers, i, i+1)
}

func (s *summarySim) setWorkerState(t *rapid.T) {
	if len(s.workers) == 0 {
		return
	}
	name := rapid.SampledFrom(s.workers).Draw(t, "worker")
	st := rapid.SampledFrom([]model.WorkerState{model.WorkerReady, model.WorkerDraining, model.WorkerDisabled}).Draw(t, "newState")
	if err := s.apply(t, SetWorkerState{Name: name, State: st, At: s.now}); err != nil {
		t.Fatalf("set worker state: %v", err)
	}
}

func (s *summarySim) submit(t *rapid.T) {
	j := model.Job{
		ID:        fmt.Sprintf("j%d", s.nJobs),
		Queue:     rapid.SampledFrom([]string{"default", "fair", "prio"}).Draw(t, "queue"),
		Share:     rapid.SampledFrom([]string{"red", "blue"}).Draw(t, "share"),
		Priority:  rapid.IntRange(0, 9).Draw(t, "priority"),
		MaxSlots:  rapid.IntRange(0, 2).Draw(t, "maxSlots"),
		Submitted: s.now,
	}
	s.nJobs++
	if rapid.IntRange(0, 3).Draw(t, "endpointJob") == 0 {
		j.Endpoint, j.Load = "ep", rapid.IntRange(1, 5).Draw(t, "load")
	}
	// Tasks of one stage with a model are merged into batches that share
	// a slot.
	batched := rapid.IntRange(0, 2).Draw(t, "batched") == 0
	req := rapid.SampledFrom(propRequests).Draw(t, "request")
	for i, n := 0, rapid.IntRange(1, 5).Draw(t, "tasks"); i < n; i++ {
		ts := model.Task{Name: fmt.Sprintf("t%d", i), Resources: req, MaxAttempts: rapid.IntRange(0, 2).Draw(t, "maxAttempts")}
		if batched {
			ts.Stage, ts.Model = "infer", "m1"
			j.Tasks = append(j.Tasks, ts)
			continue
		}
		ts.Resources = rapid.SampledFrom(propRequests).Draw(t, "request")
		for k := 0; k < i; k++ {
			if rapid.IntRange(0, 3).Draw(t, "needs") == 0 {
				ts.Needs = append(ts.Needs, fmt.Sprintf("t%d", k))
			}
		}
		j.Tasks = append(j.Tasks, ts)
	}
	if s.apply(t, SubmitJob{Job: j}) == nil {
		s.jobs = append(s.jobs, j)
	}
}

func (s *summarySim) finish(t *rapid.T) {
	var running []string
	for _, j := range s.jobs {
		for _, ts := range j.Tasks {
			if st, _, ok := s.listed.TaskState(j.ID, ts.Name); ok && st == model.TaskRunning {
				running = append(running, j.ID+"/"+ts.Name)
			}
		}
	}
	if len(running) == 0 {
		return
	}
	job, task, _ := strings.Cut(rapid.SampledFrom(running).Draw(t, "finished"), "/")
	oc := rapid.SampledFrom([]model.Outcome{model.Succeeded, model.Succeeded, model.Failed, model.Requeued}).Draw(t, "outcome")
	if err := s.apply(t, FinishTask{Job: job, Task: task, Outcome: oc, At: s.now}); err != nil {
		t.Fatalf("finish %s/%s: %v", job, task, err)
	}
}

func (s *summarySim) cancel(t *rapid.T) {
	if len(s.jobs) == 0 {
		return
	}
	_ = s.apply(t, CancelJob{Job: rapid.SampledFrom(s.jobs).Draw(t, "cancelled").ID, At: s.now})
}

// hold holds or releases a job, which moves its waiting tasks to held and
// back (an endpoint job out of admission and back).
func (s *summarySim) hold(t *rapid.T) {
	if len(s.jobs) == 0 {
		return
	}
	id := rapid.SampledFrom(s.jobs).Draw(t, "held").ID
	if rapid.Bool().Draw(t, "release") {
		_ = s.apply(t, ReleaseJob{Job: id})
		return
	}
	_ = s.apply(t, HoldJob{Job: id, By: rapid.SampledFrom([]string{"alice", "ops"}).Draw(t, "holder")})
}

// resize changes what a job's tasks ask for, which moves its waiting tasks
// between head shapes (refused once a task started).
func (s *summarySim) resize(t *rapid.T) {
	if len(s.jobs) == 0 {
		return
	}
	j := rapid.SampledFrom(s.jobs).Draw(t, "resized")
	res := make([]model.Resources, len(j.Tasks))
	for i := range res {
		res[i] = rapid.SampledFrom(propRequests).Draw(t, "newRequest")
	}
	_ = s.apply(t, SetJobResources{Job: j.ID, Resources: res})
}

// setPolicy changes a queue's policy, or its policy's settings: the queue's
// jobs are regrouped.
func (s *summarySim) setPolicy(t *rapid.T) {
	q := rapid.SampledFrom([]string{"default", "fair", "prio"}).Draw(t, "queueChanged")
	cfgs := []policy.Config{
		{Kind: "fifo"},
		{Kind: "fairshare", Settings: &fairshare.Config{ComputeReservation: 50, Shares: []fairshare.ShareWeight{{Share: "red", WeightFactor: fairshare.Weight(0.5)}}}},
		{Kind: "fairshare", Settings: &fairshare.Config{ShareDecaySeconds: 60}},
		{Kind: "priority", Settings: &priority.Config{SerialPriority: true}},
	}
	cfg := cfgs[rapid.IntRange(0, len(cfgs)-1).Draw(t, "policy")]
	if err := s.apply(t, SetPolicy{Queue: q, Policy: cfg, At: s.now}); err != nil {
		t.Fatalf("set policy: %v", err)
	}
}

// setCapacity changes the endpoint's capacity, which moves jobs between
// throttled and admitted.
func (s *summarySim) setCapacity(t *rapid.T) {
	n := rapid.IntRange(0, 4).Draw(t, "instances")
	ep := model.Endpoint{Name: "ep", Type: model.EndpointInstanceBacked, Instances: n, InstanceConcurrency: 2}
	if err := s.apply(t, SetEndpoint{Endpoint: ep, At: s.now}); err != nil {
		t.Fatalf("set endpoint: %v", err)
	}
}

// cycle runs both engines and compares the on-demand engine's counts and
// per-job reasons with the list the listing engine gave.
func (s *summarySim) cycle(t *rapid.T) {
	s.now = s.now.Add(time.Duration(rapid.IntRange(0, 120).Draw(t, "seconds")) * time.Second)
	d1, d2 := s.listed.Cycle(s.now), s.lazy.Cycle(s.now)
	list := d1.Pending
	if len(d2.Pending) != 0 {
		t.Fatalf("the on-demand engine listed %d jobs", len(d2.Pending))
	}
	d2.Pending = list
	b1, _ := json.Marshal(d1)
	b2, _ := json.Marshal(d2)
	if string(b1) != string(b2) {
		t.Fatalf("the engines decided differently:\n listed    %s\n on demand %s", b1, b2)
	}
	want := summaryOf(list)
	if got := s.listed.PendingSummary(); !reflect.DeepEqual(got, want) {
		t.Fatalf("listing engine: PendingSummary %+v, the list counts %+v\nlist %+v", got, want, list)
	}
	if got := s.lazy.PendingSummary(); !reflect.DeepEqual(got, want) {
		t.Fatalf("on-demand engine: PendingSummary %+v, the list counts %+v\nlist %+v", got, want, list)
	}
	for _, j := range s.jobs {
		if got, want := s.lazy.PendingOf(j.ID), pendingOfJob(list, j.ID); !reflect.DeepEqual(got, want) {
			t.Fatalf("PendingOf(%s) = %+v, the list has %+v", j.ID, got, want)
		}
	}
}

// TestPropertyPendingSummaryMatchesList checks that the counts an engine
// keeps of its waiting tasks (PendingSummary: what the dashboard's overview
// and the allot_pending_tasks metric show) and the reasons it gives one job
// on demand (PendingOf: the jobs page) are those the full list of the same
// cycle gives, in both modes, across random sequences of events.
func TestPropertyPendingSummaryMatchesList(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64().Draw(t, "seed")
		listed, err := New(summaryConfig(seed))
		if err != nil {
			t.Fatal(err)
		}
		cfg := summaryConfig(seed)
		cfg.LazyPending = true
		lazy, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := &summarySim{listed: listed, lazy: lazy, now: t0}
		for n := rapid.IntRange(0, 5).Draw(t, "workers"); n > 0; n-- {
			s.addWorker(t)
		}
		actions := map[string]func(*rapid.T){
			"cycle": s.cycle, "submit": s.submit, "finish": s.finish, "addWorker": s.addWorker,
			"removeWorker": s.removeWorker, "setWorkerState": s.setWorkerState, "cancel": s.cancel,
			"setPolicy": s.setPolicy, "setCapacity": s.setCapacity, "hold": s.hold, "resize": s.resize,
		}
		weighted := []string{"cycle", "cycle", "cycle", "submit", "submit", "submit", "finish", "finish", "finish",
			"addWorker", "removeWorker", "setWorkerState", "cancel", "setPolicy", "setCapacity", "hold", "resize"}
		for steps := rapid.IntRange(1, 100).Draw(t, "steps"); steps > 0; steps-- {
			action := rapid.SampledFrom(weighted).Draw(t, "action")
			actions[action](t)
			// Between cycles too, the counts are those of the list
			// built at the same moment.
			for _, e := range []*Engine{s.listed, s.lazy} {
				if got, want := e.PendingSummary(), summaryOf(e.Pending()); !reflect.DeepEqual(got, want) {
					t.Fatalf("after %s: PendingSummary %+v, the list counts %+v", action, got, want)
				}
			}
		}
		s.cycle(t)
	})
}

// A job submitted since the last cycle counts as the list shows it: not
// reached by a cycle yet; the cycle gives it its reason.
func TestPendingSummaryCountsWhatNoCycleReachedYet(t *testing.T) {
	e, err := New(summaryConfig(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Apply(SubmitJob{Job: model.Job{ID: "a", Queue: "default", Tasks: []model.Task{{Name: "t"}, {Name: "u", Needs: []string{"t"}}}}}); err != nil {
		t.Fatal(err)
	}
	want := PendingSummary{Jobs: 1, Tasks: 2, ByReason: []ReasonCount{{Code: model.ReasonNotReached, Tasks: 1}, {Code: model.ReasonWaitingDependency, Tasks: 1}}}
	if got := e.PendingSummary(); !reflect.DeepEqual(got, want) || !reflect.DeepEqual(got, summaryOf(e.Pending())) {
		t.Errorf("PendingSummary before a cycle = %+v, want %+v (the list: %+v)", got, want, e.Pending())
	}
	e.Cycle(t0)
	want.ByReason[0].Code = model.ReasonUnschedulable // no worker at all
	if got := e.PendingSummary(); !reflect.DeepEqual(got, want) || !reflect.DeepEqual(got, summaryOf(e.Pending())) {
		t.Errorf("PendingSummary with no worker = %+v, want %+v (the list: %+v)", got, want, e.Pending())
	}
}
