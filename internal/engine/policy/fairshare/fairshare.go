// Package fairshare implements the fairshare policy (seed 003, AWS Batch
// fair-share scheduling): jobs are grouped by share identifier, and the share
// with the lowest weighted usage gets the next slot. Usage is slot-time times
// the share's weight factor, so a share with factor 0.5 runs twice as many
// tasks as one with factor 1 before it is served after it. Past usage can
// count with an exponential decay (shareDecaySeconds), and a compute
// reservation holds back part of the pool for shares that have no jobs yet,
// so their first jobs start at once.
//
// The engine registers Kind in its list of policies.
package fairshare

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// Kind registers the fairshare policy; its block is Config, all defaults
// when absent.
var Kind = policy.Kind{
	Name:     Name,
	Settings: (*Config)(nil),
	New:      func(s policy.Settings) (policy.Policy, error) { return New(s.(*Config)) },
}

// Name is the policy's name in configuration.
const Name = "fairshare"

// DefaultShare is the share of a job submitted without one. It is an
// ordinary share: a policy may name it to give it a weight factor.
const DefaultShare = "default"

// Policy is the fairshare policy of one queue. It keeps each share's running
// count and decayed usage between cycles, fed by the engine's Account calls.
// Like every policy it belongs to the engine's goroutine.
type Policy struct {
	cfg Config
	// exact maps a share named exactly to its entry (an index in
	// cfg.Shares); prefixes are the prefix entries, longest first;
	// resolved remembers the entry each share seen resolved to (-1: none).
	exact    map[string]int
	prefixes []prefixEntry
	resolved map[string]int
	named    []string // the entries of the policy, in config order
	tau      float64  // decay time constant in seconds; 0 = current usage only
	shares   map[string]*share
	seen     []*share // the shares of the last cycle's View
	// dominant says usage is measured by dominant share (usage: dominant);
	// pool is the pool's capacity as of the last event (a cycle, a start or
	// an end), which the usage from then on is measured against.
	dominant bool
	pool     policy.Capacity
	// below notes since when each share has been below its fair share with
	// tasks waiting (preemption only).
	below map[string]time.Time
}

// share is what the policy remembers about one share identifier.
type share struct {
	running int
	held    model.Amounts // what the running tasks hold (usage: dominant)
	// hist is the decayed slot-seconds at time at; when stamped is false,
	// at is not known yet and the next event stamps it without decaying.
	hist    float64
	at      time.Time
	stamped bool
	// waiting is the share's waiting tasks after the last cycle (the policy
	// hears of waiting tasks only through the cycle's View).
	waiting int
}

var (
	_ policy.Policy         = (*Policy)(nil)
	_ policy.HistoryTaker   = (*Policy)(nil)
	_ policy.HistoryGiver   = (*Policy)(nil)
	_ policy.DominantPolicy = (*Policy)(nil)
)

// New builds the policy from its configuration block; nil means all
// defaults. Errors name the offending field (fairshare.shares[1].weightFactor).
func New(cfg *Config) (*Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Policy{exact: map[string]int{}, resolved: map[string]int{}, shares: map[string]*share{}}
	if cfg != nil {
		p.cfg = *cfg
		p.cfg.Shares = append([]ShareWeight(nil), cfg.Shares...)
	}
	p.cfg.ReservationModel = p.cfg.Model()
	for i, s := range p.cfg.Shares {
		if prefix, ok := s.Prefix(); ok {
			p.prefixes = append(p.prefixes, prefixEntry{prefix: prefix, entry: i})
		} else {
			p.exact[s.Share] = i
		}
		p.named = append(p.named, s.Share)
	}
	sort.SliceStable(p.prefixes, func(a, b int) bool { return len(p.prefixes[a].prefix) > len(p.prefixes[b].prefix) })
	p.tau = float64(p.cfg.ShareDecaySeconds)
	return p, nil
}

// Name implements policy.Policy.
func (p *Policy) Name() string { return Name }

// GroupOf implements policy.Policy: a job's group is its share identifier,
// DefaultShare when it has none.
func (p *Policy) GroupOf(j *model.Job) string {
	if j.Share == "" {
		return DefaultShare
	}
	return j.Share
}

