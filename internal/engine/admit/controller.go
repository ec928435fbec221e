package admit

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// Errors of Check and the endpoint changes. The engine wraps them.
var (
	ErrUnknownEndpoint = errors.New("unknown endpoint")
	ErrUnknownVariant  = errors.New("unknown variant")
)

// Controller is the admission state: the configured endpoints, one pool per
// (endpoint, variant) with its waiting jobs in submission order and the load
// of its admitted jobs, and the counters behind the metrics. It is not safe
// for concurrent use; the engine owns it.
type Controller struct {
	s      Settings
	eps    map[string]*endpoint
	epList []*endpoint // by name
	jobs   map[string]*Job
	rng    *rand.Rand
	pass   uint64
}

// endpoint is one endpoint, configured or left over: an endpoint removed
// while jobs still used it stays, with capacity 0, until they end.
type endpoint struct {
	name       string
	spec       model.Endpoint
	configured bool
	pools      []*pool // configured variants in order, then leftovers by name
	load       int     // Σ pool load
	max        int     // Σ pool max capacity
	errors     uint64  // errors not attributed to a variant
	deadLetter uint64
}

// pool is one (endpoint, variant): the unit of the capacity check.
type pool struct {
	ep         *endpoint
	name       string // variant name; "" for an endpoint without variants
	weight     float64
	configured bool
	max        int
	target     int
	load       int // Σ loads of admitted jobs that have not ended
	running    int // admitted jobs that have not ended
	// Waiting jobs, oldest first. Jobs from firstFresh on have never been
	// throttled; as every pass evaluates a pool's jobs in this order, they
	// are always a suffix of the list.
	head, tail *Job
	firstFresh *Job
	waiting    int
	loadCount  map[int]int // waiting jobs per load, for the smallest load
	// waitingTasks and tasksByLoad count the waiting jobs' tasks (as the
	// engine gives them, SetWaitingTasks), in all and per load: how many
	// tasks each pending reason covers (WaitingTasks).
	waitingTasks int
	tasksByLoad  map[int]int
	minLoad      int // smallest waiting load; valid unless minDirty
	minDirty     bool
	reserved     *Job // the starving job that holds the pool
	// Per-pass state, valid when passID is the controller's pass.
	passID          uint64
	cursor          *Job
	closed          bool
	throttledInPass int
	// Counters.
	submitted, admitted, throttles, invocations, exceptions, reservations, errors uint64
	// ver changes whenever what a pending reason says changes; memo holds
	// the reasons formatted for ver.
	ver     uint64
	memoVer uint64
	memo    map[reasonKey]model.Reason
}

type reasonKey struct {
	load int
	kind int8
}

type jobState int8

const (
	jobWaiting jobState = iota
	jobAdmitted
)

// Job is the admission record of one endpoint job.
type Job struct {
	ID         string
	Endpoint   string
	Variant    string
	Load       int
	LoadSource string
	// Submitted is when the engine received the job; ThrottledAt when it
	// was first throttled (zero if never); AdmittedAt when it was admitted.
	Submitted   time.Time
	ThrottledAt time.Time
	AdmittedAt  time.Time
	// Exception says the job was admitted by the single-job exception:
	// its load exceeded the available capacity, but nothing else ran.
	Exception bool

	seq        uint64
	tasks      int // the job's waiting tasks, counted in its pool while it waits
	state      jobState
	throttled  bool
	pool       *pool
	prev, next *Job
}

// New builds a controller; seed drives variant selection only, so other
// random choices of the engine do not shift it.
func New(cfg Config, seed uint64) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Controller{s: cfg.Settings.resolved(), eps: map[string]*endpoint{}, jobs: map[string]*Job{},
		rng: rand.New(rand.NewPCG(seed^0x5851f42d4c957f2d, seed+0x14057b7ef767814f))}
	for _, ep := range cfg.Endpoints {
		c.setEndpoint(ep)
	}
	return c, nil
}

// Settings returns the throttling settings in force, defaults filled in.
func (c *Controller) Settings() Settings { return c.s }

