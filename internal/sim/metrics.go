package sim

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// Result is what a run measured. Every list is sorted (groups by key), so the
// same Input gives byte-identical JSON; docs/simulator.md defines each figure.
type Result struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// MakespanSeconds is End − Start: until the last job ended, or the
	// horizon, or the instant the run stalled.
	MakespanSeconds float64 `json:"makespanSeconds"`
	// Outcome is "completed" (every job ended), "horizon" or "stalled".
	Outcome string      `json:"outcome"`
	GroupBy string      `json:"groupBy"`
	Queues  []QueueInfo `json:"queues"`
	Workers int         `json:"workers"`
	// Slots is the capacity: the slots of the workers ready at Start.
	Slots int `json:"slots"`
	// Jobs counts the input's jobs; JobsArrived those submitted before the
	// run ended.
	Jobs        int `json:"jobs"`
	JobsArrived int `json:"jobsArrived"`
	// SlotSeconds is the slot time all task attempts used.
	SlotSeconds float64 `json:"slotSeconds"`
	// Utilisation is SlotSeconds / (Slots × makespan).
	Utilisation float64 `json:"utilisation"`
	// LostSlotSeconds is the part of SlotSeconds spent by attempts the
	// engine stopped before they ended (preemption, rebalancing): work a
	// later attempt does again. UsefulUtilisation leaves it out:
	// (SlotSeconds − LostSlotSeconds) / (Slots × makespan).
	LostSlotSeconds   float64         `json:"lostSlotSeconds"`
	UsefulUtilisation float64         `json:"usefulUtilisation"`
	Fairness          Fairness        `json:"fairness"`
	Wait              WaitStats       `json:"wait"`
	Counts            Counts          `json:"counts"`
	Groups            []GroupResult   `json:"groups"`
	Series            Series          `json:"series"`
	Unfinished        []Unfinished    `json:"unfinished"`
	Timeline          []TimelineEntry `json:"timeline"`
	// Cost is what the enabled workers cost; disabled ones are left out.
	Cost CostResult `json:"cost"`
	// Elastic is what the elastic coordinator did, when it ran.
	Elastic *ElasticResult `json:"elastic,omitempty"`
	// Density is the task/worker density series, when
	// Options.DensityBucket asked for it.
	Density *Density `json:"density,omitempty"`
	// Endpoints has one entry per endpoint variant jobs used, by name.
	Endpoints []EndpointResult `json:"endpoints,omitempty"`
}

// QueueInfo names a queue and its policy, for titles and summaries.
type QueueInfo struct {
	Name     string `json:"name"`
	Policy   string `json:"policy"`
	Priority int    `json:"priority,omitempty"`
	Pool     string `json:"pool,omitempty"`
}

// Fairness holds Jain's index over groups, in two readings.
type Fairness struct {
	// JainTimeAveraged is Jain's index over the slot-seconds of the groups
	// that had demand (submitted at least one job) during the run.
	JainTimeAveraged float64 `json:"jainTimeAveraged"`
	// JainMeanOverTime is the mean of Series.Jain over the sample points at
	// which at least one group had waiting or running tasks.
	JainMeanOverTime float64 `json:"jainMeanOverTime"`
	// Groups counts the groups with demand.
	Groups int `json:"groups"`
	// Samples counts the sample points JainMeanOverTime averages.
	Samples int `json:"samples"`
	// Ideal is the distance from the weighted max-min fair allocation.
	Ideal IdealFairness `json:"ideal"`
}

// WaitStats summarises wait times in seconds: one sample per task start,
// from the moment the task last became ready to that start.
type WaitStats struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Mean  float64 `json:"mean"`
	Max   float64 `json:"max"`
}

