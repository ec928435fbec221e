package sla

import (
	"math"
	"sort"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/perjob"
	"github.com/allot-sched/allot/internal/model"
)

// Name is the policy's name in configuration.
const Name = "sla"

// Kind registers the sla policy; its block is Config, which the policy
// cannot run without.
var Kind = policy.Kind{
	Name:     Name,
	Settings: (*Config)(nil),
	New: func(s policy.Settings) (policy.Policy, error) {
		cfg := s.(*Config)
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		return New(cfg.WithDefaults()), nil
	},
}

// Policy is the "sla" policy (seed 001, SLA mode). Each SLA group has a target:
// a slot count, or a fraction of the slots that take work. When the pool
// holds enough slots, every active group first gets its target (cut by what
// its jobs can use), then the remaining slots are split by the groups' SLA
// values, rounded up; when it does not, all slots are split by SLA value.
// A group's slots are split evenly among its jobs, and all jobs are served
// by the Usage algorithm, which evens out the rounding over time.
type Policy struct {
	cfg Config
	perjob.PerJob
	index  map[string]int // group name → position in cfg.Groups
	counts bool           // values are slot counts, not fractions
	last   perjob.Served  // the last Allocate's service order (policy.Ranker)
}

// New builds the policy from a validated config with defaults.
func New(cfg Config) *Policy {
	s := &Policy{cfg: cfg, PerJob: perjob.PerJob{Book: perjob.NewBook(cfg.UsageWindow)}, index: map[string]int{}, counts: !cfg.Fractional()}
	for i, g := range cfg.Groups {
		s.index[g.Name] = i
	}
	return s
}

// Name implements policy.Policy.
func (*Policy) Name() string { return Name }

// ServiceOrder implements policy.Ranker: jobs of known SLA groups by least
// usage per unit of their share, then creation.
func (s *Policy) ServiceOrder() ([]string, string) { return s.last.Order() }

// slaGroup is what one cycle works out about one SLA group.
type slaGroup struct {
	name    string
	value   float64
	target  int   // the SLA in slots
	members []int // its jobs, in usage order
	demand  int   // slots its jobs could hold
	running int   // tasks its jobs run (after this cycle's stops)
	need    int   // target cut by demand
	exact   float64
	ideal   int // need plus its share of the rest, or its share of all
	protect int // what preemption restores: min(need, ideal)
}

// slaCycle is one Allocate call's working state, kept for Why.
type slaCycle struct {
	s      *Policy
	v      *policy.View
	groups []*slaGroup // active groups, config order
	of     []*slaGroup // per job; nil when its group is unknown
	cap    []int
	eff    []float64 // a job's exact share of slots: its group's / members
	norm   []float64
	ideal  []int
	floor  []int
	given  []int
	enough bool
}

// Allocate implements policy.Policy.
func (s *Policy) Allocate(v *policy.View) policy.Plan {
	s.Book.StartCycle()
	s.Book.SetPool(v.Capacity)
	n := len(v.Groups)
	c := &slaCycle{s: s, v: v, of: make([]*slaGroup, n), cap: make([]int, n), eff: make([]float64, n),
		norm: make([]float64, n), ideal: make([]int, n), floor: make([]int, n), given: make([]int, n)}
	byName := map[string]*slaGroup{}
	for i, g := range v.Groups {
		c.cap[i] = g.Running + g.Usable
		c.given[i] = g.Running
		k, ok := s.index[g.SLAGroup]
		if !ok {
			continue
		}
		sg := byName[g.SLAGroup]
		if sg == nil {
			cg := s.cfg.Groups[k]
			sg = &slaGroup{name: cg.Name, value: cg.Value, target: int(cg.Value)}
			if !s.counts {
				sg.target = int(math.Floor(cg.Value*float64(v.Slots) + 1e-9))
			}
			byName[g.SLAGroup] = sg
		}
		c.of[i] = sg
		sg.members = append(sg.members, i)
		sg.demand += c.cap[i]
		sg.running += g.Running
	}
	for _, g := range s.cfg.Groups {
		if sg := byName[g.Name]; sg != nil {
			c.groups = append(c.groups, sg)
		}
	}
	c.split()

	// Usage: a new job starts as if it had run at its exact share.
	for i, g := range v.Groups {
		if sg := c.of[i]; sg != nil {
			c.eff[i] = sg.exact / float64(len(sg.members))
		}
		u := s.Book.Usage(s.Book.See(g.Key, c.eff[i], v.Now), v.Now)
		switch {
		case c.eff[i] > 0:
			c.norm[i] = perjob.Quantize(u / c.eff[i])
		case u > 0:
			c.norm[i] = math.Inf(1)
		}
	}
	order := make([]int, 0, n)
	for i := range v.Groups {
		if c.of[i] != nil {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		if c.norm[order[a]] != c.norm[order[b]] {
			return c.norm[order[a]] < c.norm[order[b]]
		}
		return v.Groups[order[a]].Seq < v.Groups[order[b]].Seq
	})
	for _, sg := range c.groups {
		sg.members = sg.members[:0]
	}
	for _, i := range order {
		sg := c.of[i]
		sg.members = append(sg.members, i)
	}
	for _, sg := range c.groups {
		for i, k := range perjob.Share(sg.ideal, sg.members, c.cap) {
			c.ideal[i] = k
		}
		for i, k := range perjob.Share(sg.protect, sg.members, c.cap) {
			c.floor[i] = k
		}
	}

	var stops []policy.Stop
	if s.cfg.Preemption {
		stops = c.preempt()
	}
	s.last.Reset(v, "least usage per unit of the SLA share, then creation")
	s.last.Add(order)
	alloc := perjob.NewAllocator(c.given, c.why)
	// SLAs first, then ideals, each pass serving jobs in order of least
	// usage so that the job a rounding shortfall hits is first next time;
	// what is left goes round-robin from the least used job on.
	alloc.Add(&perjob.Phase{Order: order, Target: perjob.UpTo(c.floor)})
	alloc.Add(&perjob.Phase{Order: order, Target: perjob.UpTo(c.ideal)})
	alloc.Add(&perjob.Phase{Order: append([]int(nil), order...), Target: perjob.NoLimit, RoundRobin: true})
	s.Book.Sweep(v.Now)
	return policy.Plan{Targets: append([]int(nil), c.ideal...), Stops: stops, Alloc: alloc}
}

