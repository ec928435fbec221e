package classload

import (
	"fmt"
	"math"
	"regexp"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// Name is the policy's name in configuration.
const Name = "classload"

// Kind registers the classload policy; its block is Config, which the
// policy cannot run without.
var Kind = policy.Kind{
	Name:     Name,
	Settings: (*Config)(nil),
	New: func(s policy.Settings) (policy.Policy, error) {
		cfg := s.(*Config)
		if cfg == nil {
			return nil, cfg.Validate() // the block is required
		}
		return New(*cfg)
	},
}

// Policy is the classload policy of one queue. It keeps, between cycles,
// only the rebalance clock: since when the spread has been above the
// threshold.
type Policy struct {
	classes   []LoadClass
	index     map[string]int // class name → index in classes
	rules     []rule
	unmatched int // class of requestors no rule matches
	threshold int
	minimum   time.Duration
	clock     rebalanceClock
	// dominant says usage is measured by dominant share (usage:
	// dominant): a class's running tasks count as its slot-equivalents.
	dominant bool
	// last is the last Allocate's view and class → view group map, for
	// ServiceOrder.
	last struct {
		v       *policy.View
		in      Input
		groupOf []int
	}
}

type rule struct {
	re    *regexp.Regexp
	class int
}

// New validates cfg and builds the policy.
func New(cfg Config) (*Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Policy{
		classes:   append([]LoadClass(nil), cfg.Classes...),
		index:     make(map[string]int, len(cfg.Classes)),
		threshold: cfg.RebalanceThreshold,
		minimum:   cfg.RebalanceMinimumDuration,
	}
	for i, c := range p.classes {
		p.index[c.Name] = i
		// Lowest percentage; on a tie the later class (<=).
		if c.Percent <= p.classes[p.unmatched].Percent {
			p.unmatched = i
		}
	}
	for _, r := range cfg.RequestorMap {
		// Validate compiled every pattern already.
		p.rules = append(p.rules, rule{re: regexp.MustCompile(r.Pattern), class: p.index[r.Class]})
	}
	return p, nil
}

// Name implements policy.Policy.
func (p *Policy) Name() string { return Name }

// GroupOf implements policy.Policy: the class of the job's requestor, from
// the first matching rule of the requestor map, else the lowest-percentage
// class (the later one on a tie).
func (p *Policy) GroupOf(j *model.Job) string { return p.classes[p.classOf(j.Requestor)].Name }

func (p *Policy) classOf(requestor string) int {
	for _, r := range p.rules {
		if r.re.MatchString(requestor) {
			return r.class
		}
	}
	return p.unmatched
}

// Order implements policy.Policy: round-robin across a class's jobs by
// fewest running tasks, and the longest expected task first, as the seed
// selects tasks.
func (p *Policy) Order() (policy.JobOrder, policy.TaskOrder) {
	return policy.ByFewestRunning, policy.ByLongestFirst
}

// Account implements policy.Policy; classload works from the running counts
// of each cycle and keeps no usage.
func (p *Policy) Account(string, int, time.Time) {}

// Dominant implements policy.DominantPolicy: a class's running tasks count
// as its slot-equivalents, its dominant share of the pool times the pool's
// slots, so its entitlement of N × percent slots becomes a dominant share
// of percent. Targets, the spread and the rounds are computed on
// slot-equivalents as on slots, and each start uses up what it adds to its
// class's slot-equivalents (at least one: a task always takes a slot).
func (p *Policy) Dominant() { p.dominant = true }

// AccountAmounts implements policy.AmountsAccounter; like Account, it keeps
// nothing, since each cycle's view carries what every class holds.
func (p *Policy) AccountAmounts(string, model.Amounts, policy.Capacity, time.Time) {}

// slotEquivalents returns what tasks running tasks holding held count for
// under usage: dominant: their dominant share of c times its slots, rounded
// up (a class's slot-equivalents are never fewer than its tasks).
func slotEquivalents(tasks int, held model.Amounts, c policy.Capacity) int {
	return int(math.Ceil(policy.DominantShare(tasks, held, c)*float64(c.Slots) - 1e-9))
}

// History implements policy.HistoryGiver: how long the spread has been
// above the threshold, as of now.
func (p *Policy) History(now time.Time) policy.History {
	var h policy.History
	if p.clock.running && now.After(p.clock.since) {
		h.RebalanceExceededFor = now.Sub(p.clock.since)
	}
	return h
}

// SetHistory implements policy.HistoryTaker: a scenario or a restarted
// server states how long the spread has already been above the threshold.
func (p *Policy) SetHistory(h policy.History, now time.Time) {
	p.clock.restore(h.RebalanceExceededFor, now)
}

// Allocate implements policy.Policy: it runs Distribute on the queue's
// counts and hands out the result. Groups of the view are classes by name;
// configured classes absent from the view have nothing running or waiting.
func (p *Policy) Allocate(v *policy.View) policy.Plan {
	in := Input{Slots: v.Slots, Free: v.Free, Classes: make([]Class, len(p.classes))}
	for i, c := range p.classes {
		in.Classes[i] = Class{Name: c.Name, Percent: c.Percent}
	}
	classOf := make([]int, len(v.Groups)) // view group → class, -1 when unknown
	groupOf := make([]int, len(p.classes))
	for i := range groupOf {
		groupOf[i] = -1
	}
	for gi, g := range v.Groups {
		ci, ok := p.index[g.Key]
		if !ok {
			classOf[gi] = -1
			continue
		}
		classOf[gi], groupOf[ci] = ci, gi
		running := g.Running
		if p.dominant {
			running = slotEquivalents(g.Running, g.Held, v.Capacity)
		}
		in.Classes[ci].Running += running
		in.Classes[ci].Waiting += g.Usable
	}

	spread := Spread(in)
	in.Rebalance = p.clock.due(spread, p.threshold, p.minimum, v.Now)
	out := Distribute(in)

	plan := policy.Plan{Targets: make([]int, len(v.Groups))}
	for gi, ci := range classOf {
		plan.Targets[gi] = -1
		if ci >= 0 {
			plan.Targets[gi] = out.Classes[ci].Target
		}
	}
	if in.Rebalance {
		plan.Stops = p.stops(v, in, out, groupOf)
	}
	plan.Alloc = newAllocator(p, v, in, out, classOf, groupOf)
	p.last.v, p.last.in, p.last.groupOf = v, in, groupOf
	return plan
}

// ServiceOrder implements policy.Ranker: the classes of the last view in
// the order they take turns, one slot each, higher load percentage first
// (configuration order on ties).
func (p *Policy) ServiceOrder() ([]string, string) {
	const by = "classes take turns, one slot each, higher load percentage first"
	if p.last.v == nil {
		return nil, by
	}
	var out []string
	for _, ci := range walkOrder(p.last.in.Classes) {
		if gi := p.last.groupOf[ci]; gi >= 0 {
			out = append(out, p.last.v.Groups[gi].Key)
		}
	}
	return out, by
}

// stops picks, per class, its newest running tasks: n of them, or under
// usage: dominant as many as bring its slot-equivalents down by n.
func (p *Policy) stops(v *policy.View, in Input, out Output, groupOf []int) []policy.Stop {
	var stops []policy.Stop
	for _, ci := range walkOrder(in.Classes) {
		n, gi := out.Classes[ci].Stops, groupOf[ci]
		if n == 0 || gi < 0 || v.RunningTasks == nil {
			continue
		}
		tasks := v.RunningTasks(gi) // oldest first
		c, r := in.Classes[ci], out.Classes[ci]
		what := "its %d newest tasks stop"
		if p.dominant {
			what = "its newest tasks stop, %d slot-equivalents"
		}
		reason := model.Because(model.ReasonRebalanced,
			"rebalance: class %s %s, above its target %d (%d%% of %d slots); "+what,
			c.Name, p.holds(c.Running), r.Target, r.Percent, in.Slots, n)
		g := v.Groups[gi]
		count, held := g.Running, g.Held
		for k := len(tasks) - 1; k >= 0 && n > 0; k-- {
			stops = append(stops, policy.Stop{Task: tasks[k].ID, Reason: reason})
			if !p.dominant {
				n--
				continue
			}
			before := slotEquivalents(count, held, v.Capacity)
			count, held = count-1, held.Sub(tasks[k].Holds)
			n -= max(1, before-slotEquivalents(count, held, v.Capacity))
		}
	}
	return stops
}

// holds says what a class's running count is: tasks, or slot-equivalents
// under usage: dominant.
func (p *Policy) holds(running int) string {
	if p.dominant {
		return fmt.Sprintf("holds %d slot-equivalents (its dominant share of the pool times its slots)", running)
	}
	return fmt.Sprintf("runs %d tasks", running)
}
