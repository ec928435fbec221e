package place

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/allot-sched/allot/internal/model"
)

// FilterCode names a placement filter: its position in the chain. A worker
// a filter removes is counted under its code, by the placement diagnosis
// and by explain.
type FilterCode uint8

// The placement filters, in chain order: what a worker can never offer
// first (its labels, then its hardware, scarcest first), then what it may
// offer later (a ready state, not being bound to another job, being the
// worker the task is pinned to, a free slot with enough left unused).
const (
	FilterLabels FilterCode = iota
	FilterGPUs
	FilterGPUMemory
	FilterMemory
	FilterCPU
	FilterState
	FilterBound
	FilterAssigned
	FilterBusy
	// NumFilters counts the filters; it is no filter.
	NumFilters
)

// chain is the ordered list of placement filters, indexed by code. Adding a
// filter means adding its code above and its entry here, and the model
// field it reads; everything else (the class key, the feasibility cache,
// the pending reason, explain's counts and the closest worker's lacks)
// follows from the entry.
var chain [NumFilters]filter

func init() {
	chain = [NumFilters]filter{
		FilterLabels: {name: "labels", roundRobin: true,
			reads: func(b []byte, w *model.Worker) []byte { return appendString(b, w.Labels.String()) },
			never: func(s *Shape, w *model.Worker) bool { return !s.Sel.Matches(w.Labels) },
			asks:  func(s *Shape) bool { return len(s.Sel) > 0 },
			lacks: func(p *probe, dst []Lack) ([]Lack, float64) {
				for _, k := range p.keys() {
					if have, ok := p.w.Spec.Labels[k]; !ok || have != p.s.Sel[k] {
						if !ok {
							have = "(none)"
						}
						dst = append(dst, Lack{What: "label " + k, Need: p.s.Sel[k], Have: have})
					}
				}
				return dst, 0
			},
			why: func(p *probe) string {
				l, _ := chain[FilterLabels].lacks(p, nil)
				return fmt.Sprintf("selector %s does not match (e.g. %s has %s)", p.s.Sel, p.w.Spec.Name, l[0].Have)
			}},
		FilterGPUs: hardware("gpus", &dimension{field: fieldGPUs,
			unit: func(n int64) string { return fmt.Sprintf("%d GPU", n) },
			why:  func(r model.Resources) string { return fmt.Sprintf("fewer than %d GPUs", r.GPUs) }}),
		// GPU memory is per device, and a task that asks for no GPU needs
		// none.
		FilterGPUMemory: hardware("gpu_memory", &dimension{field: fieldGPUMemory, perGPU: true, unit: megabytes,
			why: func(r model.Resources) string { return fmt.Sprintf("GPUs with less than %d MB each", r.GPUMemoryMB) }}),
		FilterMemory: hardware("memory", &dimension{field: fieldMemory, unit: megabytes,
			why: func(r model.Resources) string { return fmt.Sprintf("less than %d MB of memory", r.MemoryMB) }}),
		FilterCPU: hardware("cpu", &dimension{field: fieldCPU,
			unit: func(m int64) string { return fmt.Sprintf("%g CPU", float64(m)/1000) },
			why:  func(r model.Resources) string { return fmt.Sprintf("fewer than %g CPUs", float64(r.MilliCPU)/1000) }}),
		FilterState: {name: "draining_or_disabled",
			now: func(p *probe) bool { return p.w.Spec.State != model.WorkerReady },
			lacks: func(p *probe, dst []Lack) ([]Lack, float64) {
				return append(dst, Lack{What: "state", Need: string(model.WorkerReady), Have: string(p.w.Spec.State)}), 0
			},
			why: func(*probe) string { return "draining or disabled: they take no new tasks" }},
		// A worker bound to another job (static-worker mode) is out of the
		// general pool; for a job bound to a worker, so is every other.
		FilterBound: {name: "bound_to_other_job",
			now: func(p *probe) bool { return p.boundElsewhere() || p.sc.PinBound && p.sc.Pin != p.w },
			lacks: func(p *probe, dst []Lack) ([]Lack, float64) {
				if p.boundElsewhere() {
					return append(dst, Lack{What: "bound", Need: "unbound or bound to " + p.sc.Job, Have: "bound to " + p.w.boundTo}), 0
				}
				return append(dst, Lack{What: "bound", Need: p.pinNeed(), Have: "another worker"}), 0
			},
			why: func(*probe) string {
				return "bound to another job, or not the worker this job is bound to (static-worker mode)"
			}},
		// Stage stickiness and the fixed-pipeline mode pin a task to one
		// worker.
		FilterAssigned: {name: "not_assigned_worker",
			now: func(p *probe) bool {
				return p.sc.Pin != nil && !p.sc.PinBound && p.sc.Pin != p.w && !p.boundElsewhere()
			},
			lacks: func(p *probe, dst []Lack) ([]Lack, float64) {
				return append(dst, Lack{What: "assigned", Need: p.pinNeed(), Have: "another worker"}), 0
			},
			why: func(p *probe) string {
				return fmt.Sprintf("the tasks may only run on worker %s, %s", p.sc.Pin.Spec.Name, p.sc.PinWhy)
			}},
		// A worker that can run the task is busy when every slot is in
		// use or the tasks it runs leave too little unused (which is
		// only asked of a worker whose hardware holds the task).
		FilterBusy: {name: "busy",
			reads: func(b []byte, w *model.Worker) []byte {
				c := w.Capacity
				return binary.AppendVarint(appendInts(b, c.MilliCPU, c.MemoryMB, c.GPUs, c.GPUMemoryMB), int64(w.Slots))
			},
			now: func(p *probe) bool { return p.w.FreeSlots() < 1 || p.hard == 0 && !fitsNow(p.w, p.s.Req) },
			lacks: func(p *probe, dst []Lack) ([]Lack, float64) {
				w := p.w
				if w.FreeSlots() < 1 {
					have := ""
					if p.detail {
						have = fmt.Sprintf("%d of %d slots in use", w.Running, w.Spec.Slots)
					}
					return append(dst, Lack{What: "slot", Need: "a free slot", Have: have}), 0
				}
				if p.hard > 0 {
					return dst, 0
				}
				free := w.Spec.Capacity.Sub(w.Used)
				for i := range chain {
					if d := chain[i].dim; d != nil && d.short(&p.s.Req, &free) {
						return append(dst, Lack{What: "free " + chain[i].name, Need: d.unit(d.need(&p.s.Req)), Have: d.unit(d.field.of(&free)) + " unused"}), 0
					}
				}
				return dst, 0
			},
			why: func(*probe) string { return "every slot in use, or too little left unused by the tasks they run" }},
	}
	// The pending reason predates the chain and lists GPU memory before
	// the GPU count (docs and tests show both orders): it keeps that order,
	// the chain's otherwise.
	copy(reasonOrder[:], Filters())
	reasonOrder[FilterGPUs], reasonOrder[FilterGPUMemory] = FilterGPUMemory, FilterGPUs
}