// split works out each active group's ideal slots (seed 001): with enough
// slots for every group's need (its target cut by its demand), needs first,
// then the rest by SLA value among groups that can use more, rounded up;
// otherwise all slots by SLA value, rounded up. Ideals are capped by demand.
func (c *slaCycle) split() {
	slots := c.v.Slots
	needs, rest, restWeight, weight := 0, 0.0, 0.0, 0.0
	for _, sg := range c.groups {
		sg.need = min(sg.target, sg.demand)
		needs += sg.need
		weight += sg.value
		if sg.demand > sg.need {
			restWeight += sg.value
		}
	}
	c.enough = needs <= slots
	if c.enough {
		rest = float64(slots - needs)
	}
	for _, sg := range c.groups {
		switch {
		case !c.enough:
			sg.exact = float64(slots) * sg.value / weight
			sg.ideal = min(perjob.Ceil(sg.exact), sg.demand)
		case sg.demand > sg.need && restWeight > 0:
			part := rest * sg.value / restWeight
			sg.exact = float64(sg.need) + part
			sg.ideal = min(sg.need+perjob.Ceil(part), sg.demand)
		default:
			sg.exact = float64(sg.need)
			sg.ideal = sg.need
		}
		sg.protect = min(sg.need, sg.ideal)
	}
}

// preempt restores the SLA of groups that run below it while others run
// above theirs (seed 001, SLA task preemption): after the free slots, the
// remaining deficit is taken from the groups furthest above their SLA,
// newest task first, never taking a group below its SLA.
func (c *slaCycle) preempt() []policy.Stop {
	// Free slots go to the groups below their SLA first (in config order
	// here; the allocator serves them by usage); what is still missing is
	// taken from groups above their SLA.
	type gap struct {
		sg      *slaGroup
		missing int
	}
	var short []*gap
	free, n := c.v.Free, 0
	for _, sg := range c.groups {
		d := min(sg.protect-sg.running, sg.demand-sg.running)
		cover := min(max(d, 0), free)
		free -= cover
		if d -= cover; d > 0 {
			short = append(short, &gap{sg, d})
			n += d
		}
	}
	if n == 0 {
		return nil
	}
	type donor struct {
		sg     *slaGroup
		excess int
		tasks  []policy.RunningTask // newest first
	}
	var donors []*donor
	for _, sg := range c.groups {
		if sg.running <= sg.protect {
			continue
		}
		d := &donor{sg: sg, excess: sg.running - sg.protect}
		for _, i := range sg.members {
			if c.v.Groups[i].Running > 0 {
				d.tasks = append(d.tasks, c.v.RunningTasks(i)...)
			}
		}
		sort.Slice(d.tasks, func(a, b int) bool { return d.tasks[a].StartSeq > d.tasks[b].StartSeq })
		donors = append(donors, d)
	}
	var stops []policy.Stop
	for len(short) > 0 {
		var best *donor
		for _, d := range donors {
			if d.excess > 0 && (best == nil || d.excess > best.excess) {
				best = d
			}
		}
		if best == nil {
			break
		}
		to := short[0]
		t := best.tasks[0]
		best.tasks, best.excess = best.tasks[1:], best.excess-1
		c.given[t.Group]--
		stops = append(stops, policy.Stop{Task: t.ID, Reason: model.Because(model.ReasonPreempted,
			"preempted to restore SLA group %q (runs %d, its SLA guarantees %d); group %q runs %d, above its SLA %d",
			to.sg.name, to.sg.running, to.sg.protect, best.sg.name, best.sg.running, best.sg.protect)})
		if to.missing--; to.missing == 0 {
			short = short[1:]
		}
	}
	return stops
}

// why explains why job g's waiting tasks got no slot from the policy.
func (c *slaCycle) why(g int) (model.Reason, bool) {
	vg, sg := &c.v.Groups[g], c.of[g]
	if sg == nil {
		return model.Because(model.ReasonPolicyLimit, "job %q names SLA group %q, which the sla policy does not define", vg.Key, vg.SLAGroup), true
	}
	if c.given[g] < c.ideal[g] {
		return model.Reason{}, false
	}
	how := "SLA met first, the rest split by SLA value"
	if !c.enough {
		how = "too few slots for every SLA: all split by SLA value"
	}
	return model.Because(model.ReasonPolicyLimit, "job %q runs %d of its ideal %d slots (SLA group %q: SLA %d slots, group ideal %d of %d; %s)",
		vg.Key, c.given[g], c.ideal[g], sg.name, sg.target, sg.ideal, c.v.Slots, how), true
}
