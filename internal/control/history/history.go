// Package history keeps the policies' fairness history across restarts: a
// share that used the fleet all morning must not start the afternoon with a
// clean slate because the server was upgraded. It is a feature of the
// scheduling loop (internal/control/hook): on a tick, every SaveEvery of the
// loop's clock, and when the loop stops, it writes what each queue's policy
// remembers (its decayed or windowed usage, the classload rebalance clock)
// into the round's transaction; at recovery it hands it back as of when it
// was stored, so the policy ages it over the downtime.
package history

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/allot-sched/allot/internal/control/hook"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/store"
)

// SaveEvery is how often the loop stores the policies' history: a crash
// loses at most this much of it.
const SaveEvery = 30 * time.Second

// Stored is a queue's policy history as stored, under
// store.QueueHistoryKey.
type Stored struct {
	At      time.Time      `json:"at"`
	History policy.History `json:"history"`
	// Policy is the kind of policy that remembered it: another kind
	// reads the same figures differently (fairshare's usage is per share,
	// priority's per job), so history is handed back only to its own kind.
	Policy string `json:"policy,omitempty"`
}

// Feature saves and restores the policies' history. It implements
// hook.Recoverer, hook.Ticker and hook.Stopper.
type Feature struct {
	// next is when the history is stored next.
	next time.Time
}

// New returns the feature, with its first save due on the first tick.
func New() *Feature { return &Feature{} }

// Name names the feature.
func (f *Feature) Name() string { return "policy history" }

// Tick stores every queue's policy history when it is due.
func (f *Feature) Tick(r hook.Round) { f.save(r, false) }

// Stop stores the history once more as the loop stops.
func (f *Feature) Stop(r hook.Round) { f.save(r, true) }

func (f *Feature) save(r hook.Round, force bool) {
	now := r.Now()
	if !force && now.Before(f.next) {
		return
	}
	f.next = now.Add(SaveEvery)
	eng := r.Engine()
	for _, q := range r.Queues() {
		h, ok := eng.History(q.Name)
		if !ok {
			continue
		}
		// As of the engine's time, which History reads it at.
		raw, err := json.Marshal(Stored{At: eng.Now(), History: h, Policy: q.Policy.Kind})
		if err != nil {
			continue
		}
		r.KV(store.QueueHistoryKey(q.Name), raw)
	}
}

// Recover gives each queue's policy the history stored for it.
func (f *Feature) Recover(ctx context.Context, r hook.Recovery) error {
	eng := r.Engine()
	for _, q := range r.Queues() {
		key := store.QueueHistoryKey(q.Name)
		raw, err := r.KV(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		var sh Stored
		if err := json.Unmarshal(raw, &sh); err != nil {
			r.Quarantine(key, raw, err)
			continue
		}
		if sh.Policy != "" && sh.Policy != q.Policy.Kind {
			r.Logger().Info("the queue's policy changed since its history was stored; it starts afresh",
				"queue", q.Name, "stored", sh.Policy, "policy", q.Policy.Kind)
			continue
		}
		at := sh.At
		if sh.History.RebalanceExceededFor > 0 {
			// A rebalance clock does not run while the server is down:
			// aged over the downtime, it could stop tasks in the first
			// cycle for a spread nobody watched. It goes on from the
			// restart; usage (none in a classload history) would age.
			at = r.Clock()
		}
		if err := eng.Apply(engine.SetHistory{Queue: q.Name, History: sh.History, At: at}); err != nil {
			r.Quarantine(key, raw, err)
		}
	}
	return nil
}