// reasonOrder is the order in which a pending reason lists the filters'
// counts.
var reasonOrder [NumFilters]FilterCode

// filter is one step of the chain. A class filter (never set) reads only
// what all workers of a class share, so it is decided once per task shape
// and worker class, and a worker it removes can never run the task; a
// worker filter (now set) reads what changes while the worker runs and is
// asked of each worker whose class passed every class filter.
type filter struct {
	// name is the filter's name in explain's counts and the API, and, in
	// words, in the pending reason.
	name string
	// reads appends what the filter reads of a worker's registration to
	// the worker's class key: workers that agree for every filter form a
	// class.
	reads func(b []byte, w *model.Worker) []byte
	// never reports whether a worker registered as w can never run a task
	// of shape s (class filters). A hardware filter's is its dimension's
	// short.
	never func(s *Shape, w *model.Worker) bool
	// asks, when set, reports whether never can remove any worker for
	// shape s: the placement without the feasibility cache skips the
	// filters that ask nothing.
	asks func(s *Shape) bool
	// now reports whether worker p.w cannot take the task now for a reason
	// that may pass (worker filters). It decides only for a worker every
	// class filter passed; for another (p.hard > 0) it still answers,
	// for the closest worker's count of what it may offer later.
	now func(p *probe) bool
	// lacks appends to dst what p.w lacks by this filter's measure,
	// nothing when it passes, with the relative hardware shortfall;
	// without p.detail only What needs to be set.
	lacks func(p *probe, dst []Lack) ([]Lack, float64)
	// why says what the workers the filter removed lack; p.w is the first
	// of them.
	why func(p *probe) string
	// dim is the hardware dimension of a hardware filter.
	dim *dimension
	// roundRobin says that the round-robin mode, which does not look at a
	// task's resources, applies the filter too.
	roundRobin bool
}

