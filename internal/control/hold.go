package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// Event kinds of holds (allot hold / allot release).
const (
	EventJobHeld     = "job_held"
	EventJobReleased = "job_released"
)

// Hold holds an unfinished job on behalf of by: it keeps its place in its
// queue but starts no task until Release (engine.HoldJob). The held jobs
// are stored under one key (store.HeldJobsKey), so that a restart keeps
// them held.
func (c *Controller) Hold(ctx context.Context, id, by string) (api.Job, error) {
	if by == "" {
		by = "anonymous" // authentication off: no token names the holder
	}
	_, err := c.do(ctx, func(t *txn) (any, error) {
		if _, ok := c.jobs[id]; !ok {
			return nil, c.missingOrEnded(ctx, id)
		}
		if err := c.eng.Apply(engine.HoldJob{Job: id, By: by}); err != nil {
			return nil, err
		}
		if c.held == nil {
			c.held = map[string]string{}
		}
		c.held[id] = by
		c.storeHolds(t)
		t.event(EventJobHeld, id, "", "", model.Reason{Code: model.ReasonHeld, Message: "held by " + by}, map[string]any{"by": by})
		t.changed = true
		return nil, nil
	})
	if err != nil {
		return api.Job{}, err
	}
	return c.Job(ctx, id)
}

// Release releases a held job: its waiting tasks may start again, in the
// place they had. Releasing a job that is not held changes nothing.
func (c *Controller) Release(ctx context.Context, id string) (api.Job, error) {
	_, err := c.do(ctx, func(t *txn) (any, error) {
		if _, ok := c.jobs[id]; !ok {
			return nil, c.missingOrEnded(ctx, id)
		}
		by, held := c.held[id]
		if !held {
			return nil, nil
		}
		if err := c.eng.Apply(engine.ReleaseJob{Job: id}); err != nil {
			return nil, err
		}
		delete(c.held, id)
		c.storeHolds(t)
		t.event(EventJobReleased, id, "", "", model.Reason{}, map[string]any{"heldBy": by})
		t.changed = true
		return nil, nil
	})
	if err != nil {
		return api.Job{}, err
	}
	return c.Job(ctx, id)
}

// endHold forgets the hold of a job that ended.
func (c *Controller) endHold(t *txn, id string) {
	if _, ok := c.held[id]; ok {
		delete(c.held, id)
		c.storeHolds(t)
	}
}

// storeHolds writes the held jobs into the round's transaction; with none
// held, the key goes.
func (c *Controller) storeHolds(t *txn) {
	if len(c.held) == 0 {
		t.kv(store.HeldJobsKey, nil)
		return
	}
	raw, _ := json.Marshal(c.held) // a map of strings always encodes
	t.kv(store.HeldJobsKey, raw)
}

// recoverHolds holds again the recovered jobs that were held. An entry
// for a job that is no longer live is dropped; a key that cannot be read
// is quarantined, and the jobs run.
func (c *Controller) recoverHolds(ctx context.Context, q *quarantine) error {
	raw, err := c.st.KV(ctx, store.HeldJobsKey)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var held map[string]string
	if err := json.Unmarshal(raw, &held); err != nil {
		q.setting(store.HeldJobsKey, raw, err)
		return nil
	}
	c.held = map[string]string{}
	for id, by := range held {
		if _, ok := c.jobs[id]; !ok {
			continue
		}
		if err := c.eng.Apply(engine.HoldJob{Job: id, By: by}); err != nil {
			q.entry(store.HeldJobsKey, id, []byte(fmt.Sprintf("%q", by)), err)
			continue
		}
		c.held[id] = by
	}
	if len(c.held) != len(held) {
		if raw, err := json.Marshal(c.held); err == nil {
			q.kv(store.HeldJobsKey, raw)
		}
	}
	return nil
}

// heldCopy is the held jobs for explain's what-if copy.
func (c *Controller) heldCopy() map[string]string { return maps.Clone(c.held) }

// withHold names who holds an unfinished job read from the store (a
// standby's job reads), as the leader's view does.
func withHold(ctx context.Context, st store.Store, j api.Job) api.Job {
	one := []api.Job{j}
	withHolds(ctx, st, one)
	return one[0]
}

// withHolds names who holds each unfinished job of a list read from the
// store: one read of the held jobs for the whole list.
func withHolds(ctx context.Context, st store.Store, jobs []api.Job) {
	live := false
	for _, j := range jobs {
		live = live || !store.JobEnded(j.State)
	}
	if !live {
		return
	}
	raw, err := st.KV(ctx, store.HeldJobsKey)
	if err != nil {
		return // none held, or unreadable: the jobs are shown as stored
	}
	var held map[string]string
	if json.Unmarshal(raw, &held) != nil {
		return
	}
	for i := range jobs {
		if !store.JobEnded(jobs[i].State) {
			jobs[i].HeldBy = held[jobs[i].ID]
		}
	}
}