// Order implements policy.Policy: inside one share, higher job priority
// first, then submission order. Priority never reaches across shares.
func (p *Policy) Order() (policy.JobOrder, policy.TaskOrder) {
	return policy.ByPriorityThenAge, policy.ByDeclaration
}

// prefixEntry is a share identifier prefix entry ("UserA*") of the policy.
type prefixEntry struct {
	prefix string // without the '*'
	entry  int    // index in cfg.Shares
}

// entryOf returns the index in cfg.Shares of the entry that weighs share:
// its exact entry, else the longest prefix entry it starts with; -1 when
// none does. AWS Batch refuses policies whose entries overlap (UserA* and
// UserA1); on every policy it accepts, this is its rule, and on the others
// the more specific entry wins.
func (p *Policy) entryOf(share string) int {
	if i, ok := p.exact[share]; ok {
		return i
	}
	if len(p.prefixes) == 0 {
		return -1
	}
	if i, ok := p.resolved[share]; ok {
		return i
	}
	i := -1
	for _, e := range p.prefixes {
		if strings.HasPrefix(share, e.prefix) {
			i = e.entry
			break
		}
	}
	p.resolved[share] = i
	return i
}

// WeightFactor returns the weight factor of share, 1 when no entry of the
// policy weighs it.
func (p *Policy) WeightFactor(share string) float64 {
	if i := p.entryOf(share); i >= 0 {
		return p.cfg.Shares[i].Weight()
	}
	return 1
}

func (p *Policy) share(key string) *share {
	s, ok := p.shares[key]
	if !ok {
		s = &share{}
		p.shares[key] = s
	}
	return s
}

// Dominant implements policy.DominantPolicy: usage is measured by dominant
// share. A share's running usage is its dominant share of the pool times
// the pool's slots (slot-equivalents: a share holding a quarter of the GPUs
// of a 100-slot pool uses 25, as if it ran 25 one-slot tasks), its past
// usage integrates that over time (in slot-seconds, as under slots), and a
// start raises its key by what the task adds, times its weight factor.
// Targets are not slot counts any more, so none are reported; the status
// gives each share's dominant share and entitled fraction instead.
func (p *Policy) Dominant() { p.dominant = true }

// AccountAmounts implements policy.AmountsAccounter. The time up to at is
// measured against the pool as it was; from at on, against pool.
func (p *Policy) AccountAmounts(group string, delta model.Amounts, pool policy.Capacity, at time.Time) {
	s := p.share(group)
	p.advance(s, at)
	p.pool = pool
	s.held = s.held.Add(delta)
}

// rate is what a share counts as using now: its running tasks, or under
// dominant usage its slot-equivalents (dominant share × slots) of the pool
// as of the last event.
func (p *Policy) rate(running int, held model.Amounts) float64 {
	if p.dominant {
		return policy.DominantShare(running, held, p.pool) * float64(p.pool.Slots)
	}
	return float64(running)
}

// Account implements policy.Policy. Between two calls a share's running
// count is constant, so its decayed usage is integrated exactly (see
// decayed). Calls earlier than the share's last one (a task restored with a
// past start time) count from the last one.
func (p *Policy) Account(group string, delta int, at time.Time) {
	s := p.share(group)
	p.advance(s, at)
	s.running = max(0, s.running+delta)
}

// advance brings s's decayed usage forward to at.
func (p *Policy) advance(s *share, at time.Time) {
	if p.tau == 0 || at.IsZero() {
		return
	}
	if !s.stamped {
		s.at, s.stamped = at, true
		return
	}
	if dt := at.Sub(s.at).Seconds(); dt > 0 {
		s.hist = decayed(s.hist, p.rate(s.running, s.held), dt, p.tau)
		s.at = at
	}
}

// decayed returns the usage, dt seconds later, of a share that had usage h
// and ran r tasks all along: u(t) = ∫ r(s)·e^(−(t−s)/τ) ds, so
// u(t+dt) = h·e^(−dt/τ) + r·τ·(1 − e^(−dt/τ)). A share that runs r tasks
// for ever settles at r·τ, the same figure a sliding window of τ seconds
// gives, which is why τ = shareDecaySeconds.
func decayed(h, r float64, dt, tau float64) float64 {
	keep := math.Exp(-dt / tau)
	return h*keep + r*tau*-math.Expm1(-dt/tau)
}