// SetSettings changes the throttling settings at run time. A new target
// applies to the next pass; admitted jobs keep their loads.
func (c *Controller) SetSettings(s Settings) error {
	if ps := s.problems(); len(ps) > 0 {
		return ps[0]
	}
	c.s = s.resolved()
	for _, ep := range c.epList {
		c.refresh(ep)
	}
	return nil
}

// Endpoints returns the configured endpoints, by name.
func (c *Controller) Endpoints() []model.Endpoint {
	var out []model.Endpoint
	for _, ep := range c.epList {
		if ep.configured {
			out = append(out, ep.spec)
		}
	}
	return out
}

// SetEndpoint adds or replaces an endpoint, as when an autoscaler changes
// its instance count. Jobs keep their variant; a variant that no longer
// exists has capacity 0, so its jobs run one at a time (the single-job
// exception) until it is configured again.
func (c *Controller) SetEndpoint(ep model.Endpoint) error {
	if ps := endpointProblems("", ep); len(ps) > 0 {
		return ps[0]
	}
	c.setEndpoint(ep)
	return nil
}

func (c *Controller) setEndpoint(spec model.Endpoint) {
	spec.Variants = slices.Clone(spec.Variants)
	ep, ok := c.eps[spec.Name]
	if !ok {
		ep = &endpoint{name: spec.Name}
		c.eps[spec.Name] = ep
		i, _ := slices.BinarySearchFunc(c.epList, spec.Name, func(e *endpoint, n string) int { return strings.Compare(e.name, n) })
		c.epList = slices.Insert(c.epList, i, ep)
	}
	ep.spec, ep.configured = spec, true
	c.refresh(ep)
}

// RemoveEndpoint removes an endpoint. Jobs that wait for it or run on it
// stay, against a capacity of 0, until they end; new jobs naming it are
// refused.
func (c *Controller) RemoveEndpoint(name string) error {
	ep, ok := c.eps[name]
	if !ok || !ep.configured {
		return fmt.Errorf("%w %q", ErrUnknownEndpoint, name)
	}
	ep.configured = false
	c.refresh(ep)
	return nil
}

// refresh recomputes the pools of ep from its spec and the settings, and
// drops what nothing uses any more.
func (c *Controller) refresh(ep *endpoint) {
	old := map[string]*pool{}
	for _, p := range ep.pools {
		old[p.name] = p
	}
	var pools []*pool
	if ep.configured {
		for _, v := range Variants(ep.spec) {
			p := old[v.Name]
			if p == nil {
				p = &pool{ep: ep, name: v.Name, loadCount: map[int]int{}}
			}
			delete(old, v.Name)
			p.configured, p.weight = true, v.Weight
			p.max = MaxCapacity(ep.spec, v, c.s)
			p.target = TargetCapacity(p.max, c.s.CapacityTargetPercentage)
			p.ver++
			pools = append(pools, p)
		}
	}
	var left []*pool
	for _, p := range old {
		if p.waiting > 0 || p.running > 0 {
			p.configured, p.max, p.target, p.weight = false, 0, 0, 0
			p.ver++
			left = append(left, p)
		}
	}
	slices.SortFunc(left, func(a, b *pool) int { return strings.Compare(a.name, b.name) })
	ep.pools = append(pools, left...)
	ep.max = 0
	for _, p := range ep.pools {
		ep.max += p.max
	}
	if !ep.configured && len(ep.pools) == 0 {
		delete(c.eps, ep.name)
		c.epList = slices.DeleteFunc(c.epList, func(e *endpoint) bool { return e == ep })
	}
}

// Check says whether j may be submitted: its endpoint is configured and a
// variant it names is one of the endpoint's. A refusal is a field error on
// the job's field (endpoint, variant) that wraps ErrUnknownEndpoint or
// ErrUnknownVariant; nil means j may be submitted.
func (c *Controller) Check(j model.Job) *model.FieldError {
	ep, ok := c.eps[j.Endpoint]
	if !ok || !ep.configured {
		return &model.FieldError{Path: "endpoint", Msg: fmt.Sprintf("%v %q", ErrUnknownEndpoint, j.Endpoint), Err: ErrUnknownEndpoint}
	}
	if j.Variant == "" {
		return nil
	}
	for _, v := range Variants(ep.spec) {
		if v.Name == j.Variant {
			return nil
		}
	}
	return &model.FieldError{Path: "variant", Msg: fmt.Sprintf("%v %q of endpoint %q", ErrUnknownVariant, j.Variant, j.Endpoint), Err: ErrUnknownVariant}
}

