package priority_test

import (
	"fmt"
	"sort"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/drive"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/engine/policy/sla"
	"github.com/allot-sched/allot/internal/model"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// tb is what the harness needs from *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// grid drives the real engine with one queue under the policy being tested
// and one-slot workers, the way a GridServer broker drives Engines.
type grid struct {
	t       tb
	e       *engine.Engine
	now     time.Time
	slots   int
	running map[string]map[string]time.Time // job → task → start
	// dur gives each job's task length for run(); 0 means "runs until the
	// test finishes it".
	dur map[string]time.Duration
	// ends schedules the end of each running task with a duration.
	ends *drive.Attempts[attempt]
}

// attempt names a running task.
type attempt struct{ job, task string }

func newGrid(t tb, slots int, cfg policy.Config) *grid {
	t.Helper()
	e, err := engine.New(engine.Config{Queues: []engine.QueueConfig{{Name: "q", Policy: cfg}}})
	if err != nil {
		t.Fatal(err)
	}
	g := &grid{t: t, e: e, now: t0, slots: slots, running: map[string]map[string]time.Time{}, dur: map[string]time.Duration{},
		ends: drive.NewAttempts[attempt](nil)}
	for i := 0; i < slots; i++ {
		g.apply(engine.AddWorker{Worker: model.Worker{Name: fmt.Sprintf("w%04d", i), Capacity: model.Resources{MilliCPU: 1000}}, At: t0})
	}
	return g
}

func priorityCfg(c priority.Config) policy.Config {
	return policy.Config{Kind: "priority", Settings: &c}
}

func slaCfg(c sla.Config) policy.Config {
	return policy.Config{Kind: "sla", Settings: &c}
}

func (g *grid) apply(ev engine.Event) {
	g.t.Helper()
	if err := g.e.Apply(ev); err != nil {
		g.t.Fatalf("apply %T: %v", ev, err)
	}
}

// job is a job builder: n independent one-slot tasks.
type job struct{ model.Job }

func newJob(id string, n int) *job {
	j := &job{model.Job{ID: id, Queue: "q"}}
	for i := 0; i < n; i++ {
		j.Tasks = append(j.Tasks, model.Task{Name: fmt.Sprintf("t%d", i), Resources: model.Resources{MilliCPU: 1000}})
	}
	return j
}

func (j *job) prio(p int) *job      { j.Priority = p; return j }
func (j *job) urgent() *job         { j.Urgent = true; return j }
func (j *job) sla(name string) *job { j.SLAGroup = name; return j }
func (j *job) maxSlots(n int) *job  { j.MaxSlots = n; return j }
func (j *job) at(t time.Time) *job  { j.Submitted = t; return j }
func (j *job) dur(d time.Duration) *job {
	for i := range j.Tasks {
		j.Tasks[i].Duration = d
	}
	return j
}

// submit submits j at the grid's current time unless j says when.
func (g *grid) submit(js ...*job) {
	g.t.Helper()
	for _, j := range js {
		if j.Submitted.IsZero() {
			j.Submitted = g.now
		}
		g.apply(engine.SubmitJob{Job: j.Job})
		if len(j.Tasks) > 0 {
			g.dur[j.ID] = j.Tasks[0].Duration
		}
	}
}

// restore marks the first n tasks of job as running since started.
func (g *grid) restore(jobID string, n int, started time.Time) {
	g.t.Helper()
	for i := 0; i < n; i++ {
		task := fmt.Sprintf("t%d", i)
		g.apply(engine.RestoreRunning{Job: jobID, Task: task, Started: started})
		g.track(jobID, task, started)
	}
}

func (g *grid) track(jobID, task string, at time.Time) {
	if g.running[jobID] == nil {
		g.running[jobID] = map[string]time.Time{}
	}
	g.running[jobID][task] = at
	if d := g.dur[jobID]; d > 0 {
		g.ends.Start(attempt{jobID, task}, at.Add(d))
	}
}

// cycle runs one engine cycle at the grid's time and keeps the running set.
func (g *grid) cycle() *engine.Decisions {
	g.t.Helper()
	d := g.e.Cycle(g.now)
	for _, s := range d.Stops {
		delete(g.running[s.Job], s.Task)
		g.ends.Stop(attempt{s.Job, s.Task})
	}
	for _, s := range d.Starts {
		g.track(s.Job, s.Task, g.now)
	}
	return d
}

// advance moves the clock to at, finishing (successfully) every task whose
// duration has elapsed, in time order.
func (g *grid) advance(at time.Time) {
	g.t.Helper()
	type end struct {
		at time.Time
		attempt
	}
	var ends []end
	for {
		a, e, ok := g.ends.Pop(at)
		if !ok {
			break
		}
		ends = append(ends, end{e, a})
	}
	sort.Slice(ends, func(a, b int) bool {
		if !ends[a].at.Equal(ends[b].at) {
			return ends[a].at.Before(ends[b].at)
		}
		if ends[a].job != ends[b].job {
			return ends[a].job < ends[b].job
		}
		return ends[a].task < ends[b].task
	})
	for _, e := range ends {
		g.apply(engine.FinishTask{Job: e.job, Task: e.task, Outcome: model.Succeeded, At: e.at})
		delete(g.running[e.job], e.task)
	}
	g.now = at
}

// finish ends n running tasks of jobID (lowest names first) now.
func (g *grid) finish(jobID string, n int) {
	g.t.Helper()
	names := make([]string, 0, len(g.running[jobID]))
	for task := range g.running[jobID] {
		names = append(names, task)
	}
	sort.Strings(names)
	for _, task := range names[:n] {
		g.apply(engine.FinishTask{Job: jobID, Task: task, Outcome: model.Succeeded, At: g.now})
		delete(g.running[jobID], task)
		g.ends.Stop(attempt{jobID, task})
	}
}

func (g *grid) busy() int {
	n := 0
	for _, tasks := range g.running {
		n += len(tasks)
	}
	return n
}

// startsByJob counts a cycle's starts per job.
func startsByJob(d *engine.Decisions) map[string]int {
	out := map[string]int{}
	for _, s := range d.Starts {
		out[s.Job]++
	}
	return out
}

// stopsByJob counts a cycle's stops per job.
func stopsByJob(d *engine.Decisions) map[string]int {
	out := map[string]int{}
	for _, s := range d.Stops {
		out[s.Job]++
	}
	return out
}

// targets returns each group's target from a cycle's summary.
func targets(d *engine.Decisions) map[string]int {
	out := map[string]int{}
	for _, g := range d.Groups {
		out[g.Group] = g.Target
	}
	return out
}

// pendingReason returns the reason given for jobID's waiting tasks.
func pendingReason(d *engine.Decisions, jobID string) (model.Reason, bool) {
	for _, p := range d.Pending {
		if p.Job == jobID {
			return p.Reason, true
		}
	}
	return model.Reason{}, false
}
