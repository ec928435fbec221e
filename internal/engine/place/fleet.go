// Package place decides which worker runs a task. Workers with identical
// hardware, labels, slots and cost form a class; whether a task shape fits a
// class is decided once and cached, and each class keeps its workers that have
// a free slot in a heap, so a placement on a fleet of 10,000 workers in four
// shapes looks at four classes, not 10,000 workers.
package place

import (
	"container/heap"
	"fmt"
	"sort"
	"strings"

	"github.com/allot-sched/allot/internal/model"
)

// Worker is a worker as placement tracks it.
type Worker struct {
	// Idx is the registration order, which first-fit follows.
	Idx     int
	Spec    model.Worker
	Used    model.Resources
	Running int
	class   *class
	heapPos int // position in class.free, or -1
	gone    bool
}

// FreeSlots is how many more tasks w can run.
func (w *Worker) FreeSlots() int { return w.Spec.Slots - w.Running }

// Takes reports whether w takes new tasks now.
func (w *Worker) Takes() bool { return !w.gone && w.Spec.State == model.WorkerReady }

type class struct {
	idx       int
	capacity  model.Resources
	labels    model.Labels
	slots     int
	cost      float64
	free      freeHeap // ready workers with a free slot, lowest Idx first
	freeSlots int      // free slots of ready workers
	slotsUp   int      // all slots of ready workers
	workers   int
	draining  int
	disabled  int
}

func classKey(w model.Worker) string {
	return fmt.Sprintf("%d/%d/%d/%d|%s|%d|%g", w.Capacity.MilliCPU, w.Capacity.MemoryMB,
		w.Capacity.GPUs, w.Capacity.GPUMemoryMB, w.Labels.String(), w.Slots, w.CostPerHour)
}

// Shape is a task's placement requirement: resources and a selector. Shapes
// are interned by the Fleet, so all tasks with the same requirement share one
// feasibility cache and one failure memo.
type Shape struct {
	Req model.Resources
	Sel model.Selector
	key string
	// feas[c] is 0 when unknown, 1 when class c can run the shape, and 2 when
	// it cannot (then short[c] says why).
	feas  []uint8
	short []string
	// A shape that found no worker stays unplaceable until capacity is
	// released: failEpoch remembers the fleet epoch of the failure.
	failEpoch uint64
	failed    model.Reason
}

// Fleet is the set of workers with their classes.
type Fleet struct {
	workers  []*Worker
	byName   map[string]*Worker
	classes  []*class
	classIdx map[string]*class
	shapes   map[string]*Shape
	pools    map[string][]bool // selector key → matches class c
	strategy Strategy
	// epoch grows whenever capacity is added or freed, which invalidates
	// remembered placement failures.
	epoch uint64
}

// NewFleet returns an empty fleet that selects workers with s.
func NewFleet(s Strategy) *Fleet {
	return &Fleet{byName: map[string]*Worker{}, classIdx: map[string]*class{},
		shapes: map[string]*Shape{}, pools: map[string][]bool{}, strategy: s, epoch: 1}
}

// SetStrategy changes the selection strategy.
func (f *Fleet) SetStrategy(s Strategy) { f.strategy = s }

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
	key := classKey(spec)
	c, ok := f.classIdx[key]
	if !ok {
		c = &class{idx: len(f.classes), capacity: spec.Capacity, labels: spec.Labels, slots: spec.Slots, cost: spec.CostPerHour}
		f.classes = append(f.classes, c)
		f.classIdx[key] = c
	}
	w := &Worker{Idx: len(f.workers), Spec: spec, class: c, heapPos: -1}
	f.workers = append(f.workers, w)
	f.byName[spec.Name] = w
	c.workers++
	f.count(w, +1)
	f.epoch++
	return w, nil
}

// Remove unregisters a worker. The caller requeues its tasks first.
func (f *Fleet) Remove(w *Worker) {
	f.count(w, -1)
	w.class.workers--
	w.gone = true
	delete(f.byName, w.Spec.Name)
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
		if sign > 0 && w.FreeSlots() > 0 {
			heap.Push(&c.free, w)
		} else if sign < 0 && w.heapPos >= 0 {
			heap.Remove(&c.free, w.heapPos)
		}
	}
}

// Occupy records that w started a task needing req.
func (f *Fleet) Occupy(w *Worker, req model.Resources) {
	w.Running++
	w.Used = w.Used.Add(req)
	if w.Takes() {
		w.class.freeSlots--
		if w.FreeSlots() == 0 && w.heapPos >= 0 {
			heap.Remove(&w.class.free, w.heapPos)
		}
	}
}