// Enqueue records a job that passed Check as waiting for admission: its load
// is estimated and its variant selected, once (stage 2 of the seed): the
// variant it names; else the only one; else one drawn at random with the
// variants' weights. seq orders jobs by age.
func (c *Controller) Enqueue(j model.Job, seq uint64, now time.Time) *Job {
	ep := c.eps[j.Endpoint]
	variant := j.Variant
	if variant == "" {
		variant = c.pick(Variants(ep.spec))
	}
	load, source := Estimate(j, c.s)
	r := &Job{ID: j.ID, Endpoint: j.Endpoint, Variant: variant, Load: load, LoadSource: source, Submitted: now, seq: seq}
	p := c.pool(ep, variant)
	p.submitted++
	c.jobs[j.ID] = r
	p.push(r)
	return r
}

// RestoreThrottledAt gives a waiting job the time it was first throttled
// before a restart, so that its starvation wait (and what the API shows)
// counts from then, not from its first pass in this process. It reports
// whether the job waits for admission here.
func (c *Controller) RestoreThrottledAt(id string, at time.Time) bool {
	j, ok := c.jobs[id]
	if !ok || j.state != jobWaiting {
		return false
	}
	if j.ThrottledAt.IsZero() || at.Before(j.ThrottledAt) {
		j.ThrottledAt = at
	}
	return true
}

// pick selects a variant by weighted random choice.
func (c *Controller) pick(vs []model.Variant) string {
	if len(vs) == 1 {
		return vs[0].Name
	}
	total := 0.0
	for _, v := range vs {
		total += v.Weight
	}
	x := c.rng.Float64() * total
	last := ""
	for _, v := range vs {
		if v.Weight <= 0 {
			continue
		}
		if x < v.Weight {
			return v.Name
		}
		x -= v.Weight
		last = v.Name
	}
	return last // rounding left x at the very top
}

// pool returns the pool of (ep, variant), creating a leftover one for a
// variant that is not configured.
func (c *Controller) pool(ep *endpoint, variant string) *pool {
	for _, p := range ep.pools {
		if p.name == variant {
			return p
		}
	}
	p := &pool{ep: ep, name: variant, loadCount: map[int]int{}}
	ep.pools = append(ep.pools, p)
	return p
}

// Job returns the admission record of an endpoint job that has not ended.
func (c *Controller) Job(id string) (*Job, bool) {
	j, ok := c.jobs[id]
	return j, ok
}

// Admitted reports whether the job was admitted.
func (j *Job) Admitted() bool { return j.state == jobAdmitted }

// push appends j to the waiting list.
func (p *pool) push(j *Job) {
	j.pool, j.state = p, jobWaiting
	j.prev, j.next = p.tail, nil
	if p.tail != nil {
		p.tail.next = j
	} else {
		p.head = j
	}
	p.tail = j
	if p.firstFresh == nil && !j.throttled {
		p.firstFresh = j
	}
	p.waiting++
	p.loadCount[j.Load]++
	p.countTasks(j.Load, j.tasks)
	if !p.minDirty && (p.waiting == 1 || j.Load < p.minLoad) {
		p.minLoad = j.Load
	}
	p.ver++
}

