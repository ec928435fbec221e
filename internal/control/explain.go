package control

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// ExplainWhatIf bounds the start-time estimate of Explain; the zero value
// takes engine.WhatIf's defaults (24 h of virtual time, 2,000 cycles).
var ExplainWhatIf = engine.WhatIf{}

// Explain says why a live job's waiting tasks are not running and when the
// job should start. One loop round reads the engine's answer and copies the
// live state (jobs, task records, workers, endpoints, policy usage); the
// start-time estimate then replays that copy into a fresh engine and
// simulates it outside the loop, so a long simulation never delays
// scheduling. An ended job is a conflict, an unknown one not found.
func (c *Controller) Explain(ctx context.Context, id string) (api.Explanation, error) {
	v, err := c.read(ctx, func(t *txn) (any, error) {
		if _, ok := c.jobs[id]; !ok {
			return nil, nil // not live: the store says why, off the loop
		}
		x, ok := c.eng.Explain(id)
		if !ok {
			return nil, fmt.Errorf("%w: job %q", ErrNotFound, id)
		}
		return explainRound{x: x, replay: c.replayState(t.now)}, nil
	})
	if err != nil {
		return api.Explanation{}, err
	}
	r, ok := v.(explainRound)
	if !ok {
		return api.Explanation{}, c.missingOrEnded(ctx, id)
	}
	// Each estimate simulates a copy of the whole scheduling state: a
	// burst of requests waits for a slot rather than taking every core and
	// a copy each.
	select {
	case explainSlots <- struct{}{}:
		defer func() { <-explainSlots }()
	case <-ctx.Done():
		return api.Explanation{}, ctx.Err()
	}
	est := r.replay.estimate(id)
	r.x.Estimate = &est
	return r.x, nil
}

// explainSlots bounds the start-time estimates simulated at once.
var explainSlots = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))

type explainRound struct {
	x      engine.Explanation
	replay *replay
}

// replay is a copy of the live scheduling state, taken on the loop, that
// builds a what-if engine off the loop.
type replay struct {
	now        time.Time
	cfg        engine.Config
	endpoints  []model.Endpoint
	throttling admit.Settings
	workers    []model.Worker
	jobs       []model.Job
	tasks      map[string][]store.Task // by job, in spec order
	history    map[string]policy.History
	// runtimes estimates the attempts of the live jobs' tasks.
	runtimes map[string]map[string]time.Duration
}

// replayState copies what a what-if engine needs. It runs on the loop.
func (c *Controller) replayState(now time.Time) *replay {
	r := &replay{now: now, cfg: c.engCfg, endpoints: c.eng.Endpoints(), throttling: c.eng.Throttling(),
		tasks: map[string][]store.Task{}, history: map[string]policy.History{}, runtimes: map[string]map[string]time.Duration{}}
	r.cfg.Queues = slices.Clone(c.engCfg.Queues)
	r.cfg.LazyPending = true
	for _, ws := range c.eng.Workers() {
		lw, ok := c.workers[ws.Name]
		if !ok {
			continue
		}
		mw, err := workerModel(lw.reg, now)
		if err != nil {
			continue
		}
		mw.State = ws.State
		r.workers = append(r.workers, mw)
	}
	live := make([]*liveJob, 0, len(c.jobs))
	for _, lj := range c.jobs {
		live = append(live, lj)
	}
	slices.SortFunc(live, func(a, b *liveJob) int {
		if d := a.rec.Submitted.Compare(b.rec.Submitted); d != 0 {
			return d
		}
		if d := cmp.Compare(a.rec.Seq, b.rec.Seq); d != 0 {
			return d
		}
		return cmp.Compare(a.rec.ID, b.rec.ID)
	})
	for _, lj := range live {
		m := lj.model
		m.Submitted = lj.rec.Submitted
		r.jobs = append(r.jobs, m)
		recs := make([]store.Task, 0, len(m.Tasks))
		for _, mt := range m.Tasks {
			if rec, ok := lj.tasks[mt.Name]; ok {
				recs = append(recs, *rec)
			}
		}
		r.tasks[m.ID] = recs
		queueMedian, _ := c.recent[lj.rec.Queue].median()
		r.runtimes[m.ID] = lj.runtimes(queueMedian)
	}
	for _, q := range c.engCfg.Queues {
		if h, ok := c.eng.History(q.Name); ok {
			r.history[q.Name] = h
		}
	}
	return r
}

