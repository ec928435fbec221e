package control

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

// listCounts counts a list of waiting jobs as the snapshot's counts count
// it: jobs, tasks and tasks per reason code.
func listCounts(list []engine.Pending) engine.PendingSummary {
	s := engine.PendingSummary{ByReason: []engine.ReasonCount{}}
	jobs, by := map[string]bool{}, map[string]int{}
	for _, p := range list {
		jobs[p.Job] = true
		s.Tasks += p.Tasks
		by[p.Reason.Code] += p.Tasks
	}
	s.Jobs = len(jobs)
	for code, n := range by {
		s.ByReason = append(s.ByReason, engine.ReasonCount{Code: code, Tasks: n})
	}
	slices.SortFunc(s.ByReason, func(a, b engine.ReasonCount) int { return strings.Compare(a.Code, b.Code) })
	return s
}

// checkPendingCounts compares, in one loop round, the published snapshot's
// counts of waiting tasks with the full list of waiting jobs the engine
// builds on demand (the list a listing engine gives after the same cycle,
// as the engine's property tests check), and each live job's reasons
// (PendingOf, which the jobs page shows) with its entries in that list.
func (p *plane) checkPendingCounts(step string) {
	p.t.Helper()
	type round struct {
		snap    *Snapshot
		list    []engine.Pending
		reasons map[string][]engine.Pending
	}
	v, err := p.c.read(p.ctx(), func(*txn) (any, error) {
		r := round{snap: p.c.Snapshot(), list: p.c.eng.Pending(), reasons: map[string][]engine.Pending{}}
		for id := range p.c.jobs {
			if ps := p.c.eng.PendingOf(id); len(ps) > 0 {
				r.reasons[id] = ps
			}
		}
		return r, nil
	})
	if err != nil {
		p.t.Fatalf("%s: %v", step, err)
	}
	r := v.(round)
	if want := listCounts(r.list); !reflect.DeepEqual(r.snap.Pending, want) {
		p.t.Fatalf("after %s: the snapshot counts %+v, the list of waiting jobs %+v\nlist %+v", step, r.snap.Pending, want, r.list)
	}
	byJob := map[string][]engine.Pending{}
	for _, e := range r.list {
		byJob[e.Job] = append(byJob[e.Job], e)
	}
	if !reflect.DeepEqual(r.reasons, byJob) {
		p.t.Fatalf("after %s: the reasons per job %+v, the list %+v", step, r.reasons, byJob)
	}
	// Controller.PendingOf answers in a round of its own: compare when no
	// cycle ran in between (the loop also cycles on its own clock).
	var ids []string
	for id := range byJob {
		ids = append(ids, id)
	}
	got, err := p.c.PendingOf(p.ctx(), append(ids, "no-such-job"))
	if err != nil {
		p.t.Fatal(err)
	}
	if p.c.Snapshot() != r.snap {
		return
	}
	if !reflect.DeepEqual(got, byJob) {
		p.t.Fatalf("after %s: PendingOf = %+v, the list %+v", step, got, byJob)
	}
}

// waitPublished waits for the loop's first snapshot: a new controller
// publishes none before its first cycle.
func (p *plane) waitPublished() {
	p.t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		v, err := p.c.read(p.ctx(), func(*txn) (any, error) { return p.c.snap != nil, nil })
		if err != nil {
			p.t.Fatal(err)
		}
		if v.(bool) {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatal("no snapshot published after a restart")
		}
		time.Sleep(time.Millisecond)
	}
}

