// Package sim is Allot's discrete-event simulator. It drives the production
// engine on a virtual clock: jobs arrive at their submission time, tasks run
// for their Duration, and after every instant the engine runs one Cycle whose
// starts and stops the simulator turns into future completions. Nothing here
// reads the wall clock, so one Input always gives the same Result, byte for
// byte. Its event queue is internal/engine/drive's. The package renders a
// Result as text, JSON or SVG; the workload traces (SWF, the Azure LLM
// inference CSV) are read into jobs by internal/sim/trace.
package sim

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/engine/drive"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// Input is everything a simulation needs. The scenario loader fills it.
type Input struct {
	// Config holds the queues, their policies, placement and the seed.
	Config engine.Config
	// Workers join at Start.
	Workers []model.Worker
	// Jobs arrive at Submitted (absolute; a zero or earlier time means
	// Start). Each task runs for its Duration; Task.Fails is how many
	// attempts fail before one succeeds.
	Jobs []model.Job
	// History is handed to each queue's policy at Start via engine.SetHistory.
	History map[string]policy.History
	// Running lists tasks already running at Start (a plan scenario's
	// `running:`); their jobs are submitted at Start and each such task
	// completes at Started + Duration, or at Start if that is earlier.
	Running []engine.RestoreRunning
	// Start is virtual time zero.
	Start time.Time
	// Inputs checks each job's inputs at its arrival, as the control plane
	// does at submission; a job that fails goes to the dead-letter list.
	// nil accepts every input.
	Inputs admit.InputChecker
}

// Options tune a run without changing what is simulated, except Horizon and
// CycleEvery, which do.
type Options struct {
	// Horizon stops the run after this much virtual time; 0 runs until every
	// job has ended (or the run stalls).
	Horizon time.Duration
	// SampleEvery is the interval of the time series; 0 picks makespan/200
	// rounded up to whole seconds, at least 1s.
	SampleEvery time.Duration
	// GroupBy keys the per-group metrics: "group" (the queue policy's group,
	// the default), "share", "requestor" or "queue".
	GroupBy string
	// CycleEvery adds cycles on a fixed grid (Start + k·CycleEvery) while
	// any job is unfinished, as a server's periodic tick does, so that
	// time-based policy decisions (usage decay, a rebalance threshold held
	// for a minimum duration) happen even when no event occurs. 0 runs one
	// cycle after each instant that has events, and no others.
	CycleEvery time.Duration
	// TickOnly, with CycleEvery, runs cycles only on the grid, not after
	// each event instant: a server that batches its scheduling. Events are
	// still applied at their own time.
	TickOnly bool
	// Progress, if set, is called as jobs end (at most about 1000 times).
	Progress func(done, total int)
	// TimelineLines caps the timeline kept for the text output; 0 means 40,
	// a negative value keeps none.
	TimelineLines int
	// DensityBucket records the task/worker density series (Result.Density)
	// with buckets of this size; 0 records none.
	DensityBucket time.Duration
}

// Group-by keys accepted by Options.GroupBy.
const (
	GroupByGroup     = "group"
	GroupByShare     = "share"
	GroupByRequestor = "requestor"
	GroupByQueue     = "queue"
)

// ErrRejected wraps the engine's error when it refuses a job at its arrival.
var ErrRejected = errors.New("job rejected")

// maxRoundsPerInstant bounds the scheduling rounds at one virtual instant.
// Zero-duration tasks complete in a later round of the same instant; a
// chain longer than this means a policy restarts work forever.
const maxRoundsPerInstant = 1_000_000

// taskState is the simulator's mirror of a task's life, kept so that the
// metrics (waiting, running, wait times) need no engine queries.
type taskState uint8

const (
	tsBlocked  taskState = iota // dependencies unmet, or not yet arrived
	tsWaiting                   // ready, not running
	tsRunning                   // running; a completion is scheduled
	tsReported                  // a failure was reported; the engine says next
	tsDone                      // terminal
)

