package admit

import (
	"fmt"

	"github.com/allot-sched/allot/internal/model"
)

const (
	kindThrottled int8 = iota
	kindReserved
	kindFits
	kindOff
)

// Reason says why a job waits for admission, with the figures behind the
// decision, e.g. `endpoint "det" variant "v2": available 8 of target 80,
// job load 32 (12 jobs running)`. ok is false for a job that is not
// waiting. Reasons are formatted once per state of the variant and load,
// so a long queue costs one message, not one per job.
func (c *Controller) Reason(id string) (r model.Reason, ok bool) {
	j, ok := c.jobs[id]
	if !ok || j.state != jobWaiting {
		return model.Reason{}, false
	}
	p := j.pool
	kind := kindThrottled
	switch {
	case p.reserved != nil && p.reserved != j:
		kind = kindReserved
	case !c.s.Enabled:
		kind = kindOff
	case j.Load <= p.available() || p.running == 0:
		kind = kindFits
	}
	if p.memoVer != p.ver || p.memo == nil {
		p.memo, p.memoVer = map[reasonKey]model.Reason{}, p.ver
	}
	key := reasonKey{load: j.Load, kind: kind}
	if r, ok := p.memo[key]; ok {
		return r, true
	}
	figures := fmt.Sprintf("available %d of target %d, job load %d (%s running)", max(0, p.available()), p.target, j.Load, jobs(p.running))
	switch kind {
	case kindReserved:
		res := p.reserved
		r = model.Because(model.ReasonThrottled, "%s: capacity reserved for job %q (load %d), throttled since %s; %s",
			p.label(), res.ID, res.Load, res.ThrottledAt.UTC().Format("2006-01-02T15:04:05Z07:00"), figures)
	case kindOff:
		r = model.Because(model.ReasonNotAdmitted, "%s: waits for the next admission pass (throttling is off)", p.label())
	case kindFits:
		r = model.Because(model.ReasonNotAdmitted, "%s: waits for the next admission pass; %s", p.label(), figures)
	default:
		r = model.Because(model.ReasonThrottled, "%s: %s", p.label(), figures)
	}
	p.memo[key] = r
	return r, true
}

// label names the pool in messages.
func (p *pool) label() string {
	s := fmt.Sprintf("endpoint %q", p.ep.name)
	if p.name != "" {
		s += fmt.Sprintf(" variant %q", p.name)
	}
	if !p.configured {
		s += " (not configured: capacity 0)"
	}
	return s
}

func jobs(n int) string {
	if n == 1 {
		return "1 job"
	}
	return fmt.Sprintf("%d jobs", n)
}

// WaitingTasks counts the tasks of the jobs waiting for admission by the
// reason code Reason gives each job (throttled or not_admitted), and in
// all, from the tasks SetWaitingTasks reported. It visits each pool and the
// distinct loads waiting there, not the waiting jobs.
func (c *Controller) WaitingTasks() (throttled, notAdmitted, all int) {
	for _, ep := range c.epList {
		for _, p := range ep.pools {
			if p.waiting == 0 {
				continue
			}
			all += p.waitingTasks
			avail := p.available()
			fits := func(load int) bool { return !c.s.Enabled || load <= avail || p.running == 0 }
			if r := p.reserved; r != nil {
				// The pool holds its capacity for r: every other
				// job is throttled; r is judged as any job.
				throttled += p.waitingTasks - r.tasks
				if fits(r.Load) {
					notAdmitted += r.tasks
				} else {
					throttled += r.tasks
				}
				continue
			}
			for load, n := range p.tasksByLoad {
				if fits(load) {
					notAdmitted += n
				} else {
					throttled += n
				}
			}
		}
	}
	return throttled, notAdmitted, all
}
