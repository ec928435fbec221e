package fairshare

import (
	"math"
	"sort"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// Preemption lets the policy stop running tasks of shares above their fair
// share so that shares below theirs start at once, instead of waiting for
// the others' tasks to end (fair-sharing preemption, as in Kueue and
// YuniKorn; AWS Batch does not preempt). The fair share of each share is
// the weighted max-min allocation of the pool's slots among the shares with
// work: each gets min(running + waiting, its part of what is left), parts
// in proportion to 1/weightFactor.
//
// Tasks are whole, so the fair shares are rounded to whole slots: each
// share gets its fair share rounded down, and the slots the fractions add up
// to go one each to the shares that run more than that already (so no task
// stops over a fraction), then to the largest fractions, then by share
// name. A share is below when it has tasks waiting and runs fewer than its
// whole fair share, above when it runs more.
// The stops of a cycle are the smaller of what the shares below need and
// what those above have beyond their part, within the budget, taken one at
// a time: the newest task of any share above (the least work lost), ties to
// the share furthest above its fair share (weighted). The freed slots go, in the same cycle,
// to the shares with the lowest weighted usage: those below.
type Preemption struct {
	// AfterSeconds is how long a share must have stayed below its fair
	// share with tasks waiting before tasks stop for it: tasks that end in
	// that time serve it without a stop. 0 stops at once.
	AfterSeconds int `yaml:"afterSeconds,omitempty" json:"afterSeconds,omitempty"`
	// MaxPercent caps the stops of one cycle at this percentage of the
	// pool's slots (at least one task): the cost, in work thrown away, a
	// queue accepts for fairness. Omitted means 100, no cap.
	MaxPercent int `yaml:"maxPercent,omitempty" json:"maxPercent,omitempty" zero:"must be between 1 and 100|leave it out for no cap"`
}

// validate reports the first problem in pr, its path from the policy block.
func (pr *Preemption) validate() error {
	if pr.AfterSeconds < 0 {
		return model.Invalid("fairshare.preemption.afterSeconds", "must not be negative")
	}
	if pr.MaxPercent < 0 || pr.MaxPercent > 100 {
		return model.Invalid("fairshare.preemption.maxPercent", "must be between 1 and 100 (got %d)", pr.MaxPercent)
	}
	return nil
}

// budget is the most tasks one cycle may stop in a pool of slots.
func (pr *Preemption) budget(slots int) int {
	if pr.MaxPercent == 0 {
		return slots
	}
	return max(1, slots*pr.MaxPercent/100)
}

// fairShares returns each group's fair share of slots: the weighted max-min
// allocation of slots among the groups' demands (running + usable), with
// weights 1/weightFactor.
func (p *Policy) fairShares(gs []policy.Group, slots int) []float64 {
	demand, weight := make([]float64, len(gs)), make([]float64, len(gs))
	for i, g := range gs {
		demand[i], weight[i] = float64(g.Running+g.Usable), 1/p.WeightFactor(g.Key)
	}
	fair := make([]float64, len(gs))
	policy.WaterFill(float64(slots), demand, weight, fair, nil)
	return fair
}

// wholeShares rounds fair shares to whole slots (see Preemption).
func wholeShares(fair []float64, gs []policy.Group) []int {
	whole := make([]int, len(fair))
	sum := 0.0
	var extra []int
	left := 0
	for i, f := range fair {
		whole[i] = int(math.Floor(f + 1e-9))
		sum += f
		left -= whole[i]
		if f-float64(whole[i]) > 1e-9 {
			extra = append(extra, i)
		}
	}
	left += int(math.Round(sum))
	sort.Slice(extra, func(a, b int) bool {
		ia, ib := extra[a], extra[b]
		ra, rb := gs[ia].Running > whole[ia], gs[ib].Running > whole[ib]
		if ra != rb {
			return ra
		}
		fa, fb := fair[ia]-float64(whole[ia]), fair[ib]-float64(whole[ib])
		if fa != fb {
			return fa > fb
		}
		return gs[ia].Key < gs[ib].Key
	})
	for _, i := range extra[:min(max(0, left), len(extra))] {
		whole[i]++
	}
	return whole
}

// over is a share above its whole fair share during one cycle's choice of
// stops.
type over struct {
	group   int
	surplus int
	tasks   []policy.RunningTask // oldest first; nil until needed
}

// newer says whether a's newest task goes before b's: started later, or in
// the same cycle with a further above its fair share (weighted), or a's
// share name first.
func (p *Policy) newer(a, b *over, v *policy.View) bool {
	ta, tb := a.tasks[len(a.tasks)-1], b.tasks[len(b.tasks)-1]
	if !ta.Started.Equal(tb.Started) {
		return ta.Started.After(tb.Started)
	}
	ka, kb := v.Groups[a.group].Key, v.Groups[b.group].Key
	wa, wb := float64(a.surplus)*p.WeightFactor(ka), float64(b.surplus)*p.WeightFactor(kb)
	if wa != wb {
		return wa > wb
	}
	return ka < kb
}

// preempt returns the tasks the cycle at v.Now stops for shares below their
// fair share and how many it stops in each group, and notes since when each
// share has been below.
func (p *Policy) preempt(v *policy.View) ([]policy.Stop, []int) {
	pr := p.cfg.Preemption
	fair := p.fairShares(v.Groups, v.Slots)
	whole := wholeShares(fair, v.Groups)
	below := map[string]time.Time{}
	need := 0
	var starved []int // groups that have waited long enough
	for i, g := range v.Groups {
		short := whole[i] - g.Running
		if g.Usable == 0 || short <= 0 {
			continue
		}
		since, ok := p.below[g.Key]
		if !ok {
			since = v.Now
		}
		below[g.Key] = since
		if v.Now.Sub(since) >= time.Duration(pr.AfterSeconds)*time.Second {
			need += min(short, g.Usable)
			starved = append(starved, i)
		}
	}
	p.below = below
	if need == 0 || v.RunningTasks == nil {
		return nil, nil
	}
	var overs []*over
	for i, g := range v.Groups {
		if s := g.Running - whole[i]; s > 0 {
			overs = append(overs, &over{group: i, surplus: s})
		}
	}
	n := min(need, pr.budget(v.Slots))
	var stops []policy.Stop
	per := make([]int, len(v.Groups))
	for len(stops) < n {
		// The newest task of any share above: the least work lost. Ties
		// (tasks started in one cycle) to the share furthest above,
		// weighted as usage is, then to the share name.
		var o *over
		for _, c := range overs {
			if c.surplus == 0 {
				continue
			}
			if c.tasks == nil {
				c.tasks = v.RunningTasks(c.group)
			}
			if len(c.tasks) == 0 {
				c.surplus = 0
				continue
			}
			if o == nil || p.newer(c, o, v) {
				o = c
			}
		}
		if o == nil {
			break
		}
		t := o.tasks[len(o.tasks)-1]
		o.tasks = o.tasks[:len(o.tasks)-1]
		o.surplus--
		per[o.group]++
		// Name the shares below in turn, the one each stop is for.
		si := starved[len(stops)%len(starved)]
		g, s := v.Groups[o.group], v.Groups[si]
		stops = append(stops, policy.Stop{Task: t.ID, Reason: model.Because(model.ReasonPreempted,
			"fair-share preemption: share %s runs %d tasks, above its fair share of %.4g slots; share %s runs %d, below its %.4g",
			g.Key, g.Running, fair[o.group], s.Key, s.Running, fair[si])})
	}
	return stops, per
}