type simTask struct {
	name     string
	job      int32
	state    taskState
	unmet    int32
	children []int32 // global indexes of tasks that need this one
	fails    int32   // attempts that fail before one succeeds
	done     int32   // completed attempts (preempted ones excluded)
	gen      uint32  // bumped on each start and stop; stale completions carry an old one
	dur      int64
	readyAt  int64
	startAt  int64
	worker   int32 // index of the worker holding its slot, -1 when none
	// merged marks a running member of a merged batch: it rides on its
	// head's slot, so it holds no slot and has no completion of its own.
	merged bool
}

type simJob struct {
	id      string
	group   int32
	first   int32 // index of its first task in runner.tasks
	n       int32
	arrived bool
	ended   bool
	byName  map[string]int32 // built on first lookup for large jobs
	// ep and epLoad are the endpoint variant and load of an admitted job
	// that has not ended.
	ep     *epAcc
	epLoad int
	// fg is the job's fairness group (fairTrack).
	fg int32
}

// groupAcc accumulates one group's metrics during the run.
type groupAcc struct {
	key                       string
	jobs, tasks               int
	jobsSucceeded, jobsFailed int
	starts, stops, retries    int
	failed                    int
	busy                      nsSum
	waits                     []int64
	running, waiting          int32
	dirty                     bool
}

// change records a group's running and waiting counts after an instant.
type change struct {
	at      int64
	g       int32
	running int32
	waiting int32
}

type runner struct {
	// lost is the slot time of attempts stopped before they ended.
	lost  nsSum
	in    Input
	opt   Options
	eng   *engine.Engine
	q     drive.Queue[event]
	now   int64
	end   int64
	how   string // completed, horizon, stalled
	slots int
	nwork int

	jobs    []simJob
	tasks   []simTask
	jobIdx  map[string]int32
	groups  []*groupAcc
	groupBy map[string]int32

	running     int // tasks running now
	realPending int // arrivals and live completions in the queue
	unfinished  int // arrived jobs not yet ended
	jobsDone    int
	dirty       bool  // events applied since the last cycle
	tickPending bool  // a tick event is queued (CycleEvery mode)
	lastCycle   int64 // time of the latest cycle, -1 before the first

	dirtyGroups []int32
	changes     []change

	eps map[string]*epAcc // by endpoint and variant
	// fl follows the workers (busy, enabled, cost) and runs the elastic
	// coordinator.
	fl *fleetTrack
	// fair measures the distance from the max-min fair allocation.
	fair *fairTrack

	counts   Counts
	timeline []TimelineEntry
	tlMax    int
	progStep int
}

// Run simulates in under opt and returns the metrics. It fails when the
// configuration is invalid or the engine rejects a job at its arrival (the
// error names the job); a run that can make no progress ends as "stalled"
// with the stuck jobs listed in Result.Unfinished.
func Run(in Input, opt Options) (*Result, error) {
	r, err := newRunner(in, opt)
	if err != nil {
		return nil, err
	}
	if err := r.run(); err != nil {
		return nil, err
	}
	return r.result(), nil
}

