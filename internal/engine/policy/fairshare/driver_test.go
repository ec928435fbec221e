package fairshare_test

import (
	"fmt"
	"sort"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/drive"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/model"
)

// The driver runs the real engine over simulated time (internal/engine/drive
// keeps its future): jobs arrive, each cycle's starts run for their task's
// duration, and finished tasks are reported before the next cycle, which
// runs whenever something happens.

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const queue = "batch"

// attempt names a running task.
type attempt struct{ job, task string }

// round is the state after one cycle.
type round struct {
	at      time.Duration
	free    int            // free slots before the cycle
	before  map[string]int // running per share before the cycle
	waiting map[string]int // waiting per share before the cycle
	running map[string]int // running per share after the cycle
	starts  map[string]int
	stops   map[string]int // preempted per share
	d       *engine.Decisions
}

// fatalT is what the driver needs from a *testing.T or a *rapid.T.
type fatalT interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

type driver struct {
	t        fatalT
	e        *engine.Engine
	slots    int
	now      time.Duration
	arrivals drive.Queue[model.Job]   // by arrival, offset from t0
	ends     *drive.Attempts[attempt] // running tasks' ends
	shareOf  map[string]string
	dur      map[string]time.Duration // job/task → duration
	running  map[string]int
	waiting  map[string]int
	rounds   []round
	seq      int
	// onRound, when set, checks each round as it happens.
	onRound func(r round)
}

