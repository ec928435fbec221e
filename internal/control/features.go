package control

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/allot-sched/allot/internal/control/deferred"
	"github.com/allot-sched/allot/internal/control/densityfeed"
	"github.com/allot-sched/allot/internal/control/history"
	"github.com/allot-sched/allot/internal/control/hook"
	"github.com/allot-sched/allot/internal/density"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/store"
)

// The loop's features: what it does at fixed points of a round besides
// applying requests and running the cycle. Each is a hook.Feature; those
// that need no more of the loop than a hook.Round or hook.Recovery live in
// packages of their own (internal/control/history, .../deferred,
// .../densityfeed), the
// others are built-ins here, methods on *Controller, because they need the
// loop's maps: the lost-worker check (lost.go) walks the workers and their
// mailboxes and requeues their running tasks, the elastic poll (elastic.go)
// reads who disabled each worker and changes their states, and the fleet
// count (placement.go) walks every worker's registration.
//
// registerFeatures is the one place that says which features run and in
// what order. At each hook point they run in the order of this list:
//
//   - recovery (recover.go, after the policies and admission settings, before
//     workers and jobs): history;
//   - tick (round, the ticked block, before the cycle): history, lost
//     workers, elastic;
//   - a cycle's decisions (record in cycle.go, after the decisions are
//     recorded; admission's events, recordAdmission in endpoints.go, are
//     recorded first, inline, as they need the loop's jobs): deferred tasks;
//   - round end (round, after the records are flushed, before the commit):
//     fleet count, density (which records the enabled workers the fleet
//     count just set);
//   - stop (Run's end, committed on its own): history.
//
// Nothing here writes to the store: what a feature writes goes into the
// round's transaction and is stored by its one commit.
func (c *Controller) registerFeatures(win *density.Window) {
	c.density = densityfeed.New(win)
	c.features = []hook.Feature{
		history.New(),
		builtin{name: "lost workers", tick: c.checkLost},
		builtin{name: "elastic", tick: c.pollElastic},
		deferred.New(c.cfg.Logger),
		builtin{name: "fleet cost", end: c.noteFleet},
		c.density,
	}
	for _, f := range c.features {
		if b, ok := f.(builtin); ok {
			if b.tick != nil {
				c.onTick = append(c.onTick, b.tick)
			}
			if b.end != nil {
				c.onEnd = append(c.onEnd, b.end)
			}
			continue
		}
		if r, ok := f.(hook.Recoverer); ok {
			c.onRecover = append(c.onRecover, r)
		}
		if tk, ok := f.(hook.Ticker); ok {
			c.onTick = append(c.onTick, func(t *txn) { tk.Tick(t) })
		}
		if w, ok := f.(hook.DecisionsWatcher); ok {
			c.onDecide = append(c.onDecide, w)
		}
		if e, ok := f.(hook.RoundEnder); ok {
			c.onEnd = append(c.onEnd, func(t *txn) { e.RoundEnd(t) })
		}
		if s, ok := f.(hook.Stopper); ok {
			c.onStop = append(c.onStop, s)
		}
	}
}

// builtin is a feature that stays in control because it needs the loop's
// state; it gets the whole round.
type builtin struct {
	name      string
	tick, end func(*txn)
}

// Name names the feature.
func (b builtin) Name() string { return b.name }

// stopFeatures lets the features write once more as the loop stops, and
// commits that with a context of its own: the loop's has ended.
func (c *Controller) stopFeatures() {
	t := &txn{c: c, now: c.cfg.Clock().UTC()}
	for _, f := range c.onStop {
		f.Stop(t)
	}
	if t.batch.Empty() {
		return
	}
	if errors.Is(c.err, store.ErrFenced) {
		// Another server leads: this one writes nothing more.
		c.cfg.Logger.Warn("the policies' history is not stored at stop: another server leads (fenced)")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.noteStored(t.batch)
	if err := c.st.Commit(ctx, t.batch); err != nil {
		c.cfg.Logger.Warn("storing the policies' history at stop", "err", err)
	}
}

// recovery is the features' view of the start (hook.Recovery).
type recovery struct {
	c *Controller
	q *quarantine
}

func (r recovery) Clock() time.Time { return r.c.cfg.Clock().UTC() }

func (r recovery) KV(ctx context.Context, key string) ([]byte, error) { return r.c.st.KV(ctx, key) }

func (r recovery) Quarantine(key string, raw []byte, err error) { r.q.setting(key, raw, err) }

func (r recovery) Queues() []engine.QueueConfig { return r.c.engCfg.Queues }

func (r recovery) Engine() hook.Engine { return r.c.eng }

func (r recovery) Logger() *slog.Logger { return r.c.cfg.Logger }