func newRunner(in Input, opt Options) (*runner, error) {
	if opt.Horizon < 0 {
		return nil, fmt.Errorf("options.horizon: must not be negative (got %s)", opt.Horizon)
	}
	if opt.SampleEvery < 0 {
		return nil, fmt.Errorf("options.sampleEvery: must not be negative (got %s)", opt.SampleEvery)
	}
	if opt.CycleEvery < 0 {
		return nil, fmt.Errorf("options.cycleEvery: must not be negative (got %s)", opt.CycleEvery)
	}
	if opt.GroupBy == "" {
		opt.GroupBy = GroupByGroup
	}
	keyOf, err := groupKeyFunc(in.Config, opt.GroupBy)
	if err != nil {
		return nil, err
	}
	cfg := in.Config
	// The simulator reads pending reasons only for jobs left unfinished, so
	// it asks for them once at the end instead of every cycle.
	cfg.LazyPending = true
	eng, err := engine.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	r := &runner{in: in, opt: opt, eng: eng, jobIdx: make(map[string]int32, len(in.Jobs)),
		groupBy: map[string]int32{}, lastCycle: -1, tlMax: opt.TimelineLines}
	if r.tlMax == 0 {
		r.tlMax = 40
	}
	r.progStep = max(1, len(in.Jobs)/1000)

	for i, w := range in.Workers {
		if err := eng.Apply(engine.AddWorker{Worker: w, At: in.Start}); err != nil {
			return nil, fmt.Errorf("workers[%d] (%q): %w", i, w.Name, err)
		}
		if w.State == "" || w.State == model.WorkerReady {
			r.slots += max(1, w.Slots)
		}
	}
	r.nwork = len(in.Workers)
	if r.fl, err = newFleetTrack(in, opt); err != nil {
		return nil, err
	}
	queues := make([]string, 0, len(in.History))
	for q := range in.History {
		queues = append(queues, q)
	}
	sort.Strings(queues)
	for _, q := range queues {
		if err := eng.Apply(engine.SetHistory{Queue: q, History: in.History[q], At: in.Start}); err != nil {
			return nil, fmt.Errorf("history[%q]: %w", q, err)
		}
	}

	fg, err := fairGroupsOf(in.Config)
	if err != nil {
		return nil, err
	}
	r.fair = newFairTrack(fg, r.slots)
	fairIdx := map[string]int32{}

	ntasks := 0
	for _, j := range in.Jobs {
		ntasks += len(j.Tasks)
	}
	r.jobs = make([]simJob, len(in.Jobs))
	r.tasks = make([]simTask, 0, ntasks)
	for i := range in.Jobs {
		j := &in.Jobs[i]
		if _, dup := r.jobIdx[j.ID]; dup {
			return nil, fmt.Errorf("jobs[%d].id: job %q is listed twice", i, j.ID)
		}
		r.jobIdx[j.ID] = int32(i)
		key := keyOf(j)
		g, ok := r.groupBy[key]
		if !ok {
			g = int32(len(r.groups))
			r.groups = append(r.groups, &groupAcc{key: key})
			r.groupBy[key] = g
		}
		sj := &r.jobs[i]
		sj.id, sj.group, sj.first, sj.n = j.ID, g, int32(len(r.tasks)), int32(len(j.Tasks))
		fkey := fg.key(j)
		f, ok := fairIdx[fkey]
		if !ok {
			f = r.fair.group(fkey, fg.weight(fkey))
			fairIdx[fkey] = f
		}
		sj.fg = f
		for _, t := range j.Tasks {
			r.tasks = append(r.tasks, simTask{name: t.Name, job: int32(i), fails: int32(max(0, t.Fails)),
				dur: int64(max(0, t.Duration)), unmet: int32(len(t.Needs)), worker: -1})
		}
		r.linkNeeds(sj, j)
	}

	// Time zero: a forced round, then every arrival in input order.
	r.q.Push(0, event{kind: evTick})
	r.tickPending = true
	restored := map[string]bool{}
	for _, rr := range in.Running {
		restored[rr.Job] = true
	}
	for i := range in.Jobs {
		if restored[in.Jobs[i].ID] {
			continue
		}
		at := int64(0)
		if s := in.Jobs[i].Submitted; s.After(in.Start) {
			at = int64(s.Sub(in.Start))
		}
		r.q.Push(at, event{kind: evArrive, idx: int32(i)})
		r.realPending++
	}
	if err := r.restore(); err != nil {
		return nil, err
	}
	r.schedulePoll()
	return r, nil
}

