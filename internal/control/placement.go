package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/density"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/elastic"
	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// This file is the server side of placement (seed 002) but for the elastic
// loop (elastic.go) and the density series (internal/control/densityfeed):
// cache hints that
// workers report or earn by succeeding, who disabled a worker, the fleet's
// cost without its disabled workers, and what each dispatch records.

// placementState is the loop's placement bookkeeping. Fields marked "loop"
// are touched by the loop goroutine only; the others are guarded by
// Controller.mu.
type placementState struct {
	ttl   time.Duration // how long a cache hint counts (placement.cacheTTL)
	coord *elastic.Coordinator
	// nextPoll is when the elastic coordinator runs next (loop).
	nextPoll time.Time
	// workers holds, per worker, its cache hints and who disabled it
	// (loop).
	workers map[string]*workerPlacement
	// fleetDirty asks the round's end to count the fleet again (loop).
	fleetDirty bool

	// reported remembers, per worker, the last cache report applied from
	// a heartbeat and when, so an unchanged report costs no loop round
	// (mu).
	reported map[string]cacheReport
	// fleet is the fleet's cost as of the last round that changed it (mu).
	fleet api.FleetCost
	// density is the task/worker density series (its own lock).
	density *density.Window
}

// workerPlacement is one worker's placement bookkeeping.
type workerPlacement struct {
	disabledBy string
	cache      map[string]cacheHint // by name
}

type cacheHint struct {
	kind string
	at   time.Time
}

type cacheReport struct {
	sig string
	at  time.Time
}

// newPlacementState builds the bookkeeping from the configuration; errors
// name the placement field.
func newPlacementState(engCfg engine.PlacementConfig, win *density.Window) (*placementState, error) {
	co, err := elastic.New(engCfg.Elastic)
	if err != nil {
		return nil, model.FieldErrors{{Path: "placement.elastic", Msg: err.Error()}}
	}
	ttl := engCfg.CacheTTL
	if ttl <= 0 {
		ttl = place.DefaultCacheTTL
	}
	return &placementState{ttl: ttl, coord: co, workers: map[string]*workerPlacement{},
		reported: map[string]cacheReport{}, fleetDirty: true,
		density: win}, nil
}

// densityBucket is the density series' bucket (placement.densityBucket).
func densityBucket(cfg spec.Placement) time.Duration {
	if cfg.DensityBucket != nil {
		return time.Duration(*cfg.DensityBucket)
	}
	return density.DefaultBucket
}

func (p *placementState) worker(name string) *workerPlacement {
	wp := p.workers[name]
	if wp == nil {
		wp = &workerPlacement{}
		p.workers[name] = wp
	}
	return wp
}

