// Package priority implements seed 001's GridServer scheduler as two
// policies over the same Usage algorithm: "priority" (weights per priority
// level, Usage or Time algorithm, serial priority, priority aggregation,
// urgent jobs with preemption) and "sla" (SLA groups with slot targets and
// optional SLA preemption).
//
// Both treat each job as its own group, so a job's ideal slot count and its
// usage are the job's. Usage is the slot-time a job held over a sliding
// window; jobs are served in order of least usage per unit of weight, each
// up to its ideal, and slots left over go round-robin.
package priority

import (
	"fmt"
	"sort"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/perjob"
	"github.com/allot-sched/allot/internal/model"
)

// Kind registers the priority policy; its block is Config.
var Kind = policy.Kind{
	Name:     "priority",
	Settings: (*Config)(nil),
	New: func(s policy.Settings) (policy.Policy, error) {
		cfg := s.(*Config)
		// The engine prefixes the queue's path: queues[0].policy.priority…
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		return NewPriority(cfg.WithDefaults()), nil
	},
}

// Priority is the "priority" policy (seed 001, priority mode).
type Priority struct {
	cfg Config
	perjob.PerJob
	last perjob.Served // the last Allocate's service order (policy.Ranker)
}

// NewPriority builds the policy from a validated config with defaults.
func NewPriority(cfg Config) *Priority {
	return &Priority{cfg: cfg, PerJob: perjob.PerJob{Book: perjob.NewBook(cfg.UsageWindow)}}
}

// Name implements policy.Policy.
func (*Priority) Name() string { return "priority" }

// job is what one cycle works out about one job.
type job struct {
	cap       int     // slots it could hold: running + usable
	level     int     // priority, clamped to the levels
	weight    float64 // its level's weight
	eff       float64 // weight it competes with (aggregation shares a level's)
	total     float64 // the effective weights it competes against
	exact     float64 // ideal slots, not rounded
	ideal     int     // ideal slots: exact rounded up, capped by cap
	norm      float64 // usage per unit of effective weight
	urgent    bool
	suspended bool
	peers     int // jobs sharing its level's weight (aggregation)
}

// cycle is one Allocate call's working state, kept for Why.
type cycle struct {
	p      *Priority
	v      *policy.View
	jobs   []job
	urgent []int // urgent jobs, creation order
	given  []int
	// waitNote explains, per urgent job, why it did not preempt (more).
	waitNote map[int]string
	// urgentSlots is what the urgent jobs' ideals take off the top.
	urgentSlots int
}

// Allocate implements policy.Policy.
func (p *Priority) Allocate(v *policy.View) policy.Plan {
	p.Book.StartCycle()
	p.Book.SetPool(v.Capacity)
	c := &cycle{p: p, v: v, jobs: make([]job, len(v.Groups)), given: make([]int, len(v.Groups)), waitNote: map[int]string{}}
	var normal []int
	for i, g := range v.Groups {
		j := &c.jobs[i]
		j.cap = g.Running + g.Usable
		j.level = min(max(g.Priority, 0), p.cfg.Levels-1)
		j.weight = p.cfg.Weights[j.level]
		j.urgent = g.Urgent
		j.suspended = !g.Urgent && (j.level == 0 || (p.cfg.Algorithm == AlgorithmUsage && j.weight == 0))
		c.given[i] = g.Running
		switch {
		case j.urgent:
			c.urgent = append(c.urgent, i)
		case !j.suspended:
			normal = append(normal, i)
		}
	}
	bySeq := func(s []int) {
		sort.Slice(s, func(a, b int) bool { return v.Groups[s[a]].Seq < v.Groups[s[b]].Seq })
	}
	bySeq(c.urgent)
	bySeq(normal)
	p.last.Reset(v, p.rankPhrase())
	p.last.Add(c.urgent)

	// Urgent jobs weigh "essentially infinite": each takes every slot it can
	// use, in creation order; the others divide what is left.
	rest := v.Slots
	for _, i := range c.urgent {
		j := &c.jobs[i]
		j.ideal = min(j.cap, rest)
		j.exact = float64(max(j.ideal, 1))
		rest -= j.ideal
	}
	c.urgentSlots = v.Slots - rest

	alloc := perjob.NewAllocator(c.given, c.why)
	stops := c.preempt()
	alloc.Add(&perjob.Phase{Order: c.urgent, Target: perjob.NoLimit})

	if p.cfg.Algorithm == AlgorithmTime {
		if p.cfg.SerialPriority {
			sort.SliceStable(normal, func(a, b int) bool { return c.jobs[normal[a]].level > c.jobs[normal[b]].level })
		}
		for _, i := range normal {
			j := &c.jobs[i]
			j.ideal = min(j.cap, rest)
			j.exact = float64(j.ideal)
			rest -= j.ideal
		}
		c.see()
		alloc.Add(&perjob.Phase{Order: normal, Target: perjob.NoLimit})
		p.last.Add(normal)
	} else {
		var tiers [][]int
		if p.cfg.SerialPriority {
			tiers = byLevel(normal, c.jobs)
		} else {
			tiers = [][]int{normal}
		}
		for _, tier := range tiers {
			c.ideals(tier, rest)
			used := 0
			for _, i := range tier {
				used += c.jobs[i].cap
			}
			rest -= min(rest, used)
		}
		c.see()
		ideal := make([]int, len(c.jobs))
		for i := range c.jobs {
			ideal[i] = c.jobs[i].ideal
		}
		for _, tier := range tiers {
			order := c.byUsage(tier)
			p.last.Add(order)
			alloc.Add(&perjob.Phase{Order: order, Target: perjob.UpTo(ideal)})
			alloc.Add(&perjob.Phase{Order: append([]int(nil), order...), Target: perjob.NoLimit, RoundRobin: true})
		}
	}
	p.Book.Sweep(v.Now)

	targets := make([]int, len(c.jobs))
	for i := range c.jobs {
		targets[i] = c.jobs[i].ideal
	}
	return policy.Plan{Targets: targets, Stops: stops, Alloc: alloc}
}