// linkNeeds records each task's dependents. Unknown names are left for the
// engine to reject when the job arrives.
func (r *runner) linkNeeds(sj *simJob, j *model.Job) {
	var byName map[string]int32
	for k, t := range j.Tasks {
		for _, need := range t.Needs {
			if byName == nil {
				byName = make(map[string]int32, len(j.Tasks))
				for m, u := range j.Tasks {
					byName[u.Name] = sj.first + int32(m)
				}
			}
			if p, ok := byName[need]; ok {
				r.tasks[p].children = append(r.tasks[p].children, sj.first+int32(k))
			}
		}
	}
}

// restore submits the jobs of Input.Running at Start and marks their tasks
// running, as a plan scenario states them.
func (r *runner) restore() error {
	for i, rr := range r.in.Running {
		ji, ok := r.jobIdx[rr.Job]
		if !ok {
			return fmt.Errorf("running[%d].job: no job %q", i, rr.Job)
		}
		if !r.jobs[ji].arrived {
			r.realPending++ // arrive undoes it
			if err := r.arrive(ji); err != nil {
				return err
			}
		}
		rr.Started = clampTime(rr.Started, r.in.Start)
		if err := r.eng.Apply(rr); err != nil {
			return fmt.Errorf("running[%d]: %w", i, err)
		}
		ti, ok := r.lookup(ji, rr.Task)
		if !ok {
			return fmt.Errorf("running[%d].task: job %q has no task %q", i, rr.Job, rr.Task)
		}
		t := &r.tasks[ti]
		r.setWaitingOff(t)
		done := max(0, int64(rr.Started.Sub(r.in.Start))+t.dur)
		r.run1(ti, 0, done)
		if _, w, ok := r.eng.TaskState(rr.Job, rr.Task); ok {
			t.worker = r.fl.worker(w)
			r.fl.occupy(t.worker, 0)
		}
	}
	return nil
}

func clampTime(t, start time.Time) time.Time {
	if t.IsZero() {
		return start
	}
	return t
}

// groupKeyFunc returns how a job maps to its metrics group.
func groupKeyFunc(cfg engine.Config, by string) (func(*model.Job) string, error) {
	orNone := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	}
	switch by {
	case GroupByShare:
		return func(j *model.Job) string { return orNone(j.Share) }, nil
	case GroupByRequestor:
		return func(j *model.Job) string { return orNone(j.Requestor) }, nil
	case GroupByQueue:
		return func(j *model.Job) string { return j.Queue }, nil
	case GroupByGroup:
		pols := map[string]policy.Policy{}
		for i, q := range cfg.Queues {
			p, err := policy.New(q.Policy)
			if err != nil {
				return nil, model.FieldErrorOf(fmt.Sprintf("queues[%d].policy", i), err)
			}
			pols[q.Name] = p
		}
		multi := len(cfg.Queues) > 1
		return func(j *model.Job) string {
			p, ok := pols[j.Queue]
			if !ok {
				return j.Queue // the engine rejects the job on arrival
			}
			if multi {
				return j.Queue + "/" + p.GroupOf(j)
			}
			return p.GroupOf(j)
		}, nil
	}
	return nil, fmt.Errorf("options.groupBy: unknown value %q (known: group, share, requestor, queue)", by)
}