// dimension is one hardware dimension: its field of model.Resources, how
// to write an amount, and what the workers that have too little of it
// lack. A per-GPU dimension is asked only of a task that needs a GPU.
type dimension struct {
	field  field
	perGPU bool
	unit   func(int64) string
	why    func(need model.Resources) string
}

// field is a field of model.Resources. The hardware filters read their
// dimension through a switch rather than a function value: the placement
// without the feasibility cache asks them of every worker for every task.
type field uint8

const (
	fieldGPUs field = iota
	fieldGPUMemory
	fieldMemory
	fieldCPU
)

func (f field) of(r *model.Resources) int64 {
	switch f {
	case fieldGPUs:
		return r.GPUs
	case fieldGPUMemory:
		return r.GPUMemoryMB
	case fieldMemory:
		return r.MemoryMB
	}
	return r.MilliCPU
}

// need is what a task asking for r needs of the dimension.
func (d *dimension) need(r *model.Resources) int64 {
	if d.perGPU && r.GPUs == 0 {
		return 0
	}
	return d.field.of(r)
}

// short reports whether a worker with capacity have lacks the dimension
// for a task asking for need.
func (d *dimension) short(need, have *model.Resources) bool { return d.need(need) > d.field.of(have) }

// hardware returns the class filter of one hardware dimension.
func hardware(name string, d *dimension) filter {
	return filter{name: name, dim: d,
		reads: func(b []byte, w *model.Worker) []byte { return binary.AppendVarint(b, d.field.of(&w.Capacity)) },
		never: func(s *Shape, w *model.Worker) bool { return d.short(&s.Req, &w.Capacity) },
		lacks: func(p *probe, dst []Lack) ([]Lack, float64) {
			n, h := d.need(&p.s.Req), d.field.of(&p.w.Spec.Capacity)
			if n <= h {
				return dst, 0
			}
			l := Lack{What: name}
			if p.detail {
				l.Need, l.Have = d.unit(n), d.unit(h)
			}
			return append(dst, l), float64(n-h) / float64(n)
		},
		why: func(p *probe) string { return d.why(p.s.Req) }}
}

func megabytes(n int64) string { return fmt.Sprintf("%d MB", n) }

// String returns the filter's name, as explain and the API show it.
func (c FilterCode) String() string {
	if c < NumFilters {
		return chain[c].name
	}
	return fmt.Sprintf("filter(%d)", int(c))
}

// MarshalText writes c's name.
func (c FilterCode) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// Words returns the filter's name as a message writes it ("gpu memory").
func (c FilterCode) Words() string { return strings.ReplaceAll(c.String(), "_", " ") }

// Never reports whether c is a class filter: a worker it removes can never
// run the task, whatever it runs or however it is set.
func (c FilterCode) Never() bool { return c < NumFilters && chain[c].never != nil }

