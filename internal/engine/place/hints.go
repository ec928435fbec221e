package place

import (
	"maps"
	"time"
)

// Context reuse (seed 002): workers report the models and datasets they hold,
// each with the time of the report. A hint is fresh for the cache TTL after
// that time; a task naming a model or dataset prefers a free worker with a
// fresh hint of it, and a stale hint counts for nothing. Hints are per
// worker, not per class (workers of one class hold different things), so
// each context name keeps, per class, a bitset of the members that reported
// it: intersected with the class's free workers, it yields the candidates
// without a walk over the fleet.

// hint indexes the workers that reported one context name.
type hint struct {
	perClass []freeSet // by class idx, bits by member position
}

func (h *hint) set(c *class, pos int, on bool) {
	for len(h.perClass) <= c.idx {
		h.perClass = append(h.perClass, freeSet{})
	}
	s := &h.perClass[c.idx]
	if on {
		s.grow(len(c.members))
		s.add(pos)
	} else if pos < len(s.words)*64 {
		s.remove(pos)
	}
}

// in returns the bitset of class c's members with the hint, or nil.
func (h *hint) in(c *class) *freeSet {
	if h == nil || c.idx >= len(h.perClass) || h.perClass[c.idx].n == 0 {
		return nil
	}
	return &h.perClass[c.idx]
}

// SetCached replaces what w reports to hold: context name → time of the
// report. A nil or empty map clears its hints. The map is copied.
func (f *Fleet) SetCached(w *Worker, cached map[string]time.Time) {
	for name := range w.Spec.Cached {
		if _, keep := cached[name]; !keep {
			if h := f.hints[name]; h != nil {
				h.set(w.class, w.pos, false)
			}
		}
	}
	if len(cached) == 0 || w.gone {
		w.Spec.Cached = nil
		return
	}
	w.Spec.Cached = maps.Clone(cached)
	for name := range cached {
		h := f.hints[name]
		if h == nil {
			h = &hint{}
			f.hints[name] = h
		}
		h.set(w.class, w.pos, true)
	}
}

// fresh reports whether w holds a hint of name reported within the TTL
// before now.
func (f *Fleet) fresh(w *Worker, name string, now time.Time) bool {
	if name == "" {
		return false
	}
	t, ok := w.Spec.Cached[name]
	return ok && now.Sub(t) <= f.cfg.ttl
}

// reuseHits counts the task's contexts w holds fresh.
func (f *Fleet) reuseHits(r *Request, w *Worker) int {
	n := 0
	if f.fresh(w, r.Model, r.Now) {
		n++
	}
	if r.Dataset != r.Model && f.fresh(w, r.Dataset, r.Now) {
		n++
	}
	return n
}