// byLevel splits jobs into tiers of one priority level, highest first.
func byLevel(jobs []int, info []job) [][]int {
	sorted := append([]int(nil), jobs...)
	sort.SliceStable(sorted, func(a, b int) bool { return info[sorted[a]].level > info[sorted[b]].level })
	var tiers [][]int
	for k, i := range sorted {
		if k == 0 || info[i].level != info[sorted[k-1]].level {
			tiers = append(tiers, nil)
		}
		tiers[len(tiers)-1] = append(tiers[len(tiers)-1], i)
	}
	return tiers
}

// ideals sets each job's ideal share of slots:
// slots × weight / total weight, or, with aggregation,
// slots × level weight / total of the levels' weights / jobs at the level;
// rounded up so no job starves on a share below one, and capped by what the
// job can use.
func (c *cycle) ideals(tier []int, slots int) {
	peers := map[int]int{}
	for _, i := range tier {
		peers[c.jobs[i].level]++
	}
	total := 0.0
	for _, i := range tier {
		j := &c.jobs[i]
		j.eff = j.weight
		j.peers = peers[j.level]
		if c.p.cfg.Aggregation {
			j.eff = j.weight / float64(j.peers)
		}
		total += j.eff
	}
	for _, i := range tier {
		j := &c.jobs[i]
		j.total = total
		if total > 0 {
			j.exact = float64(slots) * j.eff / total
		}
		j.ideal = min(perjob.Ceil(j.exact), j.cap)
	}
}

// see starts the usage of jobs new to the policy at their exact ideal, and
// computes each job's usage per unit of weight.
func (c *cycle) see() {
	for i, g := range c.v.Groups {
		j := &c.jobs[i]
		a := c.p.Book.See(g.Key, j.exact, c.v.Now)
		if j.eff > 0 {
			j.norm = perjob.Quantize(c.p.Book.Usage(a, c.v.Now) / j.eff)
		}
	}
}

// byUsage orders jobs by least usage per unit of weight, then creation.
func (c *cycle) byUsage(jobs []int) []int {
	out := append([]int(nil), jobs...)
	sort.SliceStable(out, func(a, b int) bool {
		ja, jb := &c.jobs[out[a]], &c.jobs[out[b]]
		if ja.norm != jb.norm {
			return ja.norm < jb.norm
		}
		return c.v.Groups[out[a]].Seq < c.v.Groups[out[b]].Seq
	})
	return out
}