// unlink takes j out of the waiting list.
func (p *pool) unlink(j *Job) {
	if p.firstFresh == j {
		p.firstFresh = j.next
	}
	if p.cursor == j {
		p.cursor = j.next
	}
	if j.prev != nil {
		j.prev.next = j.next
	} else {
		p.head = j.next
	}
	if j.next != nil {
		j.next.prev = j.prev
	} else {
		p.tail = j.prev
	}
	j.prev, j.next = nil, nil
	p.waiting--
	p.countTasks(j.Load, -j.tasks)
	if p.loadCount[j.Load]--; p.loadCount[j.Load] == 0 {
		delete(p.loadCount, j.Load)
		if j.Load == p.minLoad {
			p.minDirty = true
		}
	}
	if p.reserved == j {
		p.reserved = nil
	}
	p.ver++
}

// countTasks counts n more (or, negative, fewer) waiting tasks of jobs of
// load load.
func (p *pool) countTasks(load, n int) {
	if n == 0 {
		return
	}
	if p.tasksByLoad == nil {
		p.tasksByLoad = map[int]int{}
	}
	p.waitingTasks += n
	if v := p.tasksByLoad[load] + n; v != 0 {
		p.tasksByLoad[load] = v
	} else {
		delete(p.tasksByLoad, load)
	}
}

// SetWaitingTasks tells how many tasks of job id wait while the job waits
// for admission; the engine calls it when the number changes. A job that
// does not wait here is ignored.
func (c *Controller) SetWaitingTasks(id string, n int) {
	j, ok := c.jobs[id]
	if !ok || j.state != jobWaiting || n == j.tasks {
		return
	}
	j.pool.countTasks(j.Load, n-j.tasks)
	j.tasks = n
}

// smallestWaiting is the smallest load among the waiting jobs.
func (p *pool) smallestWaiting() int {
	if p.minDirty {
		p.minDirty = false
		first := true
		for l := range p.loadCount {
			if first || l < p.minLoad {
				p.minLoad, first = l, false
			}
		}
	}
	return p.minLoad
}

// available is the target capacity left: target − Σ admitted loads.
func (p *pool) available() int { return p.target - p.load }

// ForceAdmit admits a waiting job without a capacity check: a job found
// running when the state is restored was admitted before.
func (c *Controller) ForceAdmit(id string, now time.Time) bool {
	j, ok := c.jobs[id]
	if !ok || j.state != jobWaiting {
		return false
	}
	c.admit(j, now)
	return true
}

func (c *Controller) admit(j *Job, now time.Time) {
	p := j.pool
	p.unlink(j)
	j.state, j.AdmittedAt = jobAdmitted, now
	p.load += j.Load
	p.running++
	p.ep.load += j.Load
	p.admitted++
	p.ver++
}

// Release forgets a job that ended (all its tasks in an end state) or was
// cancelled: an admitted job's load is freed, a waiting one leaves the
// queue.
func (c *Controller) Release(id string) {
	j, ok := c.jobs[id]
	if !ok {
		return
	}
	delete(c.jobs, id)
	p := j.pool
	if j.state == jobWaiting {
		p.unlink(j)
	} else {
		p.load -= j.Load
		p.running--
		p.ep.load -= j.Load
		p.ver++
	}
	j.pool = nil
	if !p.configured && p.waiting == 0 && p.running == 0 {
		c.refresh(p.ep)
	}
}