// usage is the allocator's key for a share using r now (running tasks, or
// its dominant share) with decayed usage hist: w × (r + hist/τ), in
// weighted slots (or weighted dominant shares). With τ = 0 it is w × r, the
// current usage. hist/τ is the average the share used over the window, so
// history and current tasks weigh alike, and a task started in this cycle
// raises the key at once by w (by w times what it adds to the dominant
// share).
func (p *Policy) usage(w, r, hist float64) float64 {
	u := r
	if p.tau > 0 {
		u += hist / p.tau
	}
	return w * u
}

// SetHistory implements policy.HistoryTaker: h.Usage gives each share's past
// usage in slot-seconds (as consumed, before weighting), already decayed to
// now. With shareDecaySeconds 0 the policy looks at current usage only and
// ignores history. A zero now means "as of the next event the policy sees".
// Negative figures count as 0.
func (p *Policy) SetHistory(h policy.History, now time.Time) {
	if p.tau == 0 {
		return
	}
	for key, u := range h.Usage {
		s := p.share(key)
		p.advance(s, now)
		s.hist = max(0, u)
		if now.IsZero() {
			s.stamped = false
		} else if !s.stamped || now.After(s.at) {
			s.at, s.stamped = now, true
		}
	}
}

// History implements policy.HistoryGiver: each share's decayed usage at
// now, in the form SetHistory takes, so that a server can store it and a
// policy change can carry it over. Shares with no usage are left out; it is
// empty when shareDecaySeconds is 0.
func (p *Policy) History(now time.Time) policy.History {
	h := policy.History{Usage: map[string]float64{}}
	for key, s := range p.shares {
		if u := p.histAt(s, now); u > 0 {
			h.Usage[key] = u
		}
	}
	return h
}

// histAt is s's decayed usage at now, without changing s.
func (p *Policy) histAt(s *share, now time.Time) float64 {
	if p.tau == 0 {
		return 0
	}
	if s.stamped && !now.IsZero() {
		if dt := now.Sub(s.at).Seconds(); dt > 0 {
			return decayed(s.hist, p.rate(s.running, s.held), dt, p.tau)
		}
	}
	return s.hist
}

// Allocate implements policy.Policy. Every active share with waiting tasks
// goes into a heap keyed by its weighted usage; the engine takes the lowest,
// and each start raises that share's key by its weight factor, so shares
// interleave within one cycle. The reservation caps the active shares' total
// running tasks; it never stops running tasks.
func (p *Policy) Allocate(v *policy.View) policy.Plan {
	for _, s := range p.seen {
		s.waiting = 0
	}
	p.seen = p.seen[:0]
	a := &allocator{p: p, byGroup: make([]int32, len(v.Groups))}
	var stops []policy.Stop
	var stopped []int // per group
	if p.cfg.Preemption != nil && !p.dominant {
		stops, stopped = p.preempt(v)
	}
	running := 0
	for i, g := range v.Groups {
		if stopped != nil {
			// The engine stops these before it hands out slots: they
			// run no more and wait again.
			g.Running -= stopped[i]
			g.Waiting += stopped[i]
		}
		s := p.share(g.Key)
		p.advance(s, v.Now)
		s.waiting = g.Waiting
		p.seen = append(p.seen, s)
		running += g.Running
		a.byGroup[i] = -1
		if g.Waiting == 0 {
			continue
		}
		e := entry{group: i, sh: s, w: p.WeightFactor(g.Key), running: g.Running, held: g.Held, hist: s.hist}
		e.usage = p.usage(e.w, float64(e.running), e.hist)
		a.byGroup[i] = int32(len(a.heap.entries))
		a.heap.entries = append(a.heap.entries, e)
	}
	if p.dominant {
		// The time up to now was measured against the pool as it was;
		// from now on, against the pool as it is.
		p.pool = v.Capacity
		for k := range a.heap.entries {
			e := &a.heap.entries[k]
			e.usage = p.usage(e.w, p.rate(e.running, e.held), e.hist)
		}
	}
	// Rank the shares by name once, so that ties cost no string compares.
	a.heap.idx = make([]int32, len(a.heap.entries))
	for k := range a.heap.idx {
		a.heap.idx[k] = int32(k)
	}
	sort.Slice(a.heap.idx, func(x, y int) bool {
		return v.Groups[a.heap.entries[a.heap.idx[x]].group].Key < v.Groups[a.heap.entries[a.heap.idx[y]].group].Key
	})
	for r, k := range a.heap.idx {
		a.heap.entries[k].rank = r
	}
	a.heap.init()
	if p.cfg.ComputeReservation > 0 {
		a.res = p.reserve(v.Slots, activeKeys(v.Groups))
	} else {
		a.res = reservation{slots: v.Slots, cap: v.Slots}
	}
	a.running = running
	a.budget = max(0, a.res.cap-running)
	if p.dominant {
		return policy.Plan{Alloc: a} // no slot targets: see Dominant
	}
	return policy.Plan{Targets: p.targets(v.Groups, a.res.cap), Stops: stops, Alloc: a}
}