// run is the event loop.
func (r *runner) run() error {
	horizon := int64(r.opt.Horizon)
	periodic := r.opt.CycleEvery > 0
	rounds, roundAt := 0, int64(-1)
	r.how = "completed"
	for r.q.Len() > 0 {
		at, _ := r.q.Next()
		if horizon > 0 && at > horizon {
			r.how, r.now = "horizon", horizon
			break
		}
		if at == roundAt {
			if rounds++; rounds > maxRoundsPerInstant {
				return fmt.Errorf("more than %d scheduling rounds at %s: a zero-duration task or a policy keeps restarting work",
					maxRoundsPerInstant, time.Duration(at))
			}
		} else {
			roundAt, rounds = at, 1
		}
		r.now = at
		cycle := !(periodic && r.opt.TickOnly)
		limit := r.q.Seq() // events pushed during this round wait for the next one
		for r.q.Len() > 0 {
			if next, seq := r.q.Next(); next != at || seq > limit {
				break
			}
			_, ev := r.q.Pop()
			r.counts.Events++
			var err error
			switch ev.kind {
			case evTick:
				r.tickPending = false
				cycle = true
			case evArrive:
				err = r.arrive(ev.idx)
			case evFinish:
				err = r.finish(ev.idx, ev.gen)
			case evElastic:
				err = r.elasticPoll()
			}
			if err != nil {
				return err
			}
		}
		if cycle {
			r.cycle()
		}
		if periodic && r.unfinished > 0 && !r.tickPending {
			step := int64(r.opt.CycleEvery)
			next := (at + step - 1) / step * step
			if next <= r.lastCycle {
				next = r.lastCycle + step
			}
			r.q.Push(next, event{kind: evTick})
			r.tickPending = true
		}
		r.logChanges()
		r.fair.instant(r.now)
		r.schedulePoll()
		if r.realPending == 0 && r.running == 0 && !r.dirty && !(r.unfinished > 0 && r.fl.mayHelp()) {
			if r.unfinished > 0 {
				r.how = "stalled"
			}
			break
		}
	}
	r.end = r.now
	if r.how == "horizon" {
		for i := range r.tasks {
			if t := &r.tasks[i]; t.state == tsRunning && !t.merged { // members hold no slot
				r.groups[r.jobs[t.job].group].busy.add(r.end - t.startAt)
			}
		}
	}
	if r.opt.Progress != nil {
		r.opt.Progress(r.jobsDone, len(r.jobs))
	}
	return nil
}

func (r *runner) at() time.Time { return r.in.Start.Add(time.Duration(r.now)) }

// arrive submits job ji to the engine.
func (r *runner) arrive(ji int32) error {
	sj := &r.jobs[ji]
	spec := r.in.Jobs[ji]
	if !spec.Submitted.After(r.in.Start) {
		spec.Submitted = r.in.Start
	}
	if why := r.checkInputs(ji); why != "" {
		if err := r.eng.Apply(engine.DeadLetter{Job: spec, Reason: why, At: r.at()}); err != nil {
			return fmt.Errorf("jobs[%d] %q at %s: %w: %w", ji, sj.id, time.Duration(r.now), ErrRejected, err)
		}
		r.realPending--
		r.dirty = true
		sj.arrived, sj.ended = true, true
		r.counts.JobsDeadLettered++
		return nil
	}
	if err := r.eng.Apply(engine.SubmitJob{Job: spec}); err != nil {
		return fmt.Errorf("jobs[%d] %q at %s: %w: %w", ji, sj.id, time.Duration(r.now), ErrRejected, err)
	}
	r.realPending--
	r.dirty = true
	sj.arrived = true
	r.unfinished++
	g := r.groups[sj.group]
	g.jobs++
	g.tasks += int(sj.n)
	r.counts.Tasks += int(sj.n)
	if r.fl.dens != nil {
		r.fl.dens.Submitted(r.now, int(sj.n))
	}
	for ti := sj.first; ti < sj.first+sj.n; ti++ {
		if r.tasks[ti].unmet == 0 {
			r.setWaiting(ti)
		}
	}
	r.note("submit", sj.id, "", "", plural(int(sj.n), "task"))
	return nil
}