// Filters lists the filter codes in chain order.
func Filters() []FilterCode {
	out := make([]FilterCode, NumFilters)
	for i := range out {
		out[i] = FilterCode(i)
	}
	return out
}

// neverCheck is the class filters compiled for one shape: the hardware
// ones as (field, amount) pairs, so that checking a worker calls no
// function value, and the others that ask something of the shape. The
// placement without the feasibility cache checks every worker with it.
type neverCheck struct {
	s    *Shape
	dims [NumFilters]struct {
		f    field
		need int64
	}
	nd     int
	others []func(*Shape, *model.Worker) bool
}

func compileNever(s *Shape) *neverCheck {
	c := &neverCheck{s: s}
	for i := range chain {
		switch fl := &chain[i]; {
		case fl.dim != nil:
			c.dims[c.nd].f, c.dims[c.nd].need = fl.dim.field, fl.dim.need(&s.Req)
			c.nd++
		case fl.never != nil && (fl.asks == nil || fl.asks(s)):
			c.others = append(c.others, fl.never)
		}
	}
	return c
}

// fails reports whether some class filter removes a worker registered as
// w.
func (c *neverCheck) fails(w *model.Worker) bool {
	for _, d := range c.dims[:c.nd] {
		if d.need > d.f.of(&w.Capacity) {
			return true
		}
	}
	for _, never := range c.others {
		if never(c.s, w) {
			return true
		}
	}
	return false
}

// classKeyOf is the class key of a worker: what every filter reads of it,
// and its cost, which the score reads besides the hardware.
func classKeyOf(w *model.Worker) string {
	b := make([]byte, 0, 64)
	for i := range chain {
		if r := chain[i].reads; r != nil {
			b = r(b, w)
		}
	}
	return string(binary.BigEndian.AppendUint64(b, math.Float64bits(w.CostPerHour)))
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendInts(b []byte, v ...int64) []byte {
	for _, x := range v {
		b = binary.AppendVarint(b, x)
	}
	return b
}

// Lack is one thing a worker does not offer a task: a label, a resource, a
// ready state, a free slot, with what the task needs and what the worker
// has.
type Lack struct {
	What, Need, Have string
}

// Scope is what the worker filters know of a task besides its shape, when
// explain asks: its job (a worker bound to another job does not take it)
// and the one worker it is pinned to, if any.
type Scope struct {
	Job string
	// Pin is the only worker the task may use now (its job's in the
	// static-worker mode, its type's in the fixed-pipeline mode, its
	// parent's with stage stickiness), or nil.
	Pin *Worker
	// PinBound says that Pin is the job's worker in the static-worker mode:
	// the others are counted under FilterBound, not FilterAssigned.
	PinBound bool
	// PinWhy says why the task is pinned, for messages ("which ran its
	// parent prep (stage stickiness)").
	PinWhy string
}

// probe is one question to the chain: worker w against shape s for a task
// in scope sc. hard counts what w lacks by the class filters.
type probe struct {
	s      *Shape
	w      *Worker
	sc     *Scope
	hard   int
	detail bool
	sorted []string // s.Sel's keys, sorted, once asked
}

func (p *probe) keys() []string {
	if p.sorted == nil && len(p.s.Sel) > 0 {
		p.sorted = make([]string, 0, len(p.s.Sel))
		for k := range p.s.Sel {
			p.sorted = append(p.sorted, k)
		}
		slices.Sort(p.sorted)
	}
	return p.sorted
}

// boundElsewhere reports whether p.w is bound to a job other than the
// task's.
func (p *probe) boundElsewhere() bool { return p.w.boundTo != "" && p.w.boundTo != p.sc.Job }

func (p *probe) pinNeed() string {
	if !p.detail {
		return ""
	}
	return "worker " + p.sc.Pin.Spec.Name + ", " + p.sc.PinWhy
}
