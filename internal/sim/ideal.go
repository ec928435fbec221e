package sim

import (
	"fmt"
	"math"
	"sort"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/classload"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/model"
)

// IdealFairness measures a run against the weighted max-min fair
// (water-filling) allocation of the pool. At every instant of the run each
// fairness group's demand is its waiting plus running tasks; the ideal gives
// each group min(demand, its weighted part of what is left), and the error
// is Σ|running − ideal| over the groups divided by the pool's slots: 0 when
// the policy runs exactly the ideal, up to 2 when it runs the opposite.
// Unlike Jain's index it does not punish a policy for groups that have no
// work. docs/simulator.md defines the groups and weights of each policy.
type IdealFairness struct {
	// Groups says what a fairness group is and how it is weighed, for
	// readers of the report ("share, weight 1/weightFactor").
	Groups string `json:"groups"`
	// MeanError is the time-weighted mean of the error over the time at
	// least one group had demand; P95Error its time-weighted 95th
	// percentile (the smallest error the run stayed at or below for 95% of
	// that time); MaxError the largest.
	MeanError float64 `json:"meanError"`
	P95Error  float64 `json:"p95Error"`
	MaxError  float64 `json:"maxError"`
	// FloorMeanError is the time-weighted mean of the least error any
	// allocation of whole slots could have: the ideal is fractional (70
	// groups on 64 slots get 0.91 each), a policy runs whole tasks. It is
	// the part of MeanError no policy can remove.
	FloorMeanError float64 `json:"floorMeanError"`
	// DemandSeconds is the time those figures weigh.
	DemandSeconds float64 `json:"demandSeconds"`
	// Window is the same measure over the decay window's usage, for a
	// fairshare queue with shareDecaySeconds.
	Window *WindowFairness `json:"window,omitempty"`
}

// WindowFairness compares each group's usage decayed over the fairshare
// decay window (u(t) = ∫ running(s)·e^(−(t−s)/τ) ds, the policy's own
// measure) with the same integral of its ideal allocation: the error is
// Σ|usage − ideal usage| divided by the pool's usage over the window
// (slots·τ·(1 − e^(−t/τ))). It shows how far a policy that evens out
// usage over time is from evening out the ideal.
type WindowFairness struct {
	DecaySeconds float64 `json:"decaySeconds"`
	MeanError    float64 `json:"meanError"`
	P95Error     float64 `json:"p95Error"`
	MaxError     float64 `json:"maxError"`
}

// fairGroups says how jobs map to fairness groups and what each weighs.
type fairGroups struct {
	key    func(*model.Job) string
	weight func(key string) float64
	desc   string
	tau    float64 // fairshare decay window in seconds; 0 none
}

// fairGroupsOf defines the fairness groups of cfg: a fairshare queue's
// shares weighted 1/weightFactor, a classload queue's classes weighted by
// their percentage, and for the other policies (fifo, priority, sla,
// perjob) the job's share with equal weights, the unit users are usually
// compared by. With several queues a group is queue/group and keeps its
// queue's weight; queues are not weighed against each other.
func fairGroupsOf(cfg engine.Config) (fairGroups, error) {
	type queueFair struct {
		pol    policy.Policy
		kind   string
		weight func(group string) float64
	}
	qs := map[string]queueFair{}
	var descs []string
	var tau float64
	for i, q := range cfg.Queues {
		p, err := policy.New(q.Policy)
		if err != nil {
			return fairGroups{}, model.FieldErrorOf(fmt.Sprintf("queues[%d].policy", i), err)
		}
		qf := queueFair{pol: p, kind: q.Policy.Kind, weight: func(string) float64 { return 1 }}
		switch s := q.Policy.Settings.(type) {
		case *fairshare.Config:
			if wf, ok := p.(interface{ WeightFactor(string) float64 }); ok {
				qf.weight = func(g string) float64 { return 1 / wf.WeightFactor(g) }
			}
			if s != nil && s.ShareDecaySeconds > 0 && tau == 0 {
				tau = float64(s.ShareDecaySeconds)
			}
			descs = append(descs, q.Name+": shares, weight 1/weightFactor")
		case *classload.Config:
			pct := map[string]float64{}
			for _, c := range s.Classes {
				pct[c.Name] = float64(c.Percent)
			}
			qf.weight = func(g string) float64 { return pct[g] }
			descs = append(descs, q.Name+": classes, weight percent")
		default:
			qf.kind = ""
			descs = append(descs, q.Name+": shares, equal weights")
		}
		if q.Policy.Kind == fairshare.Name && q.Policy.Settings == nil {
			qf.kind = fairshare.Name // all defaults: shares of weight 1
			descs[len(descs)-1] = q.Name + ": shares, weight 1/weightFactor"
		}
		qs[q.Name] = qf
	}
	multi := len(cfg.Queues) > 1
	weights := map[string]float64{}
	key := func(j *model.Job) string {
		qf, ok := qs[j.Queue]
		var g string
		switch {
		case !ok:
			g = j.Queue
		case qf.kind == fairshare.Name || qf.kind == classload.Name:
			g = qf.pol.GroupOf(j)
		case j.Share == "":
			g = "(none)"
		default:
			g = j.Share
		}
		k := g
		if multi {
			k = j.Queue + "/" + g
		}
		if _, seen := weights[k]; !seen {
			w := 1.0
			if ok {
				w = qf.weight(g)
			}
			weights[k] = w
		}
		return k
	}
	desc := ""
	for i, d := range descs {
		if i > 0 {
			desc += "; "
		}
		desc += d
	}
	if !multi && len(descs) == 1 {
		desc = descs[0][len(cfg.Queues[0].Name)+2:]
	}
	return fairGroups{key: key, weight: func(k string) float64 { return weights[k] }, desc: desc, tau: tau}, nil
}