// finish ends the running attempt of task ti, unless the completion is stale
// (the task was stopped since, and maybe started again).
func (r *runner) finish(ti int32, gen uint32) error {
	t := &r.tasks[ti]
	if t.gen != gen || t.state != tsRunning {
		return nil
	}
	r.realPending--
	r.dirty = true
	t.done++
	r.stopRunning(ti)
	out, msg := model.Succeeded, ""
	if t.done <= t.fails {
		out = model.Failed
		msg = fmt.Sprintf("simulated failure %d of %d", t.done, t.fails)
	}
	sj := &r.jobs[t.job]
	if err := r.eng.Apply(engine.FinishTask{Job: sj.id, Task: t.name, Outcome: out, At: r.at(), Message: msg}); err != nil {
		return fmt.Errorf("job %q task %q: engine refused the completion: %w", sj.id, t.name, err)
	}
	if out == model.Failed {
		t.state = tsReported // Decisions.Ended says retry or failed
		return nil
	}
	t.state = tsDone
	r.succeeded(t)
	return nil
}

// succeeded makes the tasks that needed t and wait for nothing else ready.
func (r *runner) succeeded(t *simTask) {
	for _, c := range t.children {
		ct := &r.tasks[c]
		if ct.unmet--; ct.unmet == 0 && ct.state == tsBlocked {
			r.setWaiting(c)
		}
	}
}

// batchKey names a merged batch: its job and head task.
type batchKey struct {
	job  int32
	head string
}

// batchDurations returns, per merged batch among starts, the longest
// duration of its members: the batch runs until its longest member is
// done, and the head's completion ends them all.
func (r *runner) batchDurations(starts []engine.Start) map[batchKey]int64 {
	var out map[batchKey]int64
	for _, s := range starts {
		if s.Batch == "" || s.Batch == s.Task {
			continue
		}
		ji, ti, ok := r.task(s.Job, s.Task)
		if !ok {
			continue
		}
		if out == nil {
			out = map[batchKey]int64{}
		}
		k := batchKey{ji, s.Batch}
		out[k] = max(out[k], r.tasks[ti].dur)
	}
	return out
}

// unmerge ends the ride of a batch member; it held no slot.
func (r *runner) unmerge(t *simTask) {
	t.merged = false
	t.state = tsReported
}

// cycle runs the engine and mirrors its decisions.
func (r *runner) cycle() {
	d := r.eng.Cycle(r.at())
	r.counts.Cycles++
	r.lastCycle = r.now
	r.dirty = false
	r.admission(d)
	for _, e := range d.Ended {
		r.ended(e)
	}
	for _, s := range d.Stops {
		r.stopped(s)
	}
	batches := r.batchDurations(d.Starts)
	for _, s := range d.Starts {
		r.started(s, batches)
	}
	r.counts.Deferred += len(d.Deferred)
	for _, j := range d.JobsDone {
		r.jobDone(j)
	}
}

func (r *runner) ended(e engine.TaskEnd) {
	ji, ti, ok := r.task(e.Job, e.Task)
	if !ok {
		return
	}
	t := &r.tasks[ti]
	g := r.groups[r.jobs[ji].group]
	if t.merged { // a batch member ended with its head
		r.unmerge(t)
	} else if t.state == tsRunning { // a cancel or a lost worker
		r.stopRunning(ti)
		r.cancelCompletion(t)
	}
	if t.state == tsWaiting {
		r.setWaitingOff(t)
	}
	switch {
	case e.State == model.TaskReady:
		if e.Reason.Code == model.ReasonRetry {
			g.retries++
			r.counts.Retries++
			r.note("retry", e.Job, e.Task, e.Worker, e.Reason.Message)
		}
		r.setWaiting(ti)
	case e.State.Terminal():
		t.state = tsDone
		if e.State == model.TaskSucceeded { // a batch member: its head's report ended it
			r.succeeded(t)
		}
		if e.State == model.TaskFailed {
			g.failed++
			r.counts.FailedTasks++
			if e.Reason.Code == model.ReasonDependencyFailure {
				r.counts.DependencyFailures++
			}
			r.note("fail", e.Job, e.Task, e.Worker, e.Reason.Message)
		}
	}
}