func activeKeys(gs []policy.Group) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.Key
	}
	return out
}

// reservation is what a compute reservation holds back in one cycle.
type reservation struct {
	slots    int
	fraction float64 // of the pool held back, before rounding to slots
	held     int     // slots held back
	cap      int     // slots the active shares may run in total
	idle     []string
	active   int
}

// reserve computes the reservation for a pool of slots with the given active
// shares. Even model: each named share without active jobs holds back
// R/N percent, so fraction = R × idle / (100 × N). Exponential model:
// fraction = (R/100)^active. The slots held back are the fraction of the
// pool rounded up, so the active shares never exceed their percentage; but
// the active shares keep at least one slot, so a reservation on a small pool
// never stops all work (the reason AWS caps R at 99).
func (p *Policy) reserve(slots int, active []string) reservation {
	r := reservation{slots: slots, cap: slots, active: len(active)}
	R := p.cfg.ComputeReservation
	if R == 0 || len(active) == 0 {
		return r
	}
	// An entry is active when a share it weighs is: a prefix entry counts
	// once, however many of its shares have work.
	isActive := make([]bool, len(p.named))
	for _, k := range active {
		if i := p.entryOf(k); i >= 0 {
			isActive[i] = true
		}
	}
	for i, k := range p.named {
		if !isActive[i] {
			r.idle = append(r.idle, k)
		}
	}
	switch p.cfg.ReservationModel {
	case ReservationExponential:
		r.fraction = math.Pow(float64(R)/100, float64(len(active)))
		r.held = int(math.Ceil(float64(slots)*r.fraction - 1e-9))
	default:
		n := len(p.named)
		if len(r.idle) == 0 {
			return r
		}
		r.fraction = float64(R*len(r.idle)) / float64(100*n)
		den := 100 * n
		r.held = (slots*R*len(r.idle) + den - 1) / den // exact integer ceiling
	}
	r.cap = slots - r.held
	if r.cap < 1 && slots > 0 {
		r.cap, r.held = 1, slots-1
	}
	return r
}

// targets gives each active share its entitled slots out of capSlots (the
// pool after the reservation): capSlots × (1/w) / Σ(1/w) over the active
// shares. Rounding is by largest remainder: each share gets the floor, then
// the slots left go one each to the largest fractional parts, ties to the
// lower weight factor and then the share name, so the targets add up to
// capSlots exactly. A target is an entitlement, not a limit: slots a share
// cannot use go to the others.
func (p *Policy) targets(gs []policy.Group, capSlots int) []int {
	out := make([]int, len(gs))
	if len(gs) == 0 {
		return out
	}
	total := 0.0
	for _, g := range gs {
		total += 1 / p.WeightFactor(g.Key)
	}
	type rem struct {
		i    int
		frac float64
	}
	rems := make([]rem, len(gs))
	left := capSlots
	for i, g := range gs {
		exact := float64(capSlots) * (1 / p.WeightFactor(g.Key)) / total
		fl := math.Floor(exact + 1e-9)
		out[i] = int(fl)
		left -= out[i]
		rems[i] = rem{i, exact - fl}
	}
	sort.SliceStable(rems, func(a, b int) bool {
		ra, rb := rems[a], rems[b]
		if ra.frac != rb.frac {
			return ra.frac > rb.frac
		}
		wa, wb := p.WeightFactor(gs[ra.i].Key), p.WeightFactor(gs[rb.i].Key)
		if wa != wb {
			return wa < wb
		}
		return gs[ra.i].Key < gs[rb.i].Key
	})
	for k := 0; left > 0 && k < len(rems); k++ {
		out[rems[k].i]++
		left--
	}
	return out
}

