package engine

import (
	"time"

	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/engine/policy"
)

// Intrinsic affinity (seed 001): under a policy that asks for it
// (policy.AffinityPolicy), the engine remembers per job the workers that
// ran its tasks, and placement prefers a free one of them for the job's
// next task. The set lives as long as the job: compact drops it with the
// ended job.

// affinityOf returns whether q's policy wants affinity, and its wait.
func affinityOf(q *queue) (on bool, wait time.Duration) {
	if ap, ok := q.pol.(policy.AffinityPolicy); ok {
		return ap.Affinity()
	}
	return false, 0
}

// withAffinity adds to r, the request of ready task t, the workers with
// affinity to t's job and, with an affinity wait, the time until which t
// passes over workers without affinity: the wait counts from when t
// became ready.
func (e *Engine) withAffinity(r *place.Request, t *task) {
	a := e.affinity[t.job]
	if a == nil {
		return
	}
	on, wait := affinityOf(t.job.q)
	if !on {
		return
	}
	r.Affinity = a
	if wait > 0 {
		r.AffinityUntil = t.readyAt.Add(wait)
	}
}

// ranOn records that a task of j started on w, giving w affinity to j.
func (e *Engine) ranOn(j *job, w *place.Worker) {
	if on, _ := affinityOf(j.q); !on {
		return
	}
	a := e.affinity[j]
	if a == nil {
		if e.affinity == nil {
			e.affinity = map[*job]*place.Affinity{}
		}
		a = &place.Affinity{}
		e.affinity[j] = a
	}
	a.Add(w)
}

// forgetAffinity drops an ended job's affinity set.
func (e *Engine) forgetAffinity(j *job) {
	if e.affinity != nil {
		delete(e.affinity, j)
	}
}
