package place

import (
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// Intrinsic affinity (seed 001): a worker that ran tasks of a job holds the
// job's initialisation data, so the job's next task prefers it over a
// worker that never served the job. The engine keeps one Affinity per job;
// like context hints it is a per-class bitset of member positions, so the
// free workers with affinity are found by intersecting it with the class's
// free set, without a walk over the job's workers.

// Affinity is the set of workers that ran tasks of one job.
type Affinity struct {
	perClass []freeSet // by class idx, bits by member position
	n        int
}

// Add records that w ran a task of the job.
func (a *Affinity) Add(w *Worker) {
	c := w.class
	for len(a.perClass) <= c.idx {
		a.perClass = append(a.perClass, freeSet{})
	}
	s := &a.perClass[c.idx]
	s.grow(len(c.members))
	if !s.has(w.pos) {
		s.add(w.pos)
		a.n++
	}
}

// Len is how many workers have affinity (removed workers included).
func (a *Affinity) Len() int {
	if a == nil {
		return 0
	}
	return a.n
}

func (a *Affinity) in(c *class) *freeSet {
	if c.idx >= len(a.perClass) || a.perClass[c.idx].n == 0 {
		return nil
	}
	s := &a.perClass[c.idx]
	s.grow(len(c.members)) // the class may have grown since: nextAnd reads both
	return s
}

// bestAffinity returns the free worker with affinity for r that scores
// best, or nil. Per class it scores a window of at most bestWindow free
// workers with affinity, like bestScore.
func (f *Fleet) bestAffinity(r *Request, k int) *Worker {
	var best *Worker
	bestScore := 0.0
	for _, c := range f.classes {
		set := r.Affinity.in(c)
		if set == nil || c.free.n == 0 || !f.feasible(r.Shape, c) {
			continue
		}
		it := c.walkFrom(r.Hash, set)
		for seen := 0; seen < bestWindow; {
			p := it.next()
			if p < 0 {
				break
			}
			w := c.members[p]
			if !fitsNow(w, r.Shape.Req) {
				continue
			}
			seen++
			sc := f.score(k, r.Hash, w)
			if best == nil || sc > bestScore || sc == bestScore && w.Idx < best.Idx {
				best, bestScore = w, sc
			}
		}
	}
	return best
}

// affinityFirst is the affinity hook of general placement: a free worker
// with affinity wins before any score; when none is free and r's affinity
// wait has not run out, a task that some free worker without affinity
// could take waits instead (ok false with the affinity_wait reason).
// done is false when placement should go on as usual.
func (f *Fleet) affinityFirst(r *Request, k int, info Info) (ch Choice, why model.Reason, done bool) {
	if r.Affinity.Len() == 0 {
		return Choice{}, model.Reason{}, false
	}
	if w := f.bestAffinity(r, k); w != nil {
		info.Via, info.Pool = ViaAffinity, int32(f.pool(r.Shape))
		info.ReuseHits, info.Score = uint8(f.reuseHits(r, w)), f.score(k, r.Hash, w)
		return Choice{Worker: w, Info: info}, model.Reason{}, true
	}
	if !r.Now.Before(r.AffinityUntil) {
		return Choice{}, model.Reason{}, false
	}
	free := f.pool(r.Shape)
	if free == 0 {
		return Choice{}, model.Reason{}, false // nothing passed over: the usual diagnosis
	}
	return Choice{}, model.Because(model.ReasonAffinityWait,
		"job %q waits until %s (affinityWait) for a worker that ran its tasks (%d, all busy); %d free workers without affinity are passed over",
		r.Job, r.AffinityUntil.UTC().Format(time.RFC3339), r.Affinity.Len(), free), true
}