// entry is one share with waiting tasks in the allocator.
type entry struct {
	group   int // index in the View
	rank    int // the share name's place in sorted order: the tie-break
	sh      *share
	w       float64
	running int
	held    model.Amounts // running tasks and this cycle's starts (usage: dominant)
	hist    float64
	starts  int
	usage   float64
	pos     int // position in the heap, -1 once exhausted
}

// usageHeap is a binary min-heap of entry indexes, ordered by weighted usage
// and then by share name, so a cycle is deterministic. It holds indexes, not
// pointers, so that moving them costs no write barriers.
type usageHeap struct {
	entries []entry
	idx     []int32
}

func (h *usageHeap) less(i, j int) bool {
	a, b := &h.entries[h.idx[i]], &h.entries[h.idx[j]]
	if a.usage != b.usage {
		return a.usage < b.usage
	}
	return a.rank < b.rank
}

func (h *usageHeap) swap(i, j int) {
	h.idx[i], h.idx[j] = h.idx[j], h.idx[i]
	h.entries[h.idx[i]].pos = i
	h.entries[h.idx[j]].pos = j
}

func (h *usageHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *usageHeap) down(i int) {
	n := len(h.idx)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}

func (h *usageHeap) init() {
	for i := range h.idx {
		h.entries[h.idx[i]].pos = i
	}
	for i := len(h.idx)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *usageHeap) remove(i int) {
	last := len(h.idx) - 1
	h.entries[h.idx[i]].pos = -1
	if i != last {
		h.idx[i] = h.idx[last]
		h.entries[h.idx[i]].pos = i
	}
	h.idx = h.idx[:last]
	if i < last {
		h.down(i)
		h.up(i)
	}
}

// allocator hands out one cycle's slots in order of weighted usage.
type allocator struct {
	p       *Policy
	heap    usageHeap
	byGroup []int32 // View group index → entry index, -1 for shares with nothing waiting
	res     reservation
	running int // the active shares' running tasks at the start of the cycle
	starts  int
	budget  int // starts left under the reservation cap
}

// Next implements policy.Allocator: the share with the lowest weighted usage,
// while the reservation cap leaves room.
func (a *allocator) Next() (int, bool) {
	if a.budget <= 0 || len(a.heap.idx) == 0 {
		return 0, false
	}
	return a.heap.entries[a.heap.idx[0]].group, true
}

// Started implements policy.Allocator: the share's usage grows by one slot
// times its weight factor, which moves it down the heap.
func (a *allocator) Started(g int) {
	a.budget--
	a.starts++
	if g < 0 || g >= len(a.byGroup) || a.byGroup[g] < 0 {
		return
	}
	e := &a.heap.entries[a.byGroup[g]]
	e.starts++
	e.usage = a.p.usage(e.w, a.p.rate(e.running+e.starts, e.held), e.hist)
	if e.pos >= 0 {
		a.heap.down(e.pos)
	}
	if e.sh.waiting > 0 {
		e.sh.waiting--
	}
}

// Took implements policy.SizedAllocator: the task about to be reported
// Started holds a, which counts in its share's dominant share.
func (a *allocator) Took(g int, amt model.Amounts) {
	if g >= 0 && g < len(a.byGroup) && a.byGroup[g] >= 0 {
		e := &a.heap.entries[a.byGroup[g]]
		e.held = e.held.Add(amt)
	}
}

// Exhausted implements policy.Allocator.
func (a *allocator) Exhausted(g int) {
	if g < 0 || g >= len(a.byGroup) || a.byGroup[g] < 0 {
		return
	}
	if e := &a.heap.entries[a.byGroup[g]]; e.pos >= 0 {
		a.heap.remove(e.pos)
	}
}