// fairTrack follows the fairness groups' running and waiting tasks through
// the run and measures, after every instant, the distance from the ideal.
type fairTrack struct {
	desc   string
	pool   float64
	tau    float64
	keys   []string
	weight []float64
	run    []int32
	wait   []int32
	dirty  bool

	// scratch of each instant
	demand, ideal []float64
	order         []int
	fracs         []float64

	// the value in force since at
	at      int64
	err     float64
	floor   float64
	winErr  float64
	busy    bool // some group had demand
	started bool
	// decayed actual and ideal usage per group (the window measure), and
	// the running counts in force since at (run has the next instant's)
	used, owed, held []float64

	points []fairPoint
	spans  []fairSpan
}

type fairPoint struct {
	at          int64
	err, winErr float64
}

type fairSpan struct {
	d, err, floor, winErr float64
}

func newFairTrack(fg fairGroups, pool int) *fairTrack {
	return &fairTrack{desc: fg.desc, pool: float64(pool), tau: fg.tau}
}

// group returns the index of the fairness group key, adding it.
func (f *fairTrack) group(key string, weight float64) int32 {
	f.keys = append(f.keys, key)
	f.weight = append(f.weight, weight)
	f.run = append(f.run, 0)
	f.wait = append(f.wait, 0)
	f.demand = append(f.demand, 0)
	f.ideal = append(f.ideal, 0)
	if f.tau > 0 {
		f.used = append(f.used, 0)
		f.owed = append(f.owed, 0)
		f.held = append(f.held, 0)
	}
	return int32(len(f.keys) - 1)
}

func (f *fairTrack) addRunning(g int32, d int32) { f.run[g] += d; f.dirty = true }
func (f *fairTrack) addWaiting(g int32, d int32) { f.wait[g] += d; f.dirty = true }

// instant closes the span since the last instant and measures the state
// after the instant now.
func (f *fairTrack) instant(now int64) {
	f.close(now)
	f.at = now
	if f.started && !f.dirty && f.tau == 0 {
		return
	}
	f.dirty = false
	f.started = true
	f.busy = false
	for i := range f.keys {
		f.demand[i] = float64(f.run[i] + f.wait[i])
		f.busy = f.busy || f.demand[i] > 0
	}
	f.order = policy.WaterFill(f.pool, f.demand, f.weight, f.ideal, f.order)
	var sum float64
	for i := range f.keys {
		sum += math.Abs(float64(f.run[i]) - f.ideal[i])
	}
	f.err = ratio(sum, f.pool)
	f.floor = ratio(f.wholeSlotsError(), f.pool)
	if f.tau > 0 {
		sum = 0
		for i := range f.keys {
			f.held[i] = float64(f.run[i])
			sum += math.Abs(f.used[i] - f.owed[i])
		}
		f.winErr = ratio(sum, f.pool*f.tau*-math.Expm1(-float64(now)/1e9/f.tau))
	}
	if n := len(f.points); n > 0 && f.points[n-1].at == now {
		f.points = f.points[:n-1]
	}
	f.points = append(f.points, fairPoint{at: now, err: f.err, winErr: f.winErr})
}