// preempt stops running tasks of non-urgent jobs for urgent jobs that,
// after taking every free slot, can still use more (seed 001): only when
// preemption is enabled, after the urgent job has waited preemptDelay, and
// while urgent jobs run fewer than preemptablePercent of the slots — at most
// that percentage minus what they already run. Victims minimise
// priority + running time / preemptThreshold; urgent tasks are never victims.
func (c *cycle) preempt() []policy.Stop {
	cfg, v := &c.p.cfg, c.v
	if len(c.urgent) == 0 {
		return nil
	}
	type want struct{ job, n int }
	var wants []want
	free, urgentRun, need := v.Free, 0, 0
	for _, i := range c.urgent {
		g := v.Groups[i]
		take := min(g.Usable, free)
		free -= take
		urgentRun += g.Running + take
		left := g.Usable - take
		if left <= 0 {
			continue
		}
		if cfg.PreemptablePercent == 0 {
			c.waitNote[i] = "preemption is disabled (preemptablePercent 0)"
			continue
		}
		if waited := v.Now.Sub(g.Submitted); waited < cfg.PreemptDelay {
			c.waitNote[i] = fmt.Sprintf("it may preempt once it has waited preemptDelay %s (waited %s)", cfg.PreemptDelay, waited)
			continue
		}
		wants = append(wants, want{i, left})
		need += left
	}
	limit := cfg.PreemptablePercent*v.Slots/100 - urgentRun
	if limit < need {
		// Whoever is left waiting after this cycle's stops waits for this.
		for _, w := range wants {
			c.waitNote[w.job] = fmt.Sprintf("urgent jobs run %d of %d slots, and preemption stops at %d (preemptablePercent %d)",
				urgentRun+max(limit, 0), v.Slots, cfg.PreemptablePercent*v.Slots/100, cfg.PreemptablePercent)
		}
	}
	n := min(need, limit)
	if n <= 0 {
		return nil
	}

	type victim struct {
		t     policy.RunningTask
		score float64
	}
	var victims []victim
	for i, g := range v.Groups {
		if c.jobs[i].urgent || g.Running == 0 {
			continue
		}
		for _, t := range v.RunningTasks(i) {
			if t.Urgent {
				continue
			}
			ran := max(v.Now.Sub(t.Started), 0)
			victims = append(victims, victim{t, float64(t.Priority) + float64(ran)/float64(cfg.PreemptThreshold)})
		}
	}
	sort.Slice(victims, func(a, b int) bool {
		va, vb := victims[a], victims[b]
		if va.score != vb.score {
			return va.score < vb.score
		}
		if va.t.StartSeq != vb.t.StartSeq {
			return va.t.StartSeq > vb.t.StartSeq // newest loses least work
		}
		return va.t.ID < vb.t.ID
	})
	if len(victims) == 0 {
		for _, w := range wants {
			c.waitNote[w.job] = "every running task belongs to an urgent job, and urgent tasks are never preempted"
		}
		return nil
	}
	n = min(n, len(victims))
	stops := make([]policy.Stop, 0, n)
	for k, w := 0, 0; k < n; k++ {
		for wants[w].n == 0 {
			w++
		}
		wants[w].n--
		vt := victims[k]
		ug := v.Groups[wants[w].job]
		c.given[vt.t.Group]--
		stops = append(stops, policy.Stop{Task: vt.t.ID, Reason: model.Because(model.ReasonPreempted,
			"preempted for urgent job %q: urgent jobs ran %d of %d slots, below preemptablePercent %d; this task (priority %d, running %s) scored %.3f = priority + running/%s, the lowest",
			ug.Key, urgentRun, v.Slots, cfg.PreemptablePercent, vt.t.Priority, max(v.Now.Sub(vt.t.Started), 0), vt.score, cfg.PreemptThreshold)})
	}
	return stops
}

// why explains why job g's waiting tasks got no slot from the policy.
func (c *cycle) why(g int) (model.Reason, bool) {
	j, vg := &c.jobs[g], &c.v.Groups[g]
	switch {
	case j.suspended && j.level == 0:
		return model.Because(model.ReasonSuspended, "job %q has priority 0: suspended, it gets no slots", vg.Key), true
	case j.suspended:
		return model.Because(model.ReasonSuspended, "job %q has priority %d, whose weight is 0: suspended, it gets no slots", vg.Key, j.level), true
	case j.urgent:
		if note, ok := c.waitNote[g]; ok && c.given[g] < j.cap {
			return model.Because(model.ReasonNoFreeSlot, "urgent job %q runs %d tasks and waits for a free slot: %s", vg.Key, c.given[g], note), true
		}
		return model.Reason{}, false
	case c.given[g] < j.ideal:
		return model.Reason{}, false
	case c.p.cfg.Algorithm == AlgorithmTime:
		return model.Because(model.ReasonPolicyLimit, "job %q runs %d of the %d slots left to it (time algorithm: jobs are served in creation order%s, each taking all it can use%s)",
			vg.Key, c.given[g], j.ideal, c.serialNote(), c.urgentNote()), true
	}
	detail := fmt.Sprintf("weight %g of %g", j.eff, j.total)
	if c.p.cfg.Aggregation && j.peers > 1 {
		// With aggregation the total sums each level's weight once.
		detail = fmt.Sprintf("weight %g of %g at priority %d, shared by %d jobs", j.weight, j.total, j.level, j.peers)
	}
	if c.p.cfg.SerialPriority {
		detail += fmt.Sprintf("; serial priority: levels above %d are served first", j.level)
	}
	detail += c.urgentNote()
	return model.Because(model.ReasonPolicyLimit, "job %q runs %d of its ideal %d slots (%s)", vg.Key, c.given[g], j.ideal, detail), true
}

func (c *cycle) urgentNote() string {
	if c.urgentSlots > 0 {
		return fmt.Sprintf("; urgent jobs take %d of the %d slots first", c.urgentSlots, c.v.Slots)
	}
	return ""
}

func (c *cycle) serialNote() string {
	if c.p.cfg.SerialPriority {
		return ", higher priority first"
	}
	return ""
}