func (r *runner) stopped(s engine.Stop) {
	ji, ti, ok := r.task(s.Job, s.Task)
	if !ok {
		return
	}
	g := r.groups[r.jobs[ji].group]
	g.stops++
	r.counts.Stops++
	if r.counts.StopsByReason == nil {
		r.counts.StopsByReason = map[string]int{}
	}
	r.counts.StopsByReason[s.Reason.Code]++
	r.note("stop", s.Job, s.Task, s.Worker, s.Reason.Message)
	t := &r.tasks[ti]
	if t.state != tsRunning {
		return // a cancel, already ended through Decisions.Ended
	}
	if s.Reason.Code != model.ReasonCancelled {
		r.lost.add(r.now - t.startAt) // the attempt's work is redone
	}
	if t.merged {
		r.unmerge(t)
	} else {
		r.stopRunning(ti)
		r.cancelCompletion(t)
	}
	if s.Reason.Code == model.ReasonCancelled {
		t.state = tsDone
		return
	}
	r.setWaiting(ti)
}

func (r *runner) started(s engine.Start, batches map[batchKey]int64) {
	ji, ti, ok := r.task(s.Job, s.Task)
	if !ok {
		return
	}
	t := &r.tasks[ti]
	if t.state != tsWaiting {
		return
	}
	g := r.groups[r.jobs[ji].group]
	r.setWaitingOff(t)
	g.waits = append(g.waits, r.now-t.readyAt)
	g.starts++
	r.counts.Starts++
	r.note("start", s.Job, s.Task, s.Worker, "")
	if r.fl.dens != nil {
		r.fl.dens.Started(r.now)
	}
	if s.Batch != "" && s.Batch != s.Task {
		// A member rides on its head's slot and ends with it.
		t.state, t.merged, t.startAt = tsRunning, true, r.now
		r.counts.Merged++
		return
	}
	dur := t.dur
	if s.Batch != "" {
		dur = max(dur, batches[batchKey{ji, s.Batch}])
	}
	r.run1(ti, r.now, r.now+dur)
	t.worker = r.fl.worker(s.Worker)
	r.fl.occupy(t.worker, r.now)
}

// run1 marks task ti running since start, completing at done.
func (r *runner) run1(ti int32, start, done int64) {
	t := &r.tasks[ti]
	t.state = tsRunning
	t.startAt = start
	t.gen++
	r.running++
	g := r.groups[r.jobs[t.job].group]
	g.running++
	r.touch(r.jobs[t.job].group)
	r.fair.addRunning(r.jobs[t.job].fg, 1)
	r.q.Push(done, event{kind: evFinish, idx: ti, gen: t.gen})
	r.realPending++
}

func (r *runner) jobDone(e engine.JobEnd) {
	ji, ok := r.jobIdx[e.Job]
	if !ok {
		return
	}
	sj := &r.jobs[ji]
	if sj.ended {
		return
	}
	sj.ended = true
	sj.byName = nil
	// Keep the engine's state to live jobs, as the server does.
	_ = r.eng.Apply(engine.ForgetJob{Job: e.Job})
	r.unfinished--
	r.jobsDone++
	g := r.groups[sj.group]
	switch e.State {
	case model.TaskSucceeded:
		g.jobsSucceeded++
		r.counts.JobsSucceeded++
	case model.TaskFailed:
		g.jobsFailed++
		r.counts.JobsFailed++
	default:
		r.counts.JobsCancelled++
	}
	r.note("done", e.Job, "", "", string(e.State))
	if p := r.opt.Progress; p != nil && (r.jobsDone%r.progStep == 0) {
		p(r.jobsDone, len(r.jobs))
	}
}

// stopRunning ends the running interval of task ti and books its slot time.
func (r *runner) stopRunning(ti int32) {
	t := &r.tasks[ti]
	g := r.groups[r.jobs[t.job].group]
	g.busy.add(r.now - t.startAt)
	g.running--
	r.running--
	r.touch(r.jobs[t.job].group)
	r.fair.addRunning(r.jobs[t.job].fg, -1)
	t.state = tsReported
	r.fl.release(t.worker, r.now)
	t.worker = -1
}