// wholeSlotsError returns the least Σ|x − ideal| over allocations x of
// whole slots with the same total: each group gets ⌊ideal⌋, and the slots
// the fractions add up to go to the largest fractions. The ideal never
// exceeds a demand, which is whole, so ⌈ideal⌉ fits the demand.
func (f *fairTrack) wholeSlotsError() float64 {
	f.fracs = f.fracs[:0]
	var total float64
	for _, v := range f.ideal {
		if fr := v - math.Floor(v); fr > 1e-9 && fr < 1-1e-9 {
			f.fracs = append(f.fracs, fr)
			total += fr
		}
	}
	if len(f.fracs) == 0 {
		return 0
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(f.fracs)))
	up := int(math.Round(total))
	var e float64
	for i, fr := range f.fracs {
		if i < up {
			e += 1 - fr
		} else {
			e += fr
		}
	}
	return e
}

// close books the span [at, now) at the values in force, and brings the
// decayed usage forward to now.
func (f *fairTrack) close(now int64) {
	if !f.started || now <= f.at {
		return
	}
	dt := float64(now-f.at) / 1e9
	if f.busy {
		f.spans = append(f.spans, fairSpan{d: dt, err: f.err, floor: f.floor, winErr: f.winErr})
	}
	if f.tau > 0 {
		keep := math.Exp(-dt / f.tau)
		gain := f.tau * -math.Expm1(-dt/f.tau)
		for i := range f.keys {
			f.used[i] = f.used[i]*keep + f.held[i]*gain
			f.owed[i] = f.owed[i]*keep + f.ideal[i]*gain
		}
	}
}

// result closes the last span at end and summarises the spans.
func (f *fairTrack) result(end int64) IdealFairness {
	f.close(end)
	f.started = false
	out := IdealFairness{Groups: f.desc}
	var total float64
	for _, s := range f.spans {
		total += s.d
	}
	out.DemandSeconds = total
	out.MeanError, out.P95Error, out.MaxError = spanStats(f.spans, total, func(s fairSpan) float64 { return s.err })
	out.FloorMeanError, _, _ = spanStats(f.spans, total, func(s fairSpan) float64 { return s.floor })
	if f.tau > 0 {
		w := &WindowFairness{DecaySeconds: f.tau}
		w.MeanError, w.P95Error, w.MaxError = spanStats(f.spans, total, func(s fairSpan) float64 { return s.winErr })
		out.Window = w
	}
	return out
}

// spanStats returns the time-weighted mean, 95th percentile and maximum of
// value over spans that last total seconds together. The percentile is the
// smallest value v such that the spans at or below v last at least 95% of
// total.
func spanStats(spans []fairSpan, total float64, value func(fairSpan) float64) (mean, p95, maxV float64) {
	if total <= 0 {
		return 0, 0, 0
	}
	type vd struct{ v, d float64 }
	s := make([]vd, len(spans))
	var sum float64
	for i, sp := range spans {
		s[i] = vd{value(sp), sp.d}
		sum += s[i].v * s[i].d
	}
	sort.Slice(s, func(a, b int) bool { return s[a].v < s[b].v })
	var acc float64
	p95 = s[len(s)-1].v
	for _, x := range s {
		acc += x.d
		if acc >= 0.95*total*(1-1e-12) {
			p95 = x.v
			break
		}
	}
	return sum / total, p95, s[len(s)-1].v
}

// seriesAt returns the error and window error in force at each time of ts
// (nanoseconds).
func (f *fairTrack) seriesAt(ts []int64) (errs, win []float64) {
	errs = make([]float64, len(ts))
	if f.tau > 0 {
		win = make([]float64, len(ts))
	}
	pi := -1
	for k, t := range ts {
		for pi+1 < len(f.points) && f.points[pi+1].at <= t {
			pi++
		}
		if pi >= 0 {
			errs[k] = f.points[pi].err
			if win != nil {
				win[k] = f.points[pi].winErr
			}
		}
	}
	return errs, win
}
