// Package whatif answers explain's "when will my job start" for the
// server. The scheduling loop takes a Copy of its live state in one round
// (cheap: records are copied, nothing is computed); off the loop, the copy
// is replayed into a fresh engine, the way recovery rebuilds the engine from
// the store, and the engine's what-if (engine.EstimateStart, which steps it
// through virtual time with internal/engine/drive) simulates it until the
// job starts. A long simulation so never delays scheduling. The package
// also keeps what the estimate learns from: each queue's recent runtimes.
package whatif

import (
	"slices"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// Copy is a copy of the live scheduling state that builds a what-if
// engine.
type Copy struct {
	Now        time.Time
	Config     engine.Config
	Endpoints  []model.Endpoint
	Throttling admit.Settings
	// Workers are in their current states.
	Workers []model.Worker
	// Jobs are the live jobs in submission order; Tasks holds, per job,
	// its tasks' records in spec order.
	Jobs  []model.Job
	Tasks map[string][]Task
	// History is what each queue's policy remembers (usage, the rebalance
	// clock).
	History map[string]policy.History
	// Runtimes estimates the attempts of the live jobs' unfinished tasks,
	// by job and task (see Runtimes).
	Runtimes map[string]map[string]time.Duration
	// Held names who holds each held job: they start nothing in the
	// simulation either.
	Held map[string]string
}

// Task is a task's record as the copy restores it.
type Task struct {
	Job, Name string
	State     model.TaskState
	Worker    string
	Started   time.Time
	Attempt   int
	Fails     int
	// Batch names the head of the merged batch a running member rides
	// in; "" for a task that runs on its own.
	Batch string
	// Phase orders a job's tasks for recovery: those not running (0),
	// then running ones (1), then members of merged batches (2), which go
	// back into their heads' batches rather than slots of their own.
	Phase int
}

// Build replays the copy into a fresh engine, the way recovery rebuilds
// the engine from the store: endpoints and throttling as they are now,
// workers in their states, jobs in submission order, ended tasks before
// running ones, and what each policy remembers (usage, the rebalance
// clock).
func (c *Copy) Build() (*engine.Engine, error) {
	e, err := engine.New(c.Config)
	if err != nil {
		return nil, err
	}
	apply := func(ev engine.Event) { _ = e.Apply(ev) } // a record the copy cannot take is left out
	for _, ep := range c.Endpoints {
		apply(engine.SetEndpoint{Endpoint: ep, At: c.Now})
	}
	apply(engine.SetThrottling{Settings: c.Throttling, At: c.Now})
	for _, w := range c.Workers {
		apply(engine.AddWorker{Worker: w, At: c.Now})
	}
	for _, j := range c.Jobs {
		if err := e.Apply(engine.SubmitJob{Job: j}); err != nil {
			continue
		}
		for phase := range 3 {
			for _, t := range c.Tasks[j.ID] {
				if t.Phase != phase {
					continue
				}
				switch t.State {
				case model.TaskRunning:
					apply(engine.RestoreRunning{Job: t.Job, Task: t.Name, Worker: t.Worker, Started: t.Started,
						Attempt: t.Attempt, Fails: t.Fails, Batch: t.Batch})
				case model.TaskReady, model.TaskBlocked:
					apply(engine.RestoreTask{Job: t.Job, Task: t.Name, State: model.TaskReady, Attempt: t.Attempt, Fails: t.Fails})
				default:
					apply(engine.RestoreTask{Job: t.Job, Task: t.Name, State: t.State, Attempt: t.Attempt, Fails: t.Fails})
				}
			}
		}
	}
	for _, j := range c.Jobs { // in submission order: the engine's answer does not depend on a map's
		if by, ok := c.Held[j.ID]; ok {
			apply(engine.HoldJob{Job: j.ID, By: by})
		}
	}
	queues := make([]string, 0, len(c.History))
	for q := range c.History {
		queues = append(queues, q)
	}
	slices.Sort(queues)
	for _, q := range queues {
		apply(engine.SetHistory{Queue: q, History: c.History[q], At: c.Now})
	}
	return e, nil
}

// Estimate simulates the copy from its time until job starts, within the
// bounds of w; the copy's Runtimes estimate the attempts.
func (c *Copy) Estimate(job string, w engine.WhatIf) engine.Estimate {
	e, err := c.Build()
	if err != nil {
		return engine.Estimate{Note: "unknown: the what-if engine could not be built: " + err.Error()}
	}
	w.Runtime = func(j string, t *model.Task) (time.Duration, bool) {
		d, ok := c.Runtimes[j][t.Name]
		return d, ok
	}
	return engine.EstimateStart(e, job, c.Now, w)
}
