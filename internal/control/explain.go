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
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/whatif"
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
	est := r.replay.Estimate(id, ExplainWhatIf)
	r.x.Estimate = &est
	return APIExplanation(r.x)
}

// explainSlots bounds the start-time estimates simulated at once.
var explainSlots = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))

type explainRound struct {
	x      engine.Explanation
	replay *whatif.Copy
}

// replayState copies what a what-if engine needs (internal/whatif builds
// and simulates it off the loop). It runs on the loop.
func (c *Controller) replayState(now time.Time) *whatif.Copy {
	r := &whatif.Copy{Now: now, Config: c.engCfg, Endpoints: c.eng.Endpoints(), Throttling: c.eng.Throttling(),
		Tasks: map[string][]whatif.Task{}, History: map[string]policy.History{}, Runtimes: map[string]map[string]time.Duration{}}
	r.Config.Queues = slices.Clone(c.engCfg.Queues)
	r.Config.LazyPending = true
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
		r.Workers = append(r.Workers, mw)
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
		r.Jobs = append(r.Jobs, m)
		recs := make([]whatif.Task, 0, len(m.Tasks))
		for _, mt := range m.Tasks {
			if rec, ok := lj.tasks[mt.Name]; ok {
				head, _ := batchHead(rec)
				recs = append(recs, whatif.Task{Job: rec.Job, Name: rec.Name, State: model.TaskState(rec.State), Worker: rec.Worker,
					Started: rec.Started, Attempt: rec.Attempt, Fails: rec.Fails, Batch: head, Phase: restorePhase(rec)})
			}
		}
		r.Tasks[m.ID] = recs
		queueMedian, _ := c.recent[lj.rec.Queue].Median()
		r.Runtimes[m.ID] = lj.runtimes(queueMedian)
	}
	r.Held = c.heldCopy()
	for _, q := range c.engCfg.Queues {
		if h, ok := c.eng.History(q.Name); ok {
			r.History[q.Name] = h
		}
	}
	return r
}

// runtimes estimates how long an attempt of each of the job's unfinished
// tasks runs (whatif.Runtimes).
func (lj *liveJob) runtimes(queueMedian time.Duration) map[string]time.Duration {
	return whatif.Runtimes(lj.tasks, lj.entry, queueMedian)
}
