package fairshare

import (
	"fmt"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
)

var (
	_ policy.Explainer    = (*Policy)(nil)
	_ policy.FigureRanker = (*Policy)(nil)
)

// RankFigures implements policy.FigureRanker: shares are served by lowest
// weighted usage, so explain ranks them by their usage at now.
func (p *Policy) RankFigures(now time.Time) (name, unit string, values map[string]float64, by string) {
	values = map[string]float64{}
	for _, s := range p.Status(now) {
		values[s.Share] = s.Usage
	}
	return "usage", "", values, "lowest weighted usage first, share name on ties"
}

// ExplainGroup implements policy.Explainer: the share's weighted usage,
// weight factor, the fraction of the pool it runs and the fraction it is
// entitled to; whether it is below or above its entitlement; and which
// other shares run above theirs, which is why a full pool stays full.
func (p *Policy) ExplainGroup(q policy.ExplainQuery) policy.GroupExplanation {
	var usage, weight, entitled, running, dominant float64
	status := p.Status(q.Now)
	for _, s := range status {
		if s.Share == q.Group.Key {
			usage, weight, entitled, dominant = s.Usage, s.WeightFactor, s.EntitledFraction, s.DominantShare
		}
	}
	if p.dominant {
		running = dominant // the fraction that counts: of the scarcest kind
	} else if q.Slots > 0 {
		running = float64(q.Group.Running) / float64(q.Slots)
	}
	x := policy.GroupExplanation{
		Figures: []policy.Figure{
			{Name: "usage", Value: usage},
			{Name: "weightFactor", Value: weight},
			{Name: "runningFraction", Value: running, Unit: "fraction"},
			{Name: "entitled", Value: entitled, Unit: "fraction"},
		},
		Summary: fmt.Sprintf("usage %.4g (weight factor %g); runs %.0f%% of the pool, entitled to %.0f%%",
			usage, weight, 100*running, 100*entitled),
	}
	if q.Slots == 0 {
		return x
	}
	if running < entitled {
		x.Help = append(x.Help, policy.Help{Kind: "below_entitlement", Message: fmt.Sprintf(
			"share %s runs %s of the pool, below its entitlement of %s: it is served before shares above theirs as their tasks end",
			q.Group.Key, pct(running), pct(entitled))})
	} else if entitled > 0 {
		x.Help = append(x.Help, policy.Help{Kind: "share_above_entitlement", Message: fmt.Sprintf(
			"share %s (this job's) is at or above its entitlement (%s vs %s): other shares are served first",
			q.Group.Key, pct(running), pct(entitled))})
	}
	for _, s := range status {
		if s.Share == q.Group.Key || s.EntitledFraction == 0 {
			continue
		}
		if run := float64(s.Running) / float64(q.Slots); run > s.EntitledFraction+1e-9 {
			x.FullPoolHelp = append(x.FullPoolHelp, policy.Help{Kind: "share_above_entitlement", Message: fmt.Sprintf(
				"share %s is above its entitlement (%.0f%% vs %.0f%%): its tasks are not stopped, but as they end the slots go to shares below theirs",
				s.Share, 100*run, 100*s.EntitledFraction)})
		}
	}
	return x
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }
