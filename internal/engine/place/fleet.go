// Package place decides which worker runs a task. Workers with identical
// hardware, labels, slots and cost form a class; whether a task shape fits a
// class is decided once and cached, and each class marks its workers that have
// a free slot in a bitset kept in registration order, so a placement on a
// fleet of 10,000 workers in four shapes looks at four classes, not 10,000
// workers, and finding a class's first free worker is a scan of a few words.
package place

import (
	"fmt"
	"math/bits"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// Worker is a worker as placement tracks it. The fields a placement reads
// for every candidate (used resources, running count, class, jitter hash)
// come first, in the worker's first cache line.
type Worker struct {
	// Idx is the registration order, which first-fit follows.
	Idx     int
	Used    model.Resources
	Running int
	class   *class
	// hash is the hash of the worker's name, the worker's half of the
	// jitter hash.
	hash uint64

	Spec model.Worker
	pos  int // position in class.members
	gone bool
	// boundTo is the job the worker is reserved for in the static-worker
	// mode, or "": a bound worker is out of the general pool.
	boundTo string
	// held keeps the worker out of the free workers for now (hold.go).
	held bool
	// IdleSince is when the worker last became idle (registration, or its
	// last running task ended) and StateSince when its state last changed;
	// the engine keeps both for the elastic coordinator.
	IdleSince, StateSince time.Time
}

// BoundTo returns the job the worker is reserved for (static-worker mode),
// or "".
func (w *Worker) BoundTo() string { return w.boundTo }

// Gone reports whether the worker was removed.
func (w *Worker) Gone() bool { return w.gone }

// FreeSlots is how many more tasks w can run.
func (w *Worker) FreeSlots() int { return w.Spec.Slots - w.Running }

// Takes reports whether w takes new tasks now.
func (w *Worker) Takes() bool { return !w.gone && w.Spec.State == model.WorkerReady }

type class struct {
	idx      int
	capacity model.Resources
	labels   model.Labels
	slots    int
	cost     float64
	members  []*Worker // every worker ever in the class, registration order
	// hashes[p] is members[p].hash: the best strategy scores a window of
	// free members from this dense slice without loading the workers.
	hashes    []uint64
	free      freeSet // members that take work, have a free slot and are not bound
	freeSlots int     // free slots of ready workers
	slotsUp   int     // all slots of ready workers
	workers   int
	draining  int
	disabled  int
	// mu is the class's normalised throughput proxy μ̂, costN its
	// normalised cost ĉ, and base[k] the score λ_k·μ̂ − (1−λ_k)·ĉ for
	// category slot k; set by Fleet.normalise.
	mu, costN float64
	base      [3]float64
	// spec is the registration of the class's first worker: what the
	// class filters read is the same for all members.
	spec model.Worker
}

// shapeKey identifies a shape.
type shapeKey struct {
	req model.Resources
	sel string
}

// Shape is a task's placement requirement: resources and a selector. Shapes
// are interned by the Fleet, so all tasks with the same requirement share one
// feasibility cache and one failure memo.
type Shape struct {
	Req model.Resources
	Sel model.Selector
	// feas[c] is 0 when unknown, 1 when class c can run the shape, and 2 when
	// it cannot (then short[c] is the first class filter that removes it).
	feas  []uint8
	short []FilterCode
	// rr[c] caches whether class c passes the filters the round-robin mode
	// applies (0 unknown, 1 yes, 2 no).
	rr []uint8
	// A shape that found no worker stays unplaceable until capacity is
	// released: failEpoch remembers the fleet epoch of the failure.
	failEpoch uint64
	failed    model.Reason
	// metric holds the workers each filter removed, counted per class at
	// fleet epoch metricEpoch; the last diagnosis reason is reused while
	// its figures stay the same.
	metric      metric
	metricEpoch uint64
	diagMetric  metric
	diagReason  model.Reason
	diagValid   bool
}

// Fleet is the set of workers with their classes.
type Fleet struct {
	workers  []*Worker
	byName   map[string]*Worker
	classes  []*class
	classIdx map[string]*class // by classKeyOf
	shapes   map[shapeKey]*Shape
	pools    map[string][]bool // selector key → matches class c
	strategy Strategy
	// epoch grows whenever capacity is added or freed, which invalidates
	// remembered placement failures.
	epoch uint64
	// noFeasCache, set only by benchmarks, checks every free worker's
	// hardware for every placement instead of deciding once per class: the
	// cost placement would have without the feasibility cache.
	noFeasCache bool

	cfg settings
	// normDirty says that the fleet maxima behind μ̂ and ĉ may have changed
	// (a worker was added or removed); order[k] lists the classes by
	// descending score for category slot k.
	normDirty bool
	order     [3][]*class
	// hints indexes fresh-or-not cache hints by context name.
	hints map[string]*hint
	// bound maps a job to its worker (static-worker mode); pipeline maps a
	// task type to its worker (fixed-pipeline mode).
	bound    map[string]*Worker
	pipeline map[string]*Worker
	// rrNext is the registration index the round-robin mode looks from.
	rrNext int
}

// NewFleet returns an empty fleet that selects workers with s, in the
// adaptive mode with the other defaults of Config.
func NewFleet(s Strategy) *Fleet {
	f, _ := NewFleetConfig(Config{})
	f.strategy = s
	f.cfg.strategy = s
	return f
}

// NewFleetConfig returns an empty fleet placing tasks as cfg says, or the
// validation error of cfg.
func NewFleetConfig(cfg Config) (*Fleet, error) {
	st, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	return &Fleet{byName: map[string]*Worker{}, classIdx: map[string]*class{},
		shapes: map[shapeKey]*Shape{}, pools: map[string][]bool{}, strategy: st.strategy, epoch: 1,
		cfg: st, hints: map[string]*hint{}, bound: map[string]*Worker{}, pipeline: map[string]*Worker{}}, nil
}

// SetStrategy changes the selection strategy.
func (f *Fleet) SetStrategy(s Strategy) { f.strategy, f.cfg.strategy = s, s }

// Mode returns the dispatcher mode.
func (f *Fleet) Mode() Mode { return f.cfg.mode }

// MergeMax returns the largest merged batch: 1 when merging is off, which
// it is outside the adaptive mode.
func (f *Fleet) MergeMax() int {
	if f.cfg.mode != Adaptive {
		return 1
	}
	return f.cfg.mergeMax
}

// Sticky reports whether stage stickiness is on (adaptive mode only).
func (f *Fleet) Sticky() bool { return f.cfg.mode == Adaptive && f.cfg.sticky }

// Worker returns the worker named name.
func (f *Fleet) Worker(name string) (*Worker, bool) {
	w, ok := f.byName[name]
	return w, ok
}

// Workers lists all workers in registration order.
func (f *Fleet) Workers() []*Worker { return f.workers }

// Add registers a worker. Slots below 1 count as 1.
func (f *Fleet) Add(spec model.Worker) (*Worker, error) {
	if _, dup := f.byName[spec.Name]; dup {
		return nil, fmt.Errorf("worker %q is already registered", spec.Name)
	}
	if spec.Slots < 1 {
		spec.Slots = 1
	}
	if spec.State == "" {
		spec.State = model.WorkerReady
	}
	key := classKeyOf(&spec)
	c, ok := f.classIdx[key]
	if !ok {
		c = &class{idx: len(f.classes), capacity: spec.Capacity, labels: spec.Labels, slots: spec.Slots, cost: spec.CostPerHour, spec: spec}
		c.spec.Cached = nil
		f.classes = append(f.classes, c)
		f.classIdx[key] = c
	}
	w := &Worker{Idx: len(f.workers), Spec: spec, class: c, pos: len(c.members), hash: hashString(spec.Name, 0)}
	w.Spec.Cached = nil
	c.members = append(c.members, w)
	c.hashes = append(c.hashes, w.hash)
	c.free.grow(len(c.members))
	f.workers = append(f.workers, w)
	f.byName[spec.Name] = w
	c.workers++
	f.count(w, +1)
	f.epoch++
	f.normDirty = true
	f.SetCached(w, spec.Cached)
	return w, nil
}

// Remove unregisters a worker. The caller requeues its tasks first.
func (f *Fleet) Remove(w *Worker) {
	f.count(w, -1)
	w.class.workers--
	w.gone = true
	delete(f.byName, w.Spec.Name)
	if w.boundTo != "" {
		delete(f.bound, w.boundTo)
		w.boundTo = ""
	}
	f.SetCached(w, nil)
	f.normDirty = true
	// Fewer workers cannot make a failed placement succeed, but the
	// remembered diagnosis counts workers and may now be wrong.
	f.epoch++
}

// SetState drains, disables or readies a worker.
func (f *Fleet) SetState(w *Worker, s model.WorkerState) {
	if w.Spec.State == s {
		return
	}
	f.count(w, -1)
	w.Spec.State = s
	f.count(w, +1)
	f.epoch++
}

// count adds (sign=+1) or removes (sign=-1) w's contribution to its class.
func (f *Fleet) count(w *Worker, sign int) {
	c := w.class
	switch w.Spec.State {
	case model.WorkerDraining:
		c.draining += sign
	case model.WorkerDisabled:
		c.disabled += sign
	default:
		c.slotsUp += sign * w.Spec.Slots
		c.freeSlots += sign * w.FreeSlots()
		if sign > 0 && w.FreeSlots() > 0 && w.boundTo == "" && !w.held {
			c.free.add(w.pos)
		} else if sign < 0 {
			c.free.remove(w.pos)
		}
	}
}

// Occupy records that w started a task needing req.
func (f *Fleet) Occupy(w *Worker, req model.Resources) {
	w.Running++
	w.Used = w.Used.Add(req)
	if w.Takes() {
		w.class.freeSlots--
		if w.FreeSlots() <= 0 {
			w.class.free.remove(w.pos)
		}
	}
}

// Release records that a task needing req left w.
func (f *Fleet) Release(w *Worker, req model.Resources) {
	w.Running--
	w.Used = w.Used.Sub(req)
	if w.Takes() {
		w.class.freeSlots++
		if w.FreeSlots() > 0 && w.boundTo == "" && !w.held {
			w.class.free.add(w.pos)
		}
	}
	f.epoch++
}

// Shape interns the placement requirement of a task.
func (f *Fleet) Shape(req model.Resources, sel model.Selector) *Shape {
	key := shapeKey{req: req, sel: sel.String()}
	if s, ok := f.shapes[key]; ok {
		return s
	}
	s := &Shape{Req: req, Sel: sel}
	f.shapes[key] = s
	return s
}

// feasible reports whether class c can ever run shape s: whether it passes
// every class filter of the chain. The answer is cached per shape and
// class.
func (f *Fleet) feasible(s *Shape, c *class) bool {
	for len(s.feas) <= c.idx {
		s.feas = append(s.feas, 0)
		s.short = append(s.short, 0)
	}
	switch s.feas[c.idx] {
	case 1:
		return true
	case 2:
		return false
	}
	if code, ok := neverRuns(s, &c.spec); ok {
		s.short[c.idx], s.feas[c.idx] = code, 2
		return false
	}
	s.feas[c.idx] = 1
	return true
}

// neverRuns returns the first class filter that removes a worker
// registered as w for shape s, if one does.
func neverRuns(s *Shape, w *model.Worker) (FilterCode, bool) {
	for i := range chain {
		switch fl := &chain[i]; {
		case fl.dim != nil:
			if fl.dim.short(&s.Req, &w.Capacity) {
				return FilterCode(i), true
			}
		case fl.never != nil:
			if fl.never(s, w) {
				return FilterCode(i), true
			}
		}
	}
	return 0, false
}

// Never returns the first class filter that removes w for shape s, if one
// does: w can never run a task of shape s. It reads the feasibility cache.
func (f *Fleet) Never(s *Shape, w *Worker) (FilterCode, bool) {
	if f.feasible(s, w.class) {
		return 0, false
	}
	return s.short[w.class.idx], true
}

// fitsNow reports whether w's unused resources hold req. It reads the
// capacity from the class (the same for all its workers), which is already
// in cache, rather than from the worker.
func fitsNow(w *Worker, req model.Resources) bool {
	return req.FitsIn(w.class.capacity.Sub(w.Used))
}

// Place picks a worker for a task of shape s, or says why none can take it.
// It does not occupy the worker; the caller does, once it commits.
func (f *Fleet) Place(s *Shape) (*Worker, model.Reason) {
	if s.failEpoch == f.epoch {
		return nil, s.failed
	}
	var best *Worker
	for _, c := range f.classes {
		if c.free.n == 0 || !f.feasible(s, c) {
			continue
		}
		w := c.firstFit(s.Req)
		if w == nil {
			continue
		}
		if best == nil || f.strategy.better(w, best) {
			best = w
		}
	}
	if best != nil {
		return best, model.Reason{}
	}
	s.failEpoch = f.epoch
	s.failed = f.diagnose(s)
	return nil, s.failed
}

// firstFit returns the class's first free worker, in registration order,
// with enough unused resources left for req. One-slot workers and idle
// multi-slot workers fit whenever the class is feasible, so the first free
// worker is the answer; only partly used multi-slot workers make it look on.
func (c *class) firstFit(req model.Resources) *Worker {
	for i := c.free.next(0); i >= 0; i = c.free.next(i + 1) {
		if w := c.members[i]; fitsNow(w, req) {
			return w
		}
	}
	return nil
}

// diagnose explains why no worker takes shape s, counting the workers each
// filter removed: the answer to "why is my task pending".
func (f *Fleet) diagnose(s *Shape) model.Reason {
	m := f.counts(s)
	// The figures rarely change between failures of one shape (a failure
	// is diagnosed again each time capacity is freed): reuse the message.
	if s.diagValid && s.diagMetric == *m {
		return s.diagReason
	}
	r := m.reason(s)
	s.diagMetric, s.diagReason, s.diagValid = *m, r, true
	return r
}

// metric counts the registered workers each filter of the chain removed
// for one task shape, by filter code, as placement records them when a
// placement fails (Nomad's AllocMetric.FilterNode, per class): the class
// filters' counts, the draining and disabled workers among the rest, and
// the others as busy, whatever keeps them (their slots, a binding to
// another job). Explain reads the class filters' counts and asks the
// worker filters of each worker (Fleet.Filter).
type metric struct {
	Workers int
	Removed [NumFilters]int
}

// counts returns the metric of shape s, recorded at the current epoch or
// counted now (and recorded).
func (f *Fleet) counts(s *Shape) *metric {
	if s.metricEpoch == f.epoch {
		return &s.metric
	}
	m := metric{}
	for _, c := range f.classes {
		if c.workers == 0 {
			continue
		}
		m.Workers += c.workers
		if !f.feasible(s, c) {
			m.Removed[s.short[c.idx]] += c.workers
			continue
		}
		m.Removed[FilterState] += c.draining + c.disabled
		m.Removed[FilterBusy] += c.workers - c.draining - c.disabled
	}
	s.metric, s.metricEpoch = m, f.epoch
	return &s.metric
}

func (m *metric) reason(s *Shape) model.Reason {
	var parts []string
	for _, code := range reasonOrder {
		switch n := m.Removed[code]; {
		case n == 0:
		case code.Never():
			parts = append(parts, fmt.Sprintf("%d lack %s", n, code.Words()))
		default:
			parts = append(parts, fmt.Sprintf("%d %s", n, code.Words()))
		}
	}
	busy, unavailable := m.Removed[FilterBusy], m.Removed[FilterState]
	detail := strings.Join(parts, ", ")
	need := s.Req.String()
	if len(s.Sel) > 0 {
		need += " on " + s.Sel.String()
	}
	switch {
	case m.Workers == 0:
		return model.Because(model.ReasonUnschedulable, "no workers are registered")
	case busy > 0:
		return model.Because(model.ReasonNoFreeSlot, "needs %s; all %d workers that fit are busy (%d workers: %s)", need, busy, m.Workers, detail)
	case unavailable > 0:
		return model.Because(model.ReasonWorkersDisabled, "needs %s; the %d workers that fit are draining or disabled (%d workers: %s)", need, unavailable, m.Workers, detail)
	default:
		return model.Because(model.ReasonUnschedulable, "needs %s; no worker can ever run it (%d workers: %s)", need, m.Workers, detail)
	}
}

// PoolSlots returns the slots and free slots of ready workers that sel
// matches: the capacity a queue whose pool is sel can use.
func (f *Fleet) PoolSlots(sel model.Selector) (slots, free int) {
	key := sel.String()
	m := f.pools[key]
	for len(m) < len(f.classes) {
		m = append(m, sel.Matches(f.classes[len(m)].labels))
	}
	f.pools[key] = m
	for i, c := range f.classes {
		if m[i] {
			slots += c.slotsUp
			free += c.freeSlots
		}
	}
	return slots, free
}

// PoolAmounts returns what the ready workers of the pool sel selects offer
// of each resource kind (GPU memory over all their devices), for a policy
// that measures dominant shares.
func (f *Fleet) PoolAmounts(sel model.Selector) model.Amounts {
	f.PoolSlots(sel) // fills the pool's class memo
	m := f.pools[sel.String()]
	var a model.Amounts
	for i, c := range f.classes {
		if m[i] && c.slots > 0 {
			a = a.Add(model.AmountsOf(c.capacity).Times(int64(c.slotsUp / c.slots)))
		}
	}
	return a
}

// freeSet is a set of class member positions: a bitset with a count and a
// low-water mark below which no bit is set, so the first member is found
// without scanning the words that placements have already emptied.
type freeSet struct {
	words []uint64
	n     int // members in the set
	lo    int // no bit is set in words[:lo]
}

func (s *freeSet) grow(members int) {
	for len(s.words)*64 < members {
		s.words = append(s.words, 0)
	}
}

func (s *freeSet) has(i int) bool { return s.words[i>>6]&(1<<(uint(i)&63)) != 0 }

func (s *freeSet) add(i int) {
	if s.has(i) {
		return
	}
	s.words[i>>6] |= 1 << (uint(i) & 63)
	s.n++
	if i>>6 < s.lo {
		s.lo = i >> 6
	}
}

func (s *freeSet) remove(i int) {
	if !s.has(i) {
		return
	}
	s.words[i>>6] &^= 1 << (uint(i) & 63)
	s.n--
}

// next returns the smallest member ≥ i, or -1. A search from the bottom
// moves the low-water mark up past the empty words it crossed.
func (s *freeSet) next(i int) int {
	if s.n == 0 {
		return -1
	}
	fromLo := i <= s.lo<<6
	if fromLo {
		i = s.lo << 6
	}
	w := i >> 6
	if w >= len(s.words) {
		return -1
	}
	if word := s.words[w] >> (uint(i) & 63); word != 0 {
		return i + bits.TrailingZeros64(word)
	}
	for w++; w < len(s.words); w++ {
		if s.words[w] != 0 {
			if fromLo {
				s.lo = w
			}
			return w<<6 + bits.TrailingZeros64(s.words[w])
		}
	}
	if fromLo {
		s.lo = len(s.words)
	}
	return -1
}

// NoneEver reports whether no registered worker can ever run a task of
// shape s: workers are registered, and every one lacks something it cannot
// gain while registered (labels, hardware), whatever its state. The
// reason counts the workers by what they lack. It reads the feasibility
// cache, so it costs a check per worker class at most.
func (f *Fleet) NoneEver(s *Shape) (model.Reason, bool) {
	m := f.counts(s)
	if m.Workers == 0 || m.Removed[FilterBusy]+m.Removed[FilterState] > 0 {
		return model.Reason{}, false
	}
	return m.reason(s), true
}

// Needs is what a task of shape s asks of a worker, in words: its request
// and, if any, its labels.
func (s *Shape) Needs() string {
	need := s.Req.String()
	if len(s.Sel) > 0 {
		need += " on " + s.Sel.String()
	}
	return need
}