// Release records that a task needing req left w.
func (f *Fleet) Release(w *Worker, req model.Resources) {
	w.Running--
	w.Used = w.Used.Sub(req)
	if w.Takes() {
		w.class.freeSlots++
		if w.heapPos < 0 {
			heap.Push(&w.class.free, w)
		}
	}
	f.epoch++
}

// Shape interns the placement requirement of a task.
func (f *Fleet) Shape(req model.Resources, sel model.Selector) *Shape {
	key := fmt.Sprintf("%d/%d/%d/%d|%s", req.MilliCPU, req.MemoryMB, req.GPUs, req.GPUMemoryMB, sel.String())
	if s, ok := f.shapes[key]; ok {
		return s
	}
	s := &Shape{Req: req, Sel: sel, key: key}
	f.shapes[key] = s
	return s
}

// feasible reports whether class c can ever run shape s, caching the answer.
func (f *Fleet) feasible(s *Shape, c *class) bool {
	for len(s.feas) <= c.idx {
		s.feas = append(s.feas, 0)
		s.short = append(s.short, "")
	}
	switch s.feas[c.idx] {
	case 1:
		return true
	case 2:
		return false
	}
	why := ""
	if !s.Sel.Matches(c.labels) {
		why = "labels"
	} else {
		why = s.Req.Shortfall(c.capacity)
	}
	s.short[c.idx] = why
	if why == "" {
		s.feas[c.idx] = 1
		return true
	}
	s.feas[c.idx] = 2
	return false
}

func fitsNow(w *Worker, req model.Resources) bool {
	return req.FitsIn(w.Spec.Capacity.Sub(w.Used))
}

// Place picks a worker for a task of shape s, or says why none can take it.
// It does not occupy the worker; the caller does, once it commits.
func (f *Fleet) Place(s *Shape) (*Worker, model.Reason) {
	if s.failEpoch == f.epoch {
		return nil, s.failed
	}
	var best *Worker
	for _, c := range f.classes {
		if c.free.Len() == 0 || !f.feasible(s, c) {
			continue
		}
		w := c.free[0]
		if !fitsNow(w, s.Req) {
			w = scan(c, s.Req)
			if w == nil {
				continue
			}
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

// scan looks through a class's free workers, lowest index first, for one with
// enough unused resources left; only multi-slot workers get here.
func scan(c *class, req model.Resources) *Worker {
	cands := make([]*Worker, 0, len(c.free))
	for _, w := range c.free {
		if fitsNow(w, req) {
			cands = append(cands, w)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].Idx < cands[j].Idx })
	return cands[0]
}

// diagnose explains why no worker takes shape s, counting the workers each
// filter removed: the answer to "why is my task pending".
func (f *Fleet) diagnose(s *Shape) model.Reason {
	removed := map[string]int{}
	var busy, unavailable, total int
	for _, c := range f.classes {
		if c.workers == 0 {
			continue
		}
		total += c.workers
		if !f.feasible(s, c) {
			removed[s.short[c.idx]] += c.workers
			continue
		}
		unavailable += c.draining + c.disabled
		busy += c.workers - c.draining - c.disabled
	}
	var parts []string
	for _, k := range []string{"labels", "gpu_memory", "gpus", "memory", "cpu"} {
		if n := removed[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d lack %s", n, strings.ReplaceAll(k, "_", " ")))
		}
	}
	if unavailable > 0 {
		parts = append(parts, fmt.Sprintf("%d draining or disabled", unavailable))
	}
	if busy > 0 {
		parts = append(parts, fmt.Sprintf("%d busy", busy))
	}
	detail := strings.Join(parts, ", ")
	need := s.Req.String()
	if len(s.Sel) > 0 {
		need += " on " + s.Sel.String()
	}
	switch {
	case total == 0:
		return model.Because(model.ReasonUnschedulable, "no workers are registered")
	case busy > 0:
		return model.Because(model.ReasonNoFreeSlot, "needs %s; all %d workers that fit are busy (%d workers: %s)", need, busy, total, detail)
	case unavailable > 0:
		return model.Because(model.ReasonWorkersDisabled, "needs %s; the %d workers that fit are draining or disabled (%d workers: %s)", need, unavailable, total, detail)
	default:
		return model.Because(model.ReasonUnschedulable, "needs %s; no worker can ever run it (%d workers: %s)", need, total, detail)
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

// freeHeap orders workers by registration index.
type freeHeap []*Worker

func (h freeHeap) Len() int           { return len(h) }
func (h freeHeap) Less(i, j int) bool { return h[i].Idx < h[j].Idx }
func (h freeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapPos = i
	h[j].heapPos = j
}
func (h *freeHeap) Push(x any) {
	w := x.(*Worker)
	w.heapPos = len(*h)
	*h = append(*h, w)
}
func (h *freeHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.heapPos = -1
	return w
}