// runtimes estimates how long an attempt of each of the job's unfinished
// tasks runs: the mean observed runtime of the succeeded tasks of the same
// spec entry; else the entry's declared duration; else queueMedian, the
// median runtime of the queue's recent succeeded attempts (0: too few),
// capped by the entry's timeout; else that timeout. Tasks with none of these
// are left to engine.DefaultAttemptRuntime.
func (lj *liveJob) runtimes(queueMedian time.Duration) map[string]time.Duration {
	type sum struct {
		total time.Duration
		n     int
	}
	observed := map[string]*sum{}
	entryOf := func(name string) string {
		if e := lj.entry[name]; e != nil {
			return e.Name
		}
		return name
	}
	for name, rec := range lj.tasks {
		if rec.State != string(model.TaskSucceeded) || rec.Started.IsZero() || !rec.Ended.After(rec.Started) {
			continue
		}
		k := entryOf(name)
		if observed[k] == nil {
			observed[k] = &sum{}
		}
		observed[k].total += rec.Ended.Sub(rec.Started)
		observed[k].n++
	}
	out := map[string]time.Duration{}
	for name, rec := range lj.tasks {
		if model.TaskState(rec.State).Terminal() {
			continue
		}
		e := lj.entry[name]
		switch s := observed[entryOf(name)]; {
		case s != nil:
			out[name] = s.total / time.Duration(s.n)
		case e != nil && e.Duration > 0:
			out[name] = time.Duration(e.Duration)
		case queueMedian > 0:
			out[name] = queueMedian
			if e != nil && e.Timeout > 0 {
				out[name] = min(queueMedian, time.Duration(e.Timeout))
			}
		case e != nil && e.Timeout > 0:
			out[name] = time.Duration(e.Timeout)
		}
	}
	return out
}

// build replays the copy into a fresh engine, the way recover rebuilds the
// engine from the store: endpoints and throttling as they are now,
// workers in their states, jobs in submission order, ended tasks before
// running ones, and what each policy remembers (usage, the rebalance clock).
func (r *replay) build() (*engine.Engine, error) {
	e, err := engine.New(r.cfg)
	if err != nil {
		return nil, err
	}
	apply := func(ev engine.Event) { _ = e.Apply(ev) } // a record the copy cannot take is left out
	for _, ep := range r.endpoints {
		apply(engine.SetEndpoint{Endpoint: ep, At: r.now})
	}
	apply(engine.SetThrottling{Settings: r.throttling, At: r.now})
	for _, w := range r.workers {
		apply(engine.AddWorker{Worker: w, At: r.now})
	}
	for _, j := range r.jobs {
		if err := e.Apply(engine.SubmitJob{Job: j}); err != nil {
			continue
		}
		// In recovery's order (restorePhase): members of merged batches
		// last, back in their heads' batches rather than in slots of
		// their own.
		for phase := range 3 {
			for _, rec := range r.tasks[j.ID] {
				if restorePhase(&rec) != phase {
					continue
				}
				switch st := model.TaskState(rec.State); st {
				case model.TaskRunning:
					head, _ := batchHead(&rec)
					apply(engine.RestoreRunning{Job: rec.Job, Task: rec.Name, Worker: rec.Worker, Started: rec.Started,
						Attempt: rec.Attempt, Fails: rec.Fails, Batch: head})
				case model.TaskReady, model.TaskBlocked:
					apply(engine.RestoreTask{Job: rec.Job, Task: rec.Name, State: model.TaskReady, Attempt: rec.Attempt, Fails: rec.Fails})
				default:
					apply(engine.RestoreTask{Job: rec.Job, Task: rec.Name, State: st, Attempt: rec.Attempt, Fails: rec.Fails})
				}
			}
		}
	}
	queues := make([]string, 0, len(r.history))
	for q := range r.history {
		queues = append(queues, q)
	}
	slices.Sort(queues)
	for _, q := range queues {
		apply(engine.SetHistory{Queue: q, History: r.history[q], At: r.now})
	}
	return e, nil
}

// estimate simulates the copy from now until job starts.
func (r *replay) estimate(job string) engine.Estimate {
	e, err := r.build()
	if err != nil {
		return engine.Estimate{Note: "unknown: the what-if engine could not be built: " + err.Error()}
	}
	w := ExplainWhatIf
	w.Runtime = func(j string, t *model.Task) (time.Duration, bool) {
		d, ok := r.runtimes[j][t.Name]
		return d, ok
	}
	return engine.EstimateStart(e, job, r.now, w)
}