// Counts are the run's event counts.
type Counts struct {
	Tasks int `json:"tasks"` // tasks of arrived jobs
	// Starts counts task starts, restarts after a retry or a stop included.
	Starts int `json:"starts"`
	// Stops counts running tasks the engine stopped (preemption,
	// rebalancing); StopsByReason splits them by reason code.
	Stops         int            `json:"stops"`
	StopsByReason map[string]int `json:"stopsByReason,omitempty"`
	// Retries counts failed attempts that were retried.
	Retries int `json:"retries"`
	// FailedTasks counts tasks that ended failed, DependencyFailures those
	// of them failed because a dependency failed (cascades).
	FailedTasks        int `json:"failedTasks"`
	DependencyFailures int `json:"dependencyFailures"`
	JobsSucceeded      int `json:"jobsSucceeded"`
	JobsFailed         int `json:"jobsFailed"`
	JobsCancelled      int `json:"jobsCancelled,omitempty"`
	// JobsDeadLettered counts jobs refused at arrival for an
	// inaccessible input.
	JobsDeadLettered int `json:"jobsDeadLettered,omitempty"`
	// Cycles and Events count engine cycles and processed queue events.
	Cycles int `json:"cycles"`
	Events int `json:"events"`
	// Merged counts starts that rode in a merged batch (no slot of their
	// own); Deferred counts the times a ready task waited for its sticky
	// worker (sticky_worker_busy).
	Merged   int `json:"merged,omitempty"`
	Deferred int `json:"deferred,omitempty"`
}

// GroupResult is one group's metrics.
type GroupResult struct {
	Key           string  `json:"key"`
	Jobs          int     `json:"jobs"`
	Tasks         int     `json:"tasks"`
	JobsSucceeded int     `json:"jobsSucceeded"`
	JobsFailed    int     `json:"jobsFailed"`
	Starts        int     `json:"starts"`
	Stops         int     `json:"stops"`
	Retries       int     `json:"retries"`
	FailedTasks   int     `json:"failedTasks"`
	SlotSeconds   float64 `json:"slotSeconds"`
	// UtilisationShare is SlotSeconds / (Slots × makespan): the fraction of
	// the whole capacity this group used.
	UtilisationShare float64 `json:"utilisationShare"`
	// BusyShare is SlotSeconds / all groups' SlotSeconds: the group's mean
	// share of the busy slots.
	BusyShare float64 `json:"busyShare"`
	// MeanSlots is SlotSeconds / makespan.
	MeanSlots float64   `json:"meanSlots"`
	Wait      WaitStats `json:"wait"`
	// Running and Waiting are sampled at Series.T: running slots (the share
	// of slots over time) and ready tasks not running.
	Running []int `json:"running"`
	Waiting []int `json:"waiting"`
}

// Series holds the sample times and the cluster-wide series.
type Series struct {
	StepSeconds float64   `json:"stepSeconds"`
	T           []float64 `json:"t"` // seconds after Start
	Busy        []int     `json:"busy"`
	// Jain is the index over the groups with waiting or running tasks at
	// each sample, of their running slots; 0 where no group had any.
	Jain []float64 `json:"jain"`
	// Demand counts those groups.
	Demand []int `json:"demand"`
	// IdealError is Fairness.Ideal's error at each sample;
	// IdealErrorWindow the window error, for fairshare with a decay window.
	IdealError       []float64 `json:"idealError"`
	IdealErrorWindow []float64 `json:"idealErrorWindow,omitempty"`
}

// Unfinished is a job that had not ended when the run did.
type Unfinished struct {
	Job     string `json:"job"`
	Group   string `json:"group"`
	Running int    `json:"running"`
	Waiting int    `json:"waiting"`
	Blocked int    `json:"blocked"`
	// Reason is the engine's pending reason from the last cycle, for the
	// job's ready tasks if it has any, else its blocked ones; empty when
	// every remaining task was running.
	Reason model.Reason `json:"reason"`
}

// TimelineEntry is one line of the timeline: what happened to one job at
// one instant. Consecutive decisions of one kind for one job merge.
type TimelineEntry struct {
	AtSeconds float64  `json:"at"`
	Kind      string   `json:"kind"` // submit, start, stop, retry, fail, done; admit, throttle, deadletter
	Job       string   `json:"job"`
	Count     int      `json:"count,omitempty"`   // tasks concerned
	Tasks     []string `json:"tasks,omitempty"`   // the first few
	Workers   []string `json:"workers,omitempty"` // the first few
	Detail    string   `json:"detail,omitempty"`
}

