package priority

import (
	"fmt"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

var _ policy.Explainer = (*Priority)(nil)

// ExplainGroup implements policy.Explainer. The priority policy shows no
// figures beyond the engine's; it says which priority would lift a
// suspension, or put the job first where that is certain: only serial
// priority serves jobs by level (after urgent jobs, which no priority
// beats). Elsewhere a priority moves a weight, so it promises nothing.
func (p *Priority) ExplainGroup(q policy.ExplainQuery) policy.GroupExplanation {
	var x policy.GroupExplanation
	if q.Urgent {
		return x
	}
	cfg := p.cfg
	if q.Reason.Code == model.ReasonSuspended {
		// Level 0 is suspended, and so is a level of weight 0 under the
		// Usage algorithm: the first level above both runs.
		for l := 1; l < cfg.Levels; l++ {
			if cfg.Algorithm != AlgorithmUsage || cfg.Weights[l] > 0 {
				x.RankHelp = []policy.Help{{Kind: "suspended", Message: fmt.Sprintf(
					"priority %d is suspended under the priority policy: priority %d or more lets the job run", q.Priority, l)}}
				return x
			}
		}
		return x
	}
	if len(q.Ahead) == 0 || !cfg.SerialPriority {
		return x
	}
	top := 0
	for _, g := range q.Ahead {
		if g.Urgent {
			return x
		}
		top = max(top, min(g.Priority, cfg.Levels-1))
	}
	if top+1 > cfg.Levels-1 {
		return x
	}
	x.RankHelp = []policy.Help{{Kind: "priority", Message: fmt.Sprintf(
		"%d job(s) of queue %s are served before this one (serial priority: higher levels first); priority %d would put it first",
		len(q.Ahead), q.Queue, top+1)}}
	return x
}
