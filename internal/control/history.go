package control

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/store"
)

// Fairness over time must survive a restart: a share that used the fleet
// all morning must not start the afternoon with a clean slate because the
// server was upgraded. The loop stores what each queue's policy remembers
// (its decayed or windowed usage, the classload rebalance clock) every
// HistoryEvery of its clock and when it stops; recovery hands it back as of
// when it was stored, so the policy ages it over the downtime.

// HistorySaveEvery is how often the loop stores the policies' history: a
// crash loses at most this much of it.
const HistorySaveEvery = 30 * time.Second

// storedHistory is a queue's policy history as stored.
type storedHistory struct {
	At      time.Time      `json:"at"`
	History policy.History `json:"history"`
	// Policy is the kind of policy that remembered it: another kind
	// reads the same figures differently (fairshare's usage is per share,
	// priority's per job), so history is handed back only to its own kind.
	Policy string `json:"policy,omitempty"`
}

// saveHistory stores every queue's policy history when it is due.
func (c *Controller) saveHistory(t *txn, force bool) {
	if !force && t.now.Before(c.nextHistory) {
		return
	}
	c.nextHistory = t.now.Add(HistorySaveEvery)
	for _, q := range c.engCfg.Queues {
		h, ok := c.eng.History(q.Name)
		if !ok {
			continue
		}
		// As of the engine's time, which History reads it at.
		raw, err := json.Marshal(storedHistory{At: c.eng.Now(), History: h, Policy: q.Policy.Kind})
		if err != nil {
			continue
		}
		t.kv(store.QueueHistoryKey(q.Name), raw)
	}
}

// saveHistoryAtStop stores the history once more as the loop stops, with
// a context of its own: the loop's has ended.
func (c *Controller) saveHistoryAtStop() {
	t := &txn{c: c, now: c.cfg.Clock().UTC()}
	c.saveHistory(t, true)
	if t.batch.Empty() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.st.Commit(ctx, t.batch); err != nil {
		c.cfg.Logger.Warn("storing the policies' history at stop", "err", err)
	}
}

// restoreHistory gives each queue's policy the history stored for it.
func (c *Controller) restoreHistory(ctx context.Context, qr *quarantine) error {
	for _, q := range c.engCfg.Queues {
		key := store.QueueHistoryKey(q.Name)
		raw, err := c.st.KV(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		var sh storedHistory
		if err := json.Unmarshal(raw, &sh); err != nil {
			qr.setting(key, raw, err)
			continue
		}
		if sh.Policy != "" && sh.Policy != q.Policy.Kind {
			c.cfg.Logger.Info("the queue's policy changed since its history was stored; it starts afresh",
				"queue", q.Name, "stored", sh.Policy, "policy", q.Policy.Kind)
			continue
		}
		at := sh.At
		if sh.History.RebalanceExceededFor > 0 {
			// A rebalance clock does not run while the server is down:
			// aged over the downtime, it could stop tasks in the first
			// cycle for a spread nobody watched. It goes on from the
			// restart; usage (none in a classload history) would age.
			at = c.cfg.Clock().UTC()
		}
		if err := c.eng.Apply(engine.SetHistory{Queue: q.Name, History: sh.History, At: at}); err != nil {
			qr.setting(key, raw, err)
		}
	}
	return nil
}