// maxSamples bounds the time series; a finer SampleEvery is coarsened.
const maxSamples = 10_000

// nsSum adds nanosecond durations without overflow: a trace's slot time
// exceeds int64 nanoseconds (292 years) easily, and float sums lose
// exactness.
type nsSum struct{ sec, ns int64 }

func (s *nsSum) add(d int64) {
	s.sec += d / 1e9
	s.ns += d % 1e9
	if s.ns >= 1e9 || s.ns <= -1e9 {
		s.sec += s.ns / 1e9
		s.ns %= 1e9
	}
}

func (s nsSum) seconds() float64 { return float64(s.sec) + float64(s.ns)/1e9 }

// percentile returns the nearest-rank p-th percentile of sorted: the
// smallest value with at least p% of the samples at or below it.
func percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// jain returns Jain's fairness index (Σx)² / (n·Σx²) of xs: 1 when all are
// equal, 1/n when one has everything. It is 1 for all-zero xs (an equal
// share of nothing) and 0 for no xs.
func jain(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * sq)
}

func waitStats(ns []int64) WaitStats {
	if len(ns) == 0 {
		return WaitStats{}
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	var sum nsSum
	for _, v := range s {
		sum.add(v)
	}
	sec := func(v int64) float64 { return time.Duration(v).Seconds() }
	return WaitStats{Count: len(s), P50: sec(percentile(s, 50)), P95: sec(percentile(s, 95)),
		P99: sec(percentile(s, 99)), Mean: sum.seconds() / float64(len(s)), Max: sec(s[len(s)-1])}
}

// sampleStep picks the series interval for a makespan of end nanoseconds.
func sampleStep(end int64, every time.Duration) int64 {
	step := int64(every)
	if step <= 0 {
		step = int64(time.Second) * max(1, (end/200+int64(time.Second)-1)/int64(time.Second))
	}
	if end/step+1 > maxSamples {
		step = (end + maxSamples - 2) / (maxSamples - 1)
	}
	return step
}

// result computes the metrics once the run has ended.
func (r *runner) result() *Result {
	end := r.end
	res := &Result{Start: r.in.Start, End: r.in.Start.Add(time.Duration(end)), MakespanSeconds: time.Duration(end).Seconds(),
		Outcome: r.how, GroupBy: r.opt.GroupBy, Workers: r.nwork, Slots: r.slots, Jobs: len(r.jobs), Counts: r.counts,
		Timeline: r.timeline, Groups: []GroupResult{}, Unfinished: []Unfinished{}}
	if res.Timeline == nil {
		res.Timeline = []TimelineEntry{}
	}
	for _, q := range r.in.Config.Queues {
		kind := q.Policy.Kind
		if kind == "" {
			kind = "fifo"
		}
		res.Queues = append(res.Queues, QueueInfo{Name: q.Name, Policy: kind, Priority: q.Priority, Pool: q.Pool.String()})
	}
	for i := range r.jobs {
		if r.jobs[i].arrived {
			res.JobsArrived++
		}
	}

	// Groups that had demand, by key.
	var order []int32
	for gi, g := range r.groups {
		if g.jobs > 0 {
			order = append(order, int32(gi))
		}
	}
	sort.Slice(order, func(a, b int) bool { return r.groups[order[a]].key < r.groups[order[b]].key })
	var total nsSum
	var allWaits []int64
	busy := make([]float64, len(order))
	for k, gi := range order {
		g := r.groups[gi]
		total.add(g.busy.sec * 1e9)
		total.add(g.busy.ns)
		busy[k] = g.busy.seconds()
		allWaits = append(allWaits, g.waits...)
	}
	res.SlotSeconds = total.seconds()
	span := time.Duration(end).Seconds()
	capacity := float64(r.slots) * span
	res.Utilisation = ratio(res.SlotSeconds, capacity)
	res.LostSlotSeconds = r.lost.seconds()
	res.UsefulUtilisation = ratio(res.SlotSeconds-res.LostSlotSeconds, capacity)
	res.Wait = waitStats(allWaits)
	res.Fairness.Groups = len(order)
	res.Fairness.JainTimeAveraged = jain(busy)
	for k, gi := range order {
		g := r.groups[gi]
		res.Groups = append(res.Groups, GroupResult{Key: g.key, Jobs: g.jobs, Tasks: g.tasks,
			JobsSucceeded: g.jobsSucceeded, JobsFailed: g.jobsFailed, Starts: g.starts, Stops: g.stops,
			Retries: g.retries, FailedTasks: g.failed, SlotSeconds: busy[k],
			UtilisationShare: ratio(busy[k], capacity), BusyShare: ratio(busy[k], res.SlotSeconds),
			MeanSlots: ratio(busy[k], span), Wait: waitStats(g.waits)})
	}
	res.Fairness.Ideal = r.fair.result(end)
	r.sample(res, order)
	r.unfinishedJobs(res)
	r.fleetResult(res)
	r.endpointResults(res)
	return res
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// sample replays the change log onto the sample grid t_k = k·step, k = 0 …
// ⌊makespan/step⌋: each sample is the state after every instant at or before
// t_k.
func (r *runner) sample(res *Result, order []int32) {
	step := sampleStep(r.end, r.opt.SampleEvery)
	n := int(r.end/step) + 1
	pos := make([]int, len(r.groups)) // group index → position in order, or -1
	for i := range pos {
		pos[i] = -1
	}
	for k, gi := range order {
		pos[gi] = k
		res.Groups[k].Running = make([]int, n)
		res.Groups[k].Waiting = make([]int, n)
	}
	s := &res.Series
	s.StepSeconds = time.Duration(step).Seconds()
	s.T, s.Busy, s.Jain, s.Demand = make([]float64, n), make([]int, n), make([]float64, n), make([]int, n)
	run := make([]int32, len(order))
	wait := make([]int32, len(order))
	xs := make([]float64, 0, len(order))
	var jainSum float64
	ci := 0
	for k := 0; k < n; k++ {
		tk := int64(k) * step
		for ci < len(r.changes) && r.changes[ci].at <= tk {
			c := r.changes[ci]
			if p := pos[c.g]; p >= 0 {
				run[p], wait[p] = c.running, c.waiting
			}
			ci++
		}
		s.T[k] = time.Duration(tk).Seconds()
		xs = xs[:0]
		for p := range order {
			res.Groups[p].Running[k] = int(run[p])
			res.Groups[p].Waiting[k] = int(wait[p])
			s.Busy[k] += int(run[p])
			if run[p]+wait[p] > 0 {
				xs = append(xs, float64(run[p]))
			}
		}
		s.Demand[k] = len(xs)
		if len(xs) > 0 {
			s.Jain[k] = jain(xs)
			jainSum += s.Jain[k]
			res.Fairness.Samples++
		}
	}
	res.Fairness.JainMeanOverTime = ratio(jainSum, float64(res.Fairness.Samples))
	ts := make([]int64, n)
	for k := range ts {
		ts[k] = int64(k) * step
	}
	s.IdealError, s.IdealErrorWindow = r.fair.seriesAt(ts)
}

// unfinishedJobs lists the arrived jobs that had not ended, in input order,
// with the engine's last pending reason.
func (r *runner) unfinishedJobs(res *Result) {
	reasons := map[string]model.Reason{}
	for _, p := range r.eng.Pending() {
		if _, seen := reasons[p.Job]; !seen {
			reasons[p.Job] = p.Reason
		}
	}
	for ji := range r.jobs {
		sj := &r.jobs[ji]
		if !sj.arrived || sj.ended {
			continue
		}
		u := Unfinished{Job: sj.id, Group: r.groups[sj.group].key, Reason: reasons[sj.id]}
		for ti := sj.first; ti < sj.first+sj.n; ti++ {
			switch r.tasks[ti].state {
			case tsRunning:
				u.Running++
			case tsWaiting:
				u.Waiting++
			case tsBlocked:
				u.Blocked++
			}
		}
		res.Unfinished = append(res.Unfinished, u)
	}
}