// checkHints validates reported cache hints; errors name the field under
// path.
func checkHints(path string, hints []api.CacheHint) error {
	if len(hints) > spec.MaxCached {
		return model.FieldErrors{{Path: path, Msg: fmt.Sprintf("has %d entries, more than %d", len(hints), spec.MaxCached)}}
	}
	var errs model.FieldErrors
	for i, h := range hints {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch h.Kind {
		case api.CacheModel, api.CacheDataset:
		default:
			errs = append(errs, &model.FieldError{Path: p + ".kind", Msg: fmt.Sprintf("unknown kind %q (known: model, dataset)", h.Kind)})
		}
		if h.Name == "" || len(h.Name) > 512 {
			errs = append(errs, &model.FieldError{Path: p + ".name", Msg: "must be 1 to 512 characters"})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// mergeCache adds hints to what the loop knows of worker's cache (the later
// time wins; a zero time is now), drops hints older than the TTL, and hands
// the result to the engine. It runs on the loop.
func (c *Controller) mergeCache(t *txn, worker string, hints []api.CacheHint) {
	if len(hints) == 0 {
		return
	}
	p := c.pl
	wp := p.worker(worker)
	if wp.cache == nil {
		wp.cache = make(map[string]cacheHint, len(hints))
	}
	changed := false
	for _, h := range hints {
		at := h.At
		if at.IsZero() || at.After(t.now) {
			at = t.now
		}
		if old, ok := wp.cache[h.Name]; !ok || at.After(old.at) || at.Equal(old.at) && old.kind != h.Kind {
			wp.cache[h.Name] = cacheHint{kind: h.Kind, at: at.UTC()}
			changed = true
		}
	}
	if !changed {
		return
	}
	cached := make(map[string]time.Time, len(wp.cache))
	for name, h := range wp.cache {
		if t.now.Sub(h.at) > p.ttl {
			delete(wp.cache, name)
			continue
		}
		cached[name] = h.at
	}
	if err := c.eng.Apply(engine.UpdateWorkerCache{Name: worker, Cached: cached, At: t.now}); err != nil {
		c.cfg.Logger.Debug("cache hints not applied", "worker", worker, "err", err)
	}
}

// registerCache applies the cache hints of a registration: the legacy
// names (Register.Cached, kind unknown, taken as models) and Cache.
func (c *Controller) registerCache(t *txn, reg api.Register) {
	if len(reg.Cached) == 0 && len(reg.Cache) == 0 {
		return
	}
	hints := make([]api.CacheHint, 0, len(reg.Cached)+len(reg.Cache))
	for _, name := range reg.Cached {
		if name != "" {
			hints = append(hints, api.CacheHint{Kind: api.CacheModel, Name: name})
		}
	}
	c.mergeCache(t, reg.Name, append(hints, reg.Cache...))
}

// succeededCache records that worker holds the model and dataset of a task
// that just succeeded there.
func (c *Controller) succeededCache(t *txn, worker, job, task string) {
	lj, ok := c.jobs[job]
	if !ok {
		return
	}
	e := lj.entry[task]
	if e == nil || e.Model == "" && e.Dataset == "" {
		return
	}
	var hints [2]api.CacheHint
	n := 0
	if e.Model != "" {
		hints[n] = api.CacheHint{Kind: api.CacheModel, Name: e.Model, At: t.now}
		n++
	}
	if e.Dataset != "" && e.Dataset != e.Model {
		hints[n] = api.CacheHint{Kind: api.CacheDataset, Name: e.Dataset, At: t.now}
		n++
	}
	c.mergeCache(t, worker, hints[:n])
}

// HeartbeatCache records a heartbeat that carries cache hints. A report
// identical to the last one applied costs no loop round until a quarter
// of the TTL has passed; then it refreshes the hints' times.
func (c *Controller) HeartbeatCache(ctx context.Context, worker string, hb api.Heartbeat) error {
	if err := checkHints("cache", hb.Cache); err != nil {
		return err
	}
	if err := c.seen(worker); err != nil {
		return err
	}
	if len(hb.Cache) == 0 {
		return nil
	}
	sig := hintsSignature(hb.Cache)
	now := c.cfg.Clock()
	c.mu.Lock()
	last, ok := c.pl.reported[worker]
	c.mu.Unlock()
	if ok && last.sig == sig && now.Sub(last.at) < c.pl.ttl/4 {
		return nil
	}
	_, err := c.do(ctx, func(t *txn) (any, error) {
		lw, ok := c.workers[worker]
		if !ok || lw.rec.State == workerLost {
			return nil, fmt.Errorf("%w: worker %q is not registered", ErrNotFound, worker)
		}
		c.mergeCache(t, worker, hb.Cache)
		c.mu.Lock()
		c.pl.reported[worker] = cacheReport{sig: sig, at: t.now}
		c.mu.Unlock()
		return nil, nil
	})
	if errors.Is(err, store.ErrUnavailable) {
		// The heartbeat counted (seen); the hints, not stored, come again
		// with the next one. A full disk must not make a live worker's
		// heartbeats fail.
		return nil
	}
	return err
}

// hintsSignature identifies a cache report, whatever its order.
func hintsSignature(hints []api.CacheHint) string {
	parts := make([]string, len(hints))
	for i, h := range hints {
		parts[i] = h.Kind + "\x00" + h.Name + "\x00" + h.At.UTC().Format(time.RFC3339Nano)
	}
	sort.Strings(parts)
	return strings.Join(parts, "\x01")
}

// cacheView lists a worker's fresh cache hints at now, by name.
func (c *Controller) cacheView(worker string, now time.Time) []api.CacheHint {
	wp := c.pl.workers[worker]
	if wp == nil || len(wp.cache) == 0 {
		return nil
	}
	out := make([]api.CacheHint, 0, len(wp.cache))
	for name, h := range wp.cache {
		if exp := h.at.Add(c.pl.ttl); exp.After(now) {
			out = append(out, api.CacheHint{Kind: h.kind, Name: name, At: h.at, Expires: exp})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// disabledBy says who disabled a disabled worker.
func (c *Controller) disabledBy(lw *liveWorker) string {
	if lw.rec.State != string(model.WorkerDisabled) {
		return ""
	}
	if wp := c.pl.workers[lw.rec.Name]; wp != nil && wp.disabledBy != "" {
		return wp.disabledBy
	}
	return api.DisabledByManual
}

// noteState records who put a worker in state and that the fleet's cost
// must be counted again.
func (c *Controller) noteState(t *txn, worker string, state model.WorkerState, by string) {
	wp := c.pl.worker(worker)
	if state == model.WorkerDisabled {
		wp.disabledBy = by
		t.kv(store.WorkerDisabledByKey(worker), []byte(by))
	} else {
		wp.disabledBy = ""
		t.kv(store.WorkerDisabledByKey(worker), nil) // nil deletes: an enabled worker needs no record
	}
	c.pl.fleetDirty = true
}

// loadDisabledBy reads who disabled each disabled worker, after a restart.
func (c *Controller) loadDisabledBy(ctx context.Context) error {
	for name, lw := range c.workers {
		if lw.rec.State != string(model.WorkerDisabled) {
			continue
		}
		b, err := c.st.KV(ctx, store.WorkerDisabledByKey(name))
		if errors.Is(err, store.ErrNotFound) {
			continue // not recorded: the view says manual
		}
		if err != nil {
			return fmt.Errorf("who disabled worker %q: %w", name, err)
		}
		c.pl.worker(name).disabledBy = string(b)
	}
	return nil
}

// forgetPlacement drops what placement remembers of a worker that left.
func (c *Controller) forgetPlacement(worker string) {
	delete(c.pl.workers, worker)
	c.pl.coord.Forget(worker)
	c.pl.fleetDirty = true
	c.mu.Lock()
	delete(c.pl.reported, worker)
	c.mu.Unlock()
}

// noteFleet asks for the fleet to be counted again when a worker came, left
// or changed state in the round, and counts it if so (a built-in feature at
// the round's end, features.go: the density feed that follows records the
// enabled workers it sets).
func (c *Controller) noteFleet(t *txn) {
	for i := range t.batch.Events {
		switch t.batch.Events[i].Kind {
		case EventWorkerRegistered, EventWorkerLost, EventWorkerState:
			c.pl.fleetDirty = true
		}
	}
	c.countFleet()
}

// Density returns the task/worker density series without a loop round.
func (c *Controller) Density() api.Density { return c.density.Series() }

// countFleet counts the workers' cost when something changed it. It walks
// every worker, so it runs only in rounds that registered, lost or
// toggled one.
func (c *Controller) countFleet() {
	if !c.pl.fleetDirty {
		return
	}
	c.pl.fleetDirty = false
	var f api.FleetCost
	for _, lw := range c.workers {
		cost := spec.DefaultCostPerHour
		if lw.reg.CostPerHour != nil {
			cost = *lw.reg.CostPerHour
		}
		switch lw.rec.State {
		case workerLost:
		case string(model.WorkerDisabled):
			f.DisabledWorkers++
			f.DisabledCostPerHour += cost
			if c.disabledBy(lw) == api.DisabledByElastic {
				f.DisabledByElastic++
			} else {
				f.DisabledByManual++
			}
		default:
			f.EnabledWorkers++
			f.EnabledSlots += max(lw.reg.Slots, 1)
			f.EnabledCostPerHour += cost
		}
	}
	c.mu.Lock()
	c.pl.fleet = f
	c.mu.Unlock()
	c.pl.density.SetEnabled(f.EnabledWorkers)
}

// FleetCost returns what the registered workers cost per hour, disabled
// workers apart, as of the last round. It takes no loop round, for
// /metrics and dashboards.
func (c *Controller) FleetCost() api.FleetCost {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pl.fleet
}

// startData records what placement decided for a start: the task_started
// event's data and a debug log line.
func (c *Controller) startData(s engine.Start) json.RawMessage {
	in := s.Placement
	b := make([]byte, 0, 112)
	b = append(b, `{"attempt":`...)
	b = strconv.AppendInt(b, int64(s.Attempt), 10)
	b = append(b, `,"via":"`...)
	b = append(b, in.Via.String()...)
	b = append(b, `","pool":`...)
	b = strconv.AppendInt(b, int64(in.Pool), 10)
	b = append(b, `,"reuseHits":`...)
	b = strconv.AppendInt(b, int64(in.ReuseHits), 10)
	b = append(b, `,"lambda":`...)
	b = appendFloat(b, in.Lambda)
	b = append(b, `,"score":`...)
	b = appendFloat(b, in.Score)
	b = append(b, '}')
	if c.cfg.Logger.Enabled(context.Background(), slog.LevelDebug) {
		c.cfg.Logger.Debug("dispatch", "job", s.Job, "task", s.Task, "worker", s.Worker, "attempt", s.Attempt,
			"via", in.Via.String(), "pool", in.Pool, "reuseHits", in.ReuseHits, "lambda", in.Lambda, "score", in.Score)
	}
	return b
}

// appendFloat writes f as a JSON number (NaN and infinities, which JSON
// lacks, as 0).
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		f = 0
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// initPlacement builds the placement bookkeeping after the engine was
// rebuilt from the store.
func (c *Controller) initPlacement(ctx context.Context, win *density.Window) error {
	pl, err := newPlacementState(c.engCfg.Placement, win)
	if err != nil {
		return err
	}
	c.pl = pl
	return c.loadDisabledBy(ctx)
}
