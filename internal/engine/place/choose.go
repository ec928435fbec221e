package place

import (
	"fmt"
	"math/bits"
	"sort"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// Request is one task's placement question: what it needs, who it is (for
// the jitter hash and the mode bindings) and what it prefers.
type Request struct {
	Shape *Shape
	// Job and Task name the task; Hash is TaskHash(Job, Task), computed
	// when 0.
	Job, Task string
	Hash      uint64
	Category  model.Category
	// Model and Dataset are the contexts the task loads (context reuse).
	Model, Dataset string
	// Type is the task type of the fixed-pipeline mode.
	Type string
	// Sticky is the worker that ran the task's StickTo parent, nil when
	// none; StickTo names that parent for messages.
	Sticky  *Worker
	StickTo string
	// Affinity is the set of workers that ran the job's tasks (intrinsic
	// affinity, seed 001), nil when the policy does not ask for it; a free
	// one is preferred before the strategy. Until AffinityUntil the task
	// rather waits than takes a worker outside the set.
	Affinity      *Affinity
	AffinityUntil time.Time
	// Now is the time hints are judged fresh at.
	Now time.Time
}

// Via says how a worker was chosen.
type Via uint8

// How a worker was chosen, in Info.Via.
const (
	ViaScore         Via = iota // the best λ score among the candidates
	ViaReuse                    // a fresh cache hint, then the score
	ViaFirstFit                 // the first candidate in registration order
	ViaMinSatisfying            // the smallest candidate
	ViaSticky                   // the parent's worker (stage stickiness)
	ViaBound                    // the job's worker (static-worker mode)
	ViaPipeline                 // the task type's worker (fixed-pipeline mode)
	ViaRoundRobin               // the next free worker in turn
	ViaMerged                   // rode along in a merged batch
	ViaAffinity                 // a worker that ran the job's tasks (intrinsic affinity)
)

var viaNames = [...]string{ViaScore: "score", ViaReuse: "reuse", ViaFirstFit: "first-fit", ViaMinSatisfying: "min-satisfying",
	ViaSticky: "sticky", ViaBound: "bound", ViaPipeline: "pipeline", ViaRoundRobin: "round-robin", ViaMerged: "merged", ViaAffinity: "affinity"}

// String returns the name of v, as logs and JSON show it.
func (v Via) String() string {
	if int(v) < len(viaNames) {
		return viaNames[v]
	}
	return fmt.Sprintf("via(%d)", int(v))
}

// MarshalText writes v's name.
func (v Via) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// MarshalText writes m's name.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// MarshalText writes s's name.
func (s Strategy) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Info records how a task's worker was chosen, for logs and metrics: every
// dispatch carries the candidate pool size, the reuse hits, λ and the
// winning score (seed 002). It is small, because every start carries one.
type Info struct {
	Mode     Mode     `json:"mode"`
	Strategy Strategy `json:"strategy"`
	Via      Via      `json:"via"`
	// ReuseHits counts the task's contexts (model, dataset) the chosen
	// worker holds with a fresh hint.
	ReuseHits uint8 `json:"reuseHits"`
	// Pool counts the candidates: free workers that can run the task (1
	// when a binding or stickiness decided).
	Pool   int32   `json:"pool"`
	Lambda float64 `json:"lambda"`
	// Score is the chosen worker's score for the task, jitter included.
	Score float64 `json:"score"`
}

// Choice is the answer to a Request.
type Choice struct {
	Worker *Worker
	Info   Info
}

// Choose finds a worker for r, or says why none takes it now. It does not
// occupy the worker; the caller does, and then calls Started. A
// sticky_worker_busy reason means the task waits for its parent's worker.
func (f *Fleet) Choose(r *Request) (Choice, model.Reason) {
	if f.normDirty {
		f.normalise()
	}
	if r.Hash == 0 {
		r.Hash = TaskHash(r.Job, r.Task)
	}
	k := categoryIndex(r.Category)
	info := Info{Mode: f.cfg.mode, Strategy: f.cfg.strategy, Lambda: f.cfg.lambda[k]}
	switch f.cfg.mode {
	case RoundRobin:
		return f.roundRobin(r, k, info)
	case StaticWorker:
		if w := f.bound[r.Job]; w != nil {
			info.Via = ViaBound
			return f.assigned(r, k, w, info, func() string {
				return fmt.Sprintf("job %q is bound to worker %q (static-worker mode)", r.Job, w.Spec.Name)
			})
		}
	case FixedPipeline:
		if w := f.pipeline[r.Type]; w != nil {
			if !w.gone {
				info.Via = ViaPipeline
				return f.assigned(r, k, w, info, func() string {
					return fmt.Sprintf("task type %q is assigned to worker %q (fixed-pipeline mode)", r.Type, w.Spec.Name)
				})
			}
			delete(f.pipeline, r.Type) // its worker left: the next one to run the type takes it
		}
	case Adaptive:
		if w := r.Sticky; w != nil && f.cfg.sticky && !w.gone && w.Takes() && w.boundTo == "" && f.feasible(r.Shape, w.class) {
			if w.FreeSlots() > 0 && fitsNow(w, r.Shape.Req) {
				info.Via, info.Pool = ViaSticky, 1
				info.ReuseHits, info.Score = uint8(f.reuseHits(r, w)), f.score(k, r.Hash, w)
				return Choice{Worker: w, Info: info}, model.Reason{}
			}
			return Choice{}, model.Because(model.ReasonStickyWorkerBusy,
				"task %q loads the result of %q and waits for worker %q, which ran it and is busy", r.Task, r.StickTo, w.Spec.Name)
		}
	}
	return f.general(r, k, info)
}

// assigned places r on the one worker it may use, or says why it waits.
func (f *Fleet) assigned(r *Request, k int, w *Worker, info Info, what func() string) (Choice, model.Reason) {
	switch {
	case !f.feasible(r.Shape, w.class):
		return Choice{}, model.Because(model.ReasonUnschedulable, "%s, which can never run it (it lacks %s)", what(),
			r.Shape.short[w.class.idx].Words())
	case !w.Takes():
		return Choice{}, model.Because(model.ReasonAssignedWorkerBusy, "%s, which is %s", what(), w.Spec.State)
	case w.FreeSlots() < 1 || !fitsNow(w, r.Shape.Req):
		return Choice{}, model.Because(model.ReasonAssignedWorkerBusy, "%s, which is busy", what())
	}
	info.Pool = 1
	info.ReuseHits, info.Score = uint8(f.reuseHits(r, w)), f.score(k, r.Hash, w)
	return Choice{Worker: w, Info: info}, model.Reason{}
}

// general chooses among the free workers of the general pool (not bound to
// a job) that can run the task, by the strategy.
func (f *Fleet) general(r *Request, k int, info Info) (Choice, model.Reason) {
	s := r.Shape
	if s.failEpoch == f.epoch {
		return Choice{}, s.failed
	}
	if ch, why, done := f.affinityFirst(r, k, info); done {
		return ch, why
	}
	var best *Worker
	var via Via
	if f.noFeasCache {
		best, via = f.scanAll(r, k)
	} else {
		switch f.cfg.strategy {
		case Best:
			if f.cfg.mode == Adaptive && f.cfg.reuse && (r.Model != "" || r.Dataset != "") {
				best = f.bestReuse(r, k)
				via = ViaReuse
			}
			if best == nil {
				best, via = f.bestScore(r, k), ViaScore
			}
		default:
			for _, c := range f.classes {
				if c.free.n == 0 || !f.feasible(s, c) {
					continue
				}
				if w := c.firstFit(s.Req); w != nil && (best == nil || f.strategy.better(w, best)) {
					best = w
				}
			}
			via = viaOf(f.cfg.strategy)
		}
	}
	if best == nil {
		s.failEpoch = f.epoch
		s.failed = f.diagnose(s)
		return Choice{}, s.failed
	}
	info.Via = via
	info.Pool = int32(f.pool(s))
	info.ReuseHits = uint8(f.reuseHits(r, best))
	info.Score = f.score(k, r.Hash, best)
	return Choice{Worker: best, Info: info}, model.Reason{}
}

// pool counts the free workers of the general pool that can run shape s.
func (f *Fleet) pool(s *Shape) int {
	n := 0
	for _, c := range f.classes {
		if c.free.n > 0 && f.feasible(s, c) {
			n += c.free.n
		}
	}
	return n
}

// bestScore returns the free worker with the highest score for r among the
// classes that can run it, looking at a window of at most bestWindow free
// workers per class (see bestWindow). Classes are visited by descending
// base score, and the walk stops at the first class whose base score plus
// the largest jitter cannot beat the best found. Ties go to the lower
// registration index.
func (f *Fleet) bestScore(r *Request, k int) *Worker {
	var best *Worker
	bestScore := 0.0
	for _, c := range f.order[k] {
		if best != nil && c.base[k]+f.cfg.jitter < bestScore {
			break
		}
		if c.free.n == 0 || !f.feasible(r.Shape, c) {
			continue
		}
		// One-slot workers in the free set are idle, so in a feasible
		// class they fit: they are scored from the class's hash slice and
		// only the winner is loaded.
		oneSlot := c.slots == 1
		it := c.walkFrom(r.Hash, nil)
		for seen := 0; seen < bestWindow; {
			p := it.next()
			if p < 0 {
				break
			}
			if !oneSlot && !fitsNow(c.members[p], r.Shape.Req) {
				continue
			}
			seen++
			sc := c.base[k] + f.cfg.jitter*jitterOf(r.Hash, c.hashes[p])
			if best == nil || sc > bestScore || sc == bestScore && c.members[p].Idx < best.Idx {
				best, bestScore = c.members[p], sc
			}
		}
	}
	return best
}

// bestReuse returns the free worker that holds the most of r's contexts
// with a fresh hint, the higher score breaking ties, or nil when no free
// worker that can run r holds any. Per class and context it scores a window
// of at most bestWindow fresh holders.
func (f *Fleet) bestReuse(r *Request, k int) *Worker {
	var best *Worker
	bestHits, bestScore := 0, 0.0
	for _, name := range [2]string{r.Model, r.Dataset} {
		h := f.hints[name]
		if name == "" || h == nil {
			continue
		}
		for _, c := range f.classes {
			holders := h.in(c)
			if holders == nil || c.free.n == 0 || !f.feasible(r.Shape, c) {
				continue
			}
			it := c.walkFrom(r.Hash, holders)
			for seen := 0; seen < bestWindow; {
				p := it.next()
				if p < 0 {
					break
				}
				w := c.members[p]
				if !f.fresh(w, name, r.Now) {
					continue
				}
				if !fitsNow(w, r.Shape.Req) {
					continue
				}
				seen++
				hits := f.reuseHits(r, w)
				sc := f.score(k, r.Hash, w)
				if best == nil || hits > bestHits || hits == bestHits && (sc > bestScore || sc == bestScore && w.Idx < best.Idx) {
					best, bestHits, bestScore = w, hits, sc
				}
			}
		}
	}
	return best
}

// scanAll is placement without the per-class feasibility cache: every free
// worker is checked by the class filters for every task, and the strategy
// looks at all of them. Benchmarks use it as the baseline.
func (f *Fleet) scanAll(r *Request, k int) (*Worker, Via) {
	s := r.Shape
	var best *Worker
	bestHits, bestScore := 0, 0.0
	reuse := f.cfg.strategy == Best && f.cfg.mode == Adaptive && f.cfg.reuse && (r.Model != "" || r.Dataset != "")
	never := compileNever(s)
	for _, w := range f.workers {
		if !w.Takes() || w.FreeSlots() < 1 || w.boundTo != "" || !fitsNow(w, s.Req) {
			continue
		}
		if never.fails(&w.Spec) {
			continue
		}
		switch f.cfg.strategy {
		case FirstFit:
			return w, ViaFirstFit
		case MinSatisfying:
			if best == nil || f.strategy.better(w, best) {
				best = w
			}
		case Best:
			hits := 0
			if reuse {
				hits = f.reuseHits(r, w)
			}
			sc := f.score(k, r.Hash, w)
			if best == nil || hits > bestHits || hits == bestHits && sc > bestScore {
				best, bestHits, bestScore = w, hits, sc
			}
		}
	}
	if best != nil && bestHits > 0 {
		return best, ViaReuse
	}
	if f.cfg.strategy == Best {
		return best, ViaScore
	}
	return best, viaOf(f.cfg.strategy)
}

func viaOf(s Strategy) Via {
	if s == MinSatisfying {
		return ViaMinSatisfying
	}
	return ViaFirstFit
}

// roundRobin hands r to the first free worker at or after the one after the
// previous choice, in registration order, wrapping around. Only the filters
// marked roundRobin (labels: the queue's pool and the job's selector) are
// applied: the seed's baseline does not look at a task's resources, so a
// task may land on a worker that lacks them.
func (f *Fleet) roundRobin(r *Request, k int, info Info) (Choice, model.Reason) {
	s := r.Shape
	var after, first *Worker
	pool := 0
	for _, c := range f.classes {
		if c.free.n == 0 || !f.rrFeasible(s, c) {
			continue
		}
		pool += c.free.n
		if p := c.free.next(0); p >= 0 && (first == nil || c.members[p].Idx < first.Idx) {
			first = c.members[p]
		}
		from := sort.Search(len(c.members), func(i int) bool { return c.members[i].Idx >= f.rrNext })
		if p := nextAnd(&c.free, nil, from, len(c.members)); p >= 0 && (after == nil || c.members[p].Idx < after.Idx) {
			after = c.members[p]
		}
	}
	w := after
	if w == nil {
		w = first
	}
	if w == nil {
		return Choice{}, f.rrReason(s)
	}
	info.Via, info.Pool = ViaRoundRobin, int32(pool)
	info.ReuseHits, info.Score = uint8(f.reuseHits(r, w)), f.score(k, r.Hash, w)
	return Choice{Worker: w, Info: info}, model.Reason{}
}

// rrReason says why round-robin found no worker: every worker the labels
// allow is busy or unavailable.
func (f *Fleet) rrReason(s *Shape) model.Reason {
	total, off := 0, 0
	for _, c := range f.classes {
		if c.workers == 0 || !f.rrFeasible(s, c) {
			continue
		}
		total += c.workers
		off += c.draining + c.disabled
	}
	switch {
	case total == 0:
		return model.Because(model.ReasonUnschedulable, "round-robin: no worker matches %s", s.Sel.String())
	case off == total:
		return model.Because(model.ReasonWorkersDisabled, "round-robin: the %d workers in the pool are draining or disabled", total)
	}
	return model.Because(model.ReasonNoFreeSlot, "round-robin: all %d ready workers in the pool are busy (%d draining or disabled)", total-off, off)
}

// rrFeasible reports whether class c passes the filters the round-robin
// mode applies, cached.
func (f *Fleet) rrFeasible(s *Shape, c *class) bool {
	for len(s.rr) <= c.idx {
		s.rr = append(s.rr, 0)
	}
	switch s.rr[c.idx] {
	case 1:
		return true
	case 2:
		return false
	}
	ok := true
	for i := range chain {
		if chain[i].roundRobin && chain[i].never(s, &c.spec) {
			ok = false
			break
		}
	}
	s.rr[c.idx] = 2
	if ok {
		s.rr[c.idx] = 1
	}
	return ok
}

// Started records that the task of r started on w: the static-worker mode
// binds the job to w, the fixed-pipeline mode assigns the task type to w if
// it has no worker yet, and round-robin moves its turn past w.
func (f *Fleet) Started(r *Request, w *Worker) {
	switch f.cfg.mode {
	case StaticWorker:
		if f.bound[r.Job] == nil && w.boundTo == "" && !w.gone {
			w.boundTo = r.Job
			f.bound[r.Job] = w
			w.class.free.remove(w.pos)
			f.epoch++
		}
	case FixedPipeline:
		if cur := f.pipeline[r.Type]; cur == nil || cur.gone {
			f.pipeline[r.Type] = w
		}
	case RoundRobin:
		f.rrNext = w.Idx + 1
	}
}

// JobEnded releases the worker a job was bound to (static-worker mode): it
// rejoins the general pool.
func (f *Fleet) JobEnded(job string) {
	w := f.bound[job]
	if w == nil {
		return
	}
	delete(f.bound, job)
	w.boundTo = ""
	if w.Takes() && w.FreeSlots() > 0 && !w.held {
		w.class.free.add(w.pos)
	}
	f.epoch++
}

// Bound returns the worker a job is bound to (static-worker mode), or nil.
func (f *Fleet) Bound(job string) *Worker { return f.bound[job] }

// PipelineWorker returns the worker a task type is assigned to
// (fixed-pipeline mode), or nil.
func (f *Fleet) PipelineWorker(typ string) *Worker { return f.pipeline[typ] }

// walk iterates a class's free members (also in filter, when set) from a
// start position, wrapping around once.
type walk struct {
	c       *class
	filter  *freeSet
	start   int
	pos     int
	wrapped bool
}

// walkFrom starts a walk at the position the task hash picks.
func (c *class) walkFrom(task uint64, filter *freeSet) walk {
	start := 0
	if n := len(c.members); n > 1 {
		start = int(mix(task) % uint64(n))
	}
	return walk{c: c, filter: filter, start: start, pos: start}
}

// next returns the next member position, or -1 when the walk is over.
func (it *walk) next() int {
	n := len(it.c.members)
	for {
		end := n
		if it.wrapped {
			end = it.start
		}
		if p := nextAnd(&it.c.free, it.filter, it.pos, end); p >= 0 {
			it.pos = p + 1
			return p
		}
		if it.wrapped {
			return -1
		}
		it.wrapped, it.pos = true, 0
	}
}

// nextAnd returns the smallest position p in [i, end) set in a (and in b,
// when b is not nil), or -1.
func nextAnd(a, b *freeSet, i, end int) int {
	if lo := a.lo << 6; i < lo {
		i = lo
	}
	for i < end {
		w := i >> 6
		if w >= len(a.words) {
			return -1
		}
		word := a.words[w]
		if b != nil {
			if w < len(b.words) {
				word &= b.words[w]
			} else {
				word = 0
			}
		}
		if word >>= uint(i) & 63; word != 0 {
			if p := i + bits.TrailingZeros64(word); p < end {
				return p
			}
			return -1
		}
		i = (w + 1) << 6
	}
	return -1
}