// Why implements policy.Allocator: the policy holds a share back only when
// the reservation cap is reached; otherwise the pool was simply full.
func (a *allocator) Why(int) (model.Reason, bool) {
	r := a.res
	if r.held == 0 || a.running+a.starts < r.cap {
		return model.Reason{}, false
	}
	who := "any share not active yet"
	if len(r.idle) > 0 {
		who = strings.Join(r.idle, ", ")
	}
	var rule string
	if a.p.cfg.ReservationModel == ReservationExponential {
		rule = fmt.Sprintf("computeReservation %d%% with %d active shares holds back (%d/100)^%d = %.4g%%",
			a.p.cfg.ComputeReservation, r.active, a.p.cfg.ComputeReservation, r.active, 100*r.fraction)
	} else {
		rule = fmt.Sprintf("computeReservation %d%% spread over %d named shares holds back %.4g%%",
			a.p.cfg.ComputeReservation, len(a.p.named), 100*r.fraction)
	}
	return model.Because(model.ReasonPolicyLimit,
		"capacity reserved for shares without jobs: %s (%s: %d of %d slots; the active shares may run %d and run %d)",
		who, rule, r.held, r.slots, r.cap, a.running+a.starts), true
}

// ShareStatus is one share as users see it: its weight, usage and
// entitlement. The API and the dashboard show it.
type ShareStatus struct {
	Share string `json:"share"`
	// Named says an entry of the policy weighs the share: its own, or a
	// prefix entry it starts with (with a weight factor, or for the
	// reservation).
	Named        bool    `json:"named"`
	WeightFactor float64 `json:"weightFactor"`
	Running      int     `json:"running"`
	// Waiting is the share's waiting tasks after the last cycle.
	Waiting int `json:"waiting"`
	// SlotSeconds is the share's decayed past usage, before weighting; 0
	// when shareDecaySeconds is 0. Under usage: dominant it counts
	// slot-equivalents (dominant share × the pool's slots) over time.
	SlotSeconds float64 `json:"slotSeconds"`
	// DominantShare is the largest fraction of any resource kind of the
	// pool the share's running tasks hold; only under usage: dominant.
	DominantShare float64 `json:"dominantShare,omitempty"`
	// Usage is the weighted usage the allocator orders shares by:
	// weightFactor × (running + slotSeconds / shareDecaySeconds), with
	// dominantShare × the pool's slots for running under usage: dominant.
	// The share with the lowest usage is served next.
	Usage float64 `json:"usage"`
	// EntitledFraction is the fraction of the pool the share is entitled to
	// now: (1 − reserved fraction) × (1/w) / Σ(1/w) over the active shares,
	// 0 for a share with nothing running or waiting.
	EntitledFraction float64 `json:"entitledFraction"`
}

// Status reports every share the policy names or has seen, sorted by share,
// with its usage at now. It changes nothing.
func (p *Policy) Status(now time.Time) []ShareStatus {
	keys := make(map[string]bool, len(p.shares)+len(p.named))
	for k := range p.shares {
		keys[k] = true
	}
	for _, k := range p.named {
		keys[k] = true
	}
	out := make([]ShareStatus, 0, len(keys))
	var active []string
	for k := range keys {
		st := ShareStatus{Share: k, WeightFactor: p.WeightFactor(k)}
		st.Named = p.entryOf(k) >= 0
		if s := p.shares[k]; s != nil {
			st.Running, st.Waiting = s.running, s.waiting
			st.SlotSeconds = p.histAt(s, now)
			if p.dominant {
				st.DominantShare = policy.DominantShare(s.running, s.held, p.pool)
			}
		}
		r := float64(st.Running)
		if s := p.shares[k]; s != nil && p.dominant {
			r = p.rate(s.running, s.held)
		}
		st.Usage = p.usage(st.WeightFactor, r, st.SlotSeconds)
		if st.Running > 0 || st.Waiting > 0 {
			active = append(active, k)
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Share < out[j].Share })
	sort.Strings(active)
	res := p.reserve(0, active)
	total := 0.0
	for _, k := range active {
		total += 1 / p.WeightFactor(k)
	}
	for i := range out {
		if out[i].Running > 0 || out[i].Waiting > 0 {
			out[i].EntitledFraction = (1 - res.fraction) * (1 / out[i].WeightFactor) / total
		}
	}
	return out
}

// Report implements policy.Reporter: each share's usage, weight and
// entitled fraction.
func (p *Policy) Report(now time.Time) any { return p.Status(now) }