// A server runs its engine without the list of waiting jobs; what it
// publishes (the counts the dashboard's overview and allot_pending_tasks
// show) and what the jobs page asks for (PendingOf) must still be what the
// list says, whatever happens: submissions to three policies and an
// endpoint, DAGs, tasks no worker fits, starts, successes and failures,
// workers joining, leaving and being disabled, policy and capacity changes,
// cancels, restarts that rebuild the engine from the store.
func TestSnapshotPendingCountsMatchTheListOfWaitingJobs(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			sched := spec.Scheduling{
				Queues: []spec.Queue{
					{Name: "batch"},
					{Name: "fair", Policy: policy.Config{Kind: "fairshare"}},
					{Name: "prio", Policy: policy.Config{Kind: "priority", Settings: &priority.Config{}}},
				},
				Endpoints: []spec.Endpoint{{Name: "det", Type: "instance-backed", Instances: 1, InstanceConcurrency: 2}},
			}
			p := newPlaneConfig(t, Config{Scheduling: sched, HeartbeatTimeout: time.Hour})
			rng := rand.New(rand.NewPCG(seed, 15))
			var workers, jobs []string
			nWorkers, nJobs := 0, 0
			ops := []struct {
				name   string
				weight int
				do     func()
			}{
				{"submit", 5, func() {
					js := spec.Job{ID: fmt.Sprintf("j%d", nJobs), Queue: []string{"batch", "fair", "prio"}[rng.IntN(3)],
						Share: []string{"red", "blue"}[rng.IntN(2)], Priority: rng.IntN(5)}
					nJobs++
					if rng.IntN(4) == 0 {
						js.Endpoint, js.Load = "det", 1+rng.IntN(3)
					}
					for i := range 1 + rng.IntN(4) {
						ts := spec.Task{Name: fmt.Sprintf("t%d", i), Run: "true",
							Resources: model.ResourceSpec{CPU: model.CPU([]int{1000, 2000, 16000}[rng.IntN(3)])}}
						if i > 0 && rng.IntN(3) == 0 {
							ts.Needs = []string{fmt.Sprintf("t%d", rng.IntN(i))}
						}
						js.Tasks = append(js.Tasks, ts)
					}
					p.submit(js)
					jobs = append(jobs, js.ID)
				}},
				{"register", 1, func() {
					name := fmt.Sprintf("w%d", nWorkers)
					nWorkers++
					p.register(name, 1+rng.IntN(3))
					workers = append(workers, name)
				}},
				{"work", 5, func() {
					if len(workers) == 0 {
						return
					}
					w := workers[rng.IntN(len(workers))]
					var reports []api.Report
					for _, a := range p.lease(w).Assignments {
						for _, m := range append([]api.Assignment{a}, a.Batch...) {
							r := succeeded(m.Attempt)
							if rng.IntN(4) == 0 {
								r.ExitCode = 1
							}
							reports = append(reports, r)
						}
					}
					if len(reports) > 0 {
						if err := p.report(w, reports...); err != nil {
							t.Fatalf("report: %v", err)
						}
					}
				}},
				{"leave", 1, func() {
					if len(workers) == 0 {
						return
					}
					i := rng.IntN(len(workers))
					if err := p.c.Leave(p.ctx(), workers[i]); err != nil {
						t.Fatal(err)
					}
					workers = slices.Delete(workers, i, i+1)
				}},
				{"disable", 1, func() {
					if len(workers) == 0 {
						return
					}
					st := []model.WorkerState{model.WorkerReady, model.WorkerDisabled, model.WorkerDraining}[rng.IntN(3)]
					if _, err := p.c.SetWorkerState(p.ctx(), workers[rng.IntN(len(workers))], st); err != nil {
						t.Fatal(err)
					}
				}},
				{"policy", 1, func() {
					q := []string{"batch", "fair", "prio"}[rng.IntN(3)]
					pcs := []policy.Config{
						{Kind: "fifo"},
						{Kind: "fairshare", Settings: &fairshare.Config{ComputeReservation: 50}},
						{Kind: "priority", Settings: &priority.Config{}},
					}
					if _, err := p.c.SetPolicy(p.ctx(), q, pcs[rng.IntN(len(pcs))]); err != nil {
						t.Fatal(err)
					}
				}},
				{"capacity", 1, func() {
					e := spec.Endpoint{Type: "instance-backed", Instances: rng.IntN(3), InstanceConcurrency: 2}
					if _, err := p.c.SetEndpoint(p.ctx(), "det", e); err != nil {
						t.Fatal(err)
					}
				}},
				{"restart", 1, func() {
					// The engine is rebuilt from the store: restored
					// tasks and admissions are counted again.
					p.restart()
					for _, w := range workers {
						p.register(w, 1+rng.IntN(3)) // it runs nothing: the test reports what it leases at once
					}
					p.waitPublished()
				}},
				{"cancel", 1, func() {
					if len(jobs) == 0 {
						return
					}
					_, _ = p.c.Cancel(p.ctx(), jobs[rng.IntN(len(jobs))])
				}},
			}
			var names []string
			for i, op := range ops {
				for range op.weight {
					names = append(names, ops[i].name)
				}
			}
			for step := range 100 {
				name := names[rng.IntN(len(names))]
				for _, op := range ops {
					if op.name == name {
						op.do()
					}
				}
				p.clock.Add(time.Second)
				p.checkPendingCounts(fmt.Sprintf("step %d (%s)", step, name))
			}
		})
	}
}