// cancelCompletion makes the queued completion of a stopped task stale.
func (r *runner) cancelCompletion(t *simTask) {
	t.gen++
	r.realPending--
}

func (r *runner) setWaiting(ti int32) {
	t := &r.tasks[ti]
	t.state = tsWaiting
	t.readyAt = r.now
	gi := r.jobs[t.job].group
	r.groups[gi].waiting++
	r.touch(gi)
	r.fair.addWaiting(r.jobs[t.job].fg, 1)
}

func (r *runner) setWaitingOff(t *simTask) {
	if t.state != tsWaiting {
		return
	}
	gi := r.jobs[t.job].group
	r.groups[gi].waiting--
	r.touch(gi)
	r.fair.addWaiting(r.jobs[t.job].fg, -1)
	t.state = tsBlocked
}

func (r *runner) touch(gi int32) {
	if g := r.groups[gi]; !g.dirty {
		g.dirty = true
		r.dirtyGroups = append(r.dirtyGroups, gi)
	}
}

// logChanges appends the running and waiting counts of groups that changed
// at this instant; the time series are sampled from this log at the end.
func (r *runner) logChanges() {
	for _, gi := range r.dirtyGroups {
		g := r.groups[gi]
		g.dirty = false
		r.changes = append(r.changes, change{at: r.now, g: gi, running: g.running, waiting: g.waiting})
	}
	r.dirtyGroups = r.dirtyGroups[:0]
}

// lookup finds a task of job ji by name: a scan for small jobs, a map built
// once for large ones.
// task finds a task of the run by job id and task name.
func (r *runner) task(job, name string) (ji, ti int32, ok bool) {
	if ji, ok = r.jobIdx[job]; !ok {
		return 0, 0, false
	}
	ti, ok = r.lookup(ji, name)
	return ji, ti, ok
}

func (r *runner) lookup(ji int32, name string) (int32, bool) {
	sj := &r.jobs[ji]
	if sj.n <= 16 {
		for ti := sj.first; ti < sj.first+sj.n; ti++ {
			if r.tasks[ti].name == name {
				return ti, true
			}
		}
		return 0, false
	}
	if sj.byName == nil {
		sj.byName = make(map[string]int32, sj.n)
		for ti := sj.first; ti < sj.first+sj.n; ti++ {
			sj.byName[r.tasks[ti].name] = ti
		}
	}
	ti, ok := sj.byName[name]
	return ti, ok
}

// note appends to the timeline, merging consecutive entries of one kind for
// one job at one instant ("start 128 tasks of job 7").
func (r *runner) note(kind, job, task, worker, detail string) {
	if r.tlMax < 0 {
		return
	}
	at := time.Duration(r.now).Seconds()
	if n := len(r.timeline); n > 0 {
		last := &r.timeline[n-1]
		if last.AtSeconds == at && last.Kind == kind && last.Job == job && last.Detail == detail && task != "" {
			last.Count++
			if len(last.Tasks) < timelineNames {
				last.Tasks = append(last.Tasks, task)
			}
			if len(last.Workers) < timelineNames && worker != "" {
				last.Workers = append(last.Workers, worker)
			}
			return
		}
	}
	if len(r.timeline) >= r.tlMax {
		return
	}
	e := TimelineEntry{AtSeconds: at, Kind: kind, Job: job, Detail: detail}
	if task != "" {
		e.Tasks, e.Count = []string{task}, 1
	}
	if worker != "" {
		e.Workers = []string{worker}
	}
	r.timeline = append(r.timeline, e)
}

// timelineNames is how many task and worker names one merged timeline entry
// keeps.
const timelineNames = 3

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