func newDriver(t fatalT, cfg *fairshare.Config, slots int) *driver {
	t.Helper()
	e, err := engine.New(engine.Config{Queues: []engine.QueueConfig{{Name: queue,
		Policy: policy.Config{Kind: "fairshare", Settings: cfg}}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < slots; i++ {
		w := model.Worker{Name: fmt.Sprintf("w%03d", i), Capacity: model.Resources{MilliCPU: 1000, MemoryMB: 1024}, Slots: 1}
		if err := e.Apply(engine.AddWorker{Worker: w, At: t0}); err != nil {
			t.Fatal(err)
		}
	}
	return &driver{t: t, e: e, slots: slots, ends: drive.NewAttempts[attempt](nil), shareOf: map[string]string{}, dur: map[string]time.Duration{},
		running: map[string]int{}, waiting: map[string]int{}}
}

// submit schedules a job of n tasks of one duration for share at time at,
// and returns its id.
func (d *driver) submit(at time.Duration, share string, priority, n int, dur time.Duration) string {
	d.seq++
	id := fmt.Sprintf("%s-%03d", share, d.seq)
	j := model.Job{ID: id, Queue: queue, Share: share, Priority: priority, Submitted: t0.Add(at)}
	for i := 0; i < n; i++ {
		j.Tasks = append(j.Tasks, model.Task{Name: fmt.Sprintf("t%03d", i), Duration: dur,
			Resources: model.Resources{MilliCPU: 1000}})
	}
	d.arrivals.Push(int64(at), j)
	return id
}

// wakeEvery makes a cycle run every step until end, whether or not
// anything arrives or ends then.
func (d *driver) wakeEvery(step, end time.Duration) {
	for at := step; at <= end; at += step {
		d.arrivals.Push(int64(at), model.Job{})
	}
}

// history hands the policy its past usage per share, in slot-seconds.
func (d *driver) history(usage map[string]float64) {
	if err := d.e.Apply(engine.SetHistory{Queue: queue, History: policy.History{Usage: usage}, At: t0}); err != nil {
		d.t.Fatal(err)
	}
}

// run advances simulated time until nothing is left to do or until end.
// At each instant, the arrivals come first, in the order they were
// submitted, then the ends, by job and task, then one cycle.
func (d *driver) run(end time.Duration) {
	d.t.Helper()
	for {
		next, ok := time.Duration(0), false
		if d.arrivals.Len() > 0 {
			at, _ := d.arrivals.Next()
			next, ok = time.Duration(at), true
		}
		if e, running := d.ends.Next(); running && (!ok || e.Sub(t0) < next) {
			next, ok = e.Sub(t0), true
		}
		if !ok || next > end {
			return
		}
		d.now = next
		at := t0.Add(next)
		for d.arrivals.Len() > 0 {
			if a, _ := d.arrivals.Next(); a != int64(next) {
				break
			}
			_, job := d.arrivals.Pop()
			if job.ID == "" {
				continue // a wake-up (wakeEvery)
			}
			if err := d.e.Apply(engine.SubmitJob{Job: job}); err != nil {
				d.t.Fatal(err)
			}
			d.shareOf[job.ID] = job.Share
			d.waiting[job.Share] += len(job.Tasks)
			for _, tk := range job.Tasks {
				d.dur[job.ID+"/"+tk.Name] = tk.Duration
			}
		}
		var ended []attempt
		for {
			a, _, ok := d.ends.Pop(at)
			if !ok {
				break
			}
			ended = append(ended, a)
		}
		sort.Slice(ended, func(i, j int) bool {
			if ended[i].job != ended[j].job {
				return ended[i].job < ended[j].job
			}
			return ended[i].task < ended[j].task
		})
		for _, a := range ended {
			if err := d.e.Apply(engine.FinishTask{Job: a.job, Task: a.task, Outcome: model.Succeeded, At: at}); err != nil {
				d.t.Fatal(err)
			}
			d.running[d.shareOf[a.job]]--
		}
		busy := d.busy()
		rd := round{at: next, free: d.slots - busy, before: copyMap(d.running), waiting: copyMap(d.waiting),
			starts: map[string]int{}, stops: map[string]int{}}
		rd.d = d.e.Cycle(at)
		for _, s := range rd.d.Stops {
			// A stopped task waits again; its end will not come.
			share := d.shareOf[s.Job]
			rd.stops[share]++
			d.running[share]--
			d.waiting[share]++
			d.ends.Stop(attempt{s.Job, s.Task})
		}
		for _, s := range rd.d.Starts {
			share := d.shareOf[s.Job]
			rd.starts[share]++
			d.running[share]++
			d.waiting[share]--
			d.ends.Start(attempt{s.Job, s.Task}, at.Add(d.dur[s.Job+"/"+s.Task]))
		}
		rd.running = copyMap(d.running)
		d.rounds = append(d.rounds, rd)
		if d.onRound != nil {
			d.onRound(rd)
		}
	}
}

// busy counts the running tasks.
func (d *driver) busy() int {
	busy := 0
	for _, n := range d.running {
		busy += n
	}
	return busy
}

func copyMap(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// slotSeconds is the slot-time share used in [from, to).
func (d *driver) slotSeconds(share string, from, to time.Duration) float64 {
	total := 0.0
	for i, r := range d.rounds {
		end := to
		if i+1 < len(d.rounds) && d.rounds[i+1].at < end {
			end = d.rounds[i+1].at
		}
		start := max(r.at, from)
		if end > start {
			total += float64(r.running[share]) * (end - start).Seconds()
		}
	}
	return total
}

// maxRunning is the most tasks share ran at once in [from, to).
func (d *driver) maxRunning(share string, from, to time.Duration) int {
	m := 0
	for _, r := range d.rounds {
		if r.at >= from && r.at < to {
			m = max(m, r.running[share])
		}
	}
	return m
}

// roundAt returns the cycle that ran at time at.
func (d *driver) roundAt(at time.Duration) round {
	d.t.Helper()
	for _, r := range d.rounds {
		if r.at == at {
			return r
		}
	}
	d.t.Fatalf("no cycle ran at %v", at)
	return round{}
}

// pendingReason returns the reason the cycle gave for job's waiting tasks.
func pendingReason(dec *engine.Decisions, job string) (model.Reason, bool) {
	for _, p := range dec.Pending {
		if p.Job == job {
			return p.Reason, true
		}
	}
	return model.Reason{}, false
}

func (d *driver) done() bool {
	_, running := d.ends.Next()
	return d.arrivals.Len() == 0 && !running
}