// Pass is one admission pass at time now, stages 3 to 5 of the seed.
// Repeatedly, among the endpoints with jobs not yet evaluated in this pass,
// the least loaded (Σ admitted loads / Σ max capacity, ties to the endpoint
// whose candidate is older, then by name) offers its oldest such job. The
// job's variant decides: with throttling off, or when its load fits the
// available capacity (case 1), or when no other job of the variant runs
// (case 3, the single-job exception), the job is admitted; otherwise it is
// throttled (case 2) and the pass moves on to the next job. A throttled job
// that has been the variant's oldest for StarvationWait reserves the
// variant: later jobs there wait until it is admitted. Pass returns the
// admitted jobs and the jobs throttled for the first time, in decision
// order.
func (c *Controller) Pass(now time.Time) (admitted, throttled []*Job) {
	c.pass++
	h := epHeap{}
	for _, ep := range c.epList {
		any := false
		for _, p := range ep.pools {
			p.passID, p.cursor, p.closed, p.throttledInPass = c.pass, p.head, false, 0
			any = any || p.head != nil
		}
		if any {
			h.items = append(h.items, ep)
		}
	}
	if len(h.items) == 0 {
		return nil, nil
	}
	heap.Init(&h)
	for h.Len() > 0 {
		ep := h.items[0]
		p := ep.candidatePool()
		if p == nil {
			heap.Pop(&h)
			continue
		}
		j := p.cursor
		p.cursor = j.next
		p.invocations++
		switch {
		case p.reserved != nil && p.reserved != j:
			throttled = c.throttle(p, j, now, throttled)
			throttled = c.close(p, now, throttled)
		case !c.s.Enabled || j.Load <= p.available():
			c.admit(j, now)
			admitted = append(admitted, j)
		case p.running == 0:
			j.Exception = true
			p.exceptions++
			c.admit(j, now)
			admitted = append(admitted, j)
		default:
			throttled = c.throttle(p, j, now, throttled)
			if w := c.s.StarvationWait; w > 0 && p.head == j && p.reserved == nil && now.Sub(j.ThrottledAt) >= w {
				p.reserved = j
				p.reservations++
				p.ver++
			}
			if p.reserved != nil || p.available() < p.smallestWaiting() {
				throttled = c.close(p, now, throttled)
			}
		}
		if j.state == jobAdmitted && c.s.AdmissionsPerCycle > 0 && len(admitted) >= c.s.AdmissionsPerCycle {
			break
		}
		heap.Fix(&h, 0)
	}
	return admitted, throttled
}

// throttle records that j was held back in this pass.
func (c *Controller) throttle(p *pool, j *Job, now time.Time, out []*Job) []*Job {
	p.throttledInPass++
	if j.throttled {
		return out
	}
	j.throttled = true
	if j.ThrottledAt.IsZero() { // else restored: the job waits since then
		j.ThrottledAt = now
	}
	p.throttles++
	if p.firstFresh == j {
		p.firstFresh = j.next
	}
	return append(out, j)
}

// close throttles every job of p not yet evaluated in this pass: none can
// be admitted before the pool changes, because the pool is reserved or its
// available capacity is below the smallest waiting load while other jobs
// run. Only jobs never throttled before are visited, so a long queue costs
// nothing per pass.
func (c *Controller) close(p *pool, now time.Time, out []*Job) []*Job {
	p.closed = true
	p.invocations += uint64(p.waiting - p.throttledInPass)
	for j := p.firstFresh; j != nil; j = j.next {
		j.throttled = true
		if j.ThrottledAt.IsZero() {
			j.ThrottledAt = now
		}
		p.throttles++
		out = append(out, j)
	}
	p.firstFresh = nil
	p.cursor = nil
	return out
}

// candidatePool returns the pool holding ep's oldest job not yet evaluated
// in this pass.
func (ep *endpoint) candidatePool() *pool {
	var best *pool
	for _, p := range ep.pools {
		if p.closed || p.cursor == nil {
			continue
		}
		if best == nil || p.cursor.seq < best.cursor.seq {
			best = p
		}
	}
	return best
}

// epHeap orders endpoints for load-balanced selection.
type epHeap struct{ items []*endpoint }

func (h *epHeap) Len() int { return len(h.items) }
func (h *epHeap) Less(a, b int) bool {
	x, y := h.items[a], h.items[b]
	// x.load / max(1, x.max) against y.load / max(1, y.max), exactly.
	lx, ly := int64(x.load)*int64(max(1, y.max)), int64(y.load)*int64(max(1, x.max))
	if lx != ly {
		return lx < ly
	}
	px, py := x.candidatePool(), y.candidatePool()
	switch {
	case px == nil || py == nil:
		return px != nil
	case px.cursor.seq != py.cursor.seq:
		return px.cursor.seq < py.cursor.seq
	}
	return x.name < y.name
}
func (h *epHeap) Swap(a, b int) { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *epHeap) Push(x any)    { h.items = append(h.items, x.(*endpoint)) }
func (h *epHeap) Pop() any {
	n := len(h.items) - 1
	x := h.items[n]
	h.items = h.items[:n]
	return x
}
