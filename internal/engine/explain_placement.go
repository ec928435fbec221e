package engine

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/model"
)

// PlacementExplain says how the registered workers stand against one task
// shape: how many each filter removed, in the order they are applied (a
// worker is counted under the first filter it fails), how many could take
// the task now, and the worker closest to taking it with what it lacks.
type PlacementExplain struct {
	Needs    model.Resources `json:"needs"`
	Selector model.Selector  `json:"selector,omitempty"`
	Workers  int             `json:"workers"`
	Removed  []FilterCount   `json:"removed"`
	// FitNow counts ready workers with a free slot and enough unused
	// resources for the task.
	FitNow  int            `json:"fitNow"`
	Closest *ClosestWorker `json:"closest,omitempty"`
	// Assigned is the one worker the tasks may run on now, when stage
	// stickiness or the dispatcher mode pins them: they wait for it however
	// many other workers are free.
	Assigned *AssignedWorker `json:"assigned,omitempty"`
	// NotAssigned says why a pin that would apply does not (the parent's
	// worker was removed, is draining, ...): the tasks are placed like any
	// other.
	NotAssigned string `json:"notAssigned,omitempty"`
	// AffinityWait is set when the tasks pass over free workers, waiting
	// for one that ran their job's tasks (intrinsic affinity).
	AffinityWait *AffinityWaitExplain `json:"affinityWait,omitempty"`
	// GPUDevices, for tasks that ask for GPUs and that no worker takes
	// now, names the devices held on the workers that could run them but
	// have too few free, and the tasks holding them (explain_devices.go).
	GPUDevices *GPUDeviceWait `json:"gpuDevices,omitempty"`
}

// How a task is pinned to one worker, in AssignedWorker.By.
const (
	// AssignedSticky: stage stickiness, the worker that ran the parent
	// task whose result the task loads.
	AssignedSticky = "sticky"
	// AssignedPipeline: the fixed-pipeline mode, the worker of the task's
	// type.
	AssignedPipeline = "pipeline"
	// AssignedBound: the static-worker mode, the worker of the task's job.
	AssignedBound = "bound"
)

// AssignedWorker is the one worker some waiting tasks may use now, and what
// keeps it from taking them: a placement section that counted the other
// free workers would suggest the tasks could go there, which they cannot.
type AssignedWorker struct {
	Worker string `json:"worker"`
	// By is what pins the tasks: AssignedSticky, AssignedPipeline or
	// AssignedBound.
	By string `json:"by"`
	// Parent (sticky) is the parent task whose result the tasks load;
	// Type (pipeline) is the tasks' type.
	Parent string            `json:"parent,omitempty"`
	Type   string            `json:"type,omitempty"`
	State  model.WorkerState `json:"state"`
	// Free says whether the worker could take one of the tasks now.
	Free  bool `json:"free"`
	Slots int  `json:"slots"`
	// Running lists the tasks the worker runs, soonest expected end first
	// (at most 10); RunningTotal counts them all.
	Running      []RunningOn `json:"running,omitempty"`
	RunningTotal int         `json:"runningTotal,omitempty"`
	// NextEnd is the earliest expected end of a task running there, from
	// the tasks' declared durations; zero when none declares one.
	NextEnd time.Time `json:"nextEnd,omitzero"`
	// OthersFree counts the other ready workers that could take the tasks
	// now were they not pinned: the tasks pass over them.
	OthersFree int `json:"othersFree"`
}

// RunningOn is a task running on a worker.
type RunningOn struct {
	Job     string    `json:"job"`
	Task    string    `json:"task"`
	Started time.Time `json:"started"`
	// ExpectedEnd is Started plus the task's declared duration; zero when
	// it declares none.
	ExpectedEnd time.Time `json:"expectedEnd,omitzero"`
}

// AffinityWaitExplain says how long tasks pass over free workers, hoping
// one that ran their job's tasks frees up (the priority policy's
// affinityWait, counted from when the task became ready).
type AffinityWaitExplain struct {
	ReadySince  time.Time `json:"readySince"`
	WaitSeconds float64   `json:"waitSeconds"`
	// Until is ReadySince plus the wait: from then on the task takes any
	// free worker that fits.
	Until time.Time `json:"until"`
	// AffinityWorkers counts the workers that ran the job's tasks (removed
	// ones included); none of them can take the task now.
	AffinityWorkers int `json:"affinityWorkers"`
	// PassedOver counts the free workers that could take the task now and
	// are passed over.
	PassedOver int `json:"passedOver"`
}

// FilterCount is how many workers one filter removed, and why. Filter is
// the filter's name (place.FilterCode's String); the filters are those of
// place's chain, in its order.
type FilterCount struct {
	Filter  string `json:"filter"`
	Workers int    `json:"workers"`
	Why     string `json:"why"`
}

// ClosestWorker is the worker that comes nearest to running the task, and
// exactly what it lacks: first the fewest things it can never offer
// (labels, hardware), then the fewest passing ones (state, a free slot),
// then the smallest relative shortfall, then registration order.
type ClosestWorker struct {
	Worker string            `json:"worker"`
	State  model.WorkerState `json:"state"`
	Lacks  []Lack            `json:"lacks"`
}

// Lack is one thing a worker does not offer: a label, a resource, a ready
// state or a free slot, with what the task needs and what the worker has.
type Lack struct {
	What string `json:"what"`
	Need string `json:"need"`
	Have string `json:"have"`
}

// pin is the one worker a ready task may use now, as the top of
// place.Fleet.Choose decides it: the worker that ran its stage-stickiness
// parent, its fixed-pipeline type's worker or its static-worker job's
// worker. w is nil when none applies; note then says why a stickiness or
// pipeline assignment that exists does not hold (the worker was removed,
// is draining, ...), so the task is placed like any other.
type pin struct {
	w    *place.Worker
	by   string // AssignedSticky, AssignedPipeline, AssignedBound
	name string // the sticky parent, or the pipeline type
	note string
}

// pinOf mirrors the mode bindings and stage stickiness of
// place.Fleet.Choose (and the request placement.go builds) for ready task
// t. It reads only.
func (e *Engine) pinOf(t *task) pin {
	j := t.job
	switch e.fleet.Mode() {
	case place.StaticWorker:
		if w := e.fleet.Bound(j.id); w != nil {
			return pin{w: w, by: AssignedBound}
		}
	case place.FixedPipeline:
		typ := taskType(t.spec)
		switch w := e.fleet.PipelineWorker(typ); {
		case w == nil:
		case w.Gone():
			return pin{note: fmt.Sprintf("task type %s was assigned to worker %s, which was removed: the next worker to run the type takes it", typ, w.Spec.Name)}
		default:
			return pin{w: w, by: AssignedPipeline, name: typ}
		}
	case place.Adaptive:
		if t.spec.StickTo == "" || !e.fleet.Sticky() {
			return pin{}
		}
		p := j.byName[t.spec.StickTo]
		if p == nil || p.lastWorker == nil {
			return pin{}
		}
		w, s := p.lastWorker, t.shape
		var why string
		switch {
		case w.Gone():
			why = "was removed"
		case !w.Takes():
			why = "is " + string(w.Spec.State)
		case w.BoundTo() != "":
			why = "is bound to job " + w.BoundTo()
		default:
			code, never := e.fleet.Never(s, w)
			switch {
			case !never:
				return pin{w: w, by: AssignedSticky, name: p.spec.Name}
			case code == place.FilterLabels:
				why = "does not match the selector " + s.Sel.String()
			default:
				why = "can never run it (it lacks " + code.Words() + ")"
			}
		}
		return pin{note: fmt.Sprintf("stage stickiness does not hold the task: worker %s, which ran its parent %s, %s; the task is placed like any other",
			w.Spec.Name, p.spec.Name, why)}
	}
	return pin{}
}

// pinPhrase says why pn pins a task of j to its worker, for messages.
func pinPhrase(j *job, pn pin) string {
	switch pn.by {
	case AssignedSticky:
		return "which ran its parent " + pn.name + " (stage stickiness)"
	case AssignedPipeline:
		return "which task type " + pn.name + " is assigned to (fixed-pipeline mode)"
	}
	return "which job " + j.id + " is bound to"
}

// readyKey identifies a group of identical ready tasks: the same shape and
// the same pin.
type readyKey struct {
	shape *place.Shape
	pin   pin
}

// readyGroups groups the job's ready tasks by shape and by the worker they
// are pinned to, if any; the group of the head task comes first and
// carries the job's reason. Only the first MaxPendingGroups groups are
// explained (each costs a pass over the fleet); more counts the others.
func (e *Engine) readyGroups(j *job) (groups []PendingExplain, more int) {
	if j.ready.Len() == 0 {
		return nil, 0
	}
	byKey := map[readyKey][]*task{}
	var keys []readyKey
	for _, t := range j.ready.items {
		k := readyKey{shape: t.shape, pin: e.pinOf(t)}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], t)
	}
	head := keys[0] // j.ready.items[0] is the head task
	slices.SortFunc(keys, func(a, b readyKey) int {
		if a == head || b == head {
			if a == head {
				return -1
			}
			return 1
		}
		return cmp.Compare(minIdx(byKey[a]), minIdx(byKey[b]))
	})
	if len(keys) > MaxPendingGroups {
		more, keys = len(keys)-MaxPendingGroups, keys[:MaxPendingGroups]
	}
	out := make([]PendingExplain, 0, len(keys))
	for _, k := range keys {
		ts := byKey[k]
		p := PendingExplain{State: model.TaskReady, Tasks: len(ts), Examples: examples(ts)}
		p.Placement = e.explainPlacement(j, k.shape, k.pin)
		rep := j.ready.items[0]
		if k != head {
			rep = ts[0]
			for _, t := range ts {
				if t.idx < rep.idx {
					rep = t
				}
			}
		}
		live := e.explainAffinity(rep, k.pin, p.Placement)
		if a := p.Placement.Assigned; a != nil && !a.Free && k != head {
			live = e.chooseReason(rep)
		}
		switch {
		case k == head:
			p.Reason = e.readyReason(j)
		case live.Code != "":
			p.Reason = live
		default:
			p.Reason = placementReason(p.Placement, e.readyReason(j))
		}
		out = append(out, p)
	}
	return out, more
}

// chooseReason asks placement what it would answer for rep now, so that a
// pinned task or one waiting for affinity gets the engine's own reason.
// place.Fleet.Choose occupies nothing; at most it fills placement's caches
// (scores, a shape's failure memo) as the next cycle's first call would.
func (e *Engine) chooseReason(rep *task) model.Reason {
	var req place.Request
	e.request(&req, rep)
	e.withAffinity(&req, rep)
	if ch, r := e.fleet.Choose(&req); ch.Worker == nil {
		return r
	}
	return model.Reason{}
}

// explainAffinity fills p.AffinityWait when rep, the next task of its
// group, passes over the free workers that fit it now, waiting for one that
// ran its job's tasks (intrinsic affinity with an affinity wait). Whether
// it does is placement's own answer (chooseReason); the reason is
// returned, or a zero one.
func (e *Engine) explainAffinity(rep *task, pn pin, p *PlacementExplain) model.Reason {
	j := rep.job
	if pn.w != nil || p.FitNow == 0 || e.affinity[j].Len() == 0 {
		return model.Reason{}
	}
	on, wait := affinityOf(j.q)
	if !on || wait <= 0 || !e.now.Before(rep.readyAt.Add(wait)) {
		return model.Reason{}
	}
	r := e.chooseReason(rep)
	if r.Code != model.ReasonAffinityWait {
		return model.Reason{}
	}
	p.AffinityWait = &AffinityWaitExplain{ReadySince: rep.readyAt, WaitSeconds: wait.Seconds(), Until: rep.readyAt.Add(wait),
		AffinityWorkers: e.affinity[j].Len(), PassedOver: p.FitNow}
	return r
}

func minIdx(ts []*task) int {
	m := math.MaxInt
	for _, t := range ts {
		m = min(m, t.idx)
	}
	return m
}

func examples(ts []*task) []string {
	ts = slices.Clone(ts)
	slices.SortFunc(ts, func(a, b *task) int { return cmp.Compare(a.idx, b.idx) })
	out := make([]string, 0, min(len(ts), maxExamples))
	for _, t := range ts[:min(len(ts), maxExamples)] {
		out = append(out, t.spec.Name)
	}
	return out
}

// placementReason is the reason of ready tasks whose shape is not the
// job's head: its own placement answer when no worker takes it now, else
// the job's.
func placementReason(p *PlacementExplain, job model.Reason) model.Reason {
	if p.FitNow > 0 {
		return job
	}
	removed := map[string]int{}
	for _, f := range p.Removed {
		removed[f.Filter] = f.Workers
	}
	busy := removed[place.FilterBusy.String()] + removed[place.FilterBound.String()]
	switch off := removed[place.FilterState.String()]; {
	case p.Workers == 0:
		return model.Because(model.ReasonUnschedulable, "no workers are registered")
	case busy > 0:
		return model.Because(model.ReasonNoFreeSlot, "needs %s; all %d workers that fit are busy", p.Needs, busy)
	case off > 0:
		return model.Because(model.ReasonWorkersDisabled, "needs %s; the %d workers that fit are draining or disabled", p.Needs, off)
	}
	return model.Because(model.ReasonUnschedulable, "needs %s; no worker can ever run it", p.Needs)
}

// explainPlacement runs shape s down placement's filter chain; pn is the
// worker the tasks are pinned to, if any.
func (e *Engine) explainPlacement(j *job, s *place.Shape, pn pin) *PlacementExplain {
	sc := place.Scope{Job: j.id, Pin: pn.w, PinBound: pn.by == AssignedBound}
	if pn.w != nil {
		sc.PinWhy = pinPhrase(j, pn)
	}
	m := e.fleet.Filter(s, &sc)
	p := &PlacementExplain{Needs: s.Req, Selector: s.Sel, Workers: m.Workers, Removed: []FilterCount{}, FitNow: m.FitNow, NotAssigned: pn.note}
	for _, code := range place.Filters() {
		if n := m.Removed[code]; n > 0 {
			p.Removed = append(p.Removed, FilterCount{Filter: code.String(), Workers: n, Why: m.Why[code]})
		}
	}
	if pn.w != nil {
		p.Assigned = e.assignedWorker(pn, m.PinFits, m.OthersFree)
	}
	if w := m.Closest; w != nil {
		lacks := make([]Lack, len(m.Lacks))
		for i, l := range m.Lacks {
			lacks[i] = Lack{What: l.What, Need: l.Need, Have: l.Have}
		}
		p.Closest = &ClosestWorker{Worker: w.Spec.Name, State: w.Spec.State, Lacks: lacks}
	}
	if p.FitNow == 0 {
		p.GPUDevices = e.gpuDeviceWait(j, s, pn)
	}
	return p
}

// assignedWorker describes the worker pn pins tasks to: its state, whether
// it takes one of them now (fits), what runs there and when that is
// expected to end.
func (e *Engine) assignedWorker(pn pin, fits bool, othersFree int) *AssignedWorker {
	w := pn.w
	a := &AssignedWorker{Worker: w.Spec.Name, By: pn.by, State: w.Spec.State, Free: fits, Slots: w.Spec.Slots, OthersFree: othersFree}
	switch pn.by {
	case AssignedSticky:
		a.Parent = pn.name
	case AssignedPipeline:
		a.Type = pn.name
	}
	var run []RunningOn
	if w.Idx < len(e.onWorker) {
		for t := e.onWorker[w.Idx]; t != nil; t = t.nextOnWorker {
			r := RunningOn{Job: t.job.id, Task: t.spec.Name, Started: t.started}
			if d := t.spec.Duration; d > 0 {
				r.ExpectedEnd = t.started.Add(d)
			}
			run = append(run, r)
		}
	}
	// Known ends first, soonest first; then by name, so the list is stable.
	slices.SortFunc(run, func(x, y RunningOn) int {
		if x.ExpectedEnd.IsZero() != y.ExpectedEnd.IsZero() {
			if x.ExpectedEnd.IsZero() {
				return 1
			}
			return -1
		}
		return cmp.Or(x.ExpectedEnd.Compare(y.ExpectedEnd), strings.Compare(x.Job, y.Job), strings.Compare(x.Task, y.Task))
	})
	a.RunningTotal = len(run)
	if len(run) > 0 {
		a.Running = run[:min(len(run), maxAhead)]
		a.NextEnd = run[0].ExpectedEnd
	}
	return a
}

// placementHelp computes counterfactuals for one group of ready tasks when
// no worker takes them now: the largest smaller request that a free ready
// worker fits, a selector that shuts out workers that would fit, and a
// drained or disabled worker that would. Tasks pinned to one worker are
// told about that worker only; tasks in an affinity wait are told until
// when they pass over the free workers. A full pool is told what the
// policy says frees slots (from a, the job's allocation).
func (e *Engine) placementHelp(j *job, g *PendingExplain, a *AllocationExplain) []Help {
	p := g.Placement
	if p == nil {
		return nil
	}
	var out []Help
	if aw := p.AffinityWait; aw != nil {
		out = append(out, affinityHelp(j, aw))
	}
	if a := p.Assigned; a != nil && !a.Free {
		return append(out, e.assignedHelp(j, g)...)
	}
	if p.FitNow > 0 {
		if g.Reason.Code == model.ReasonNoFreeSlot {
			out = append(out, fullPoolHelp(a)...)
		}
		return out
	}
	if h, ok := e.smallerRequest(j, p, g.Reason); ok {
		out = append(out, h)
	} else if g.Reason.Code == model.ReasonUnschedulable && neverFits(p) {
		out = append(out, neverHelp(p))
	}
	out = append(out, gpuDevicesHelp(p.GPUDevices)...)
	var offSelector, offState []string
	own := e.fleet.Bound(j.id)
	for _, w := range e.fleet.Workers() {
		if b := w.BoundTo(); w.Gone() || b != "" && b != j.id || own != nil && own != w {
			continue
		}
		sel := !p.Selector.Matches(w.Spec.Labels)
		fits := p.Needs.FitsIn(w.Spec.Capacity)
		switch {
		case sel && fits && w.Spec.State == model.WorkerReady:
			offSelector = append(offSelector, w.Spec.Name)
		case !sel && fits && w.Spec.State != model.WorkerReady:
			offState = append(offState, w.Spec.Name+" ("+string(w.Spec.State)+")")
		}
	}
	if len(offSelector) > 0 {
		out = append(out, Help{Kind: "selector", Message: fmt.Sprintf(
			"%d ready worker(s) have the resources but not the labels %s (e.g. %s): a job selector or queue pool that matches them would let the task run there",
			len(offSelector), p.Selector, strings.Join(offSelector[:min(3, len(offSelector))], ", "))})
	}
	if len(offState) > 0 {
		out = append(out, Help{Kind: "enable_worker", Message: fmt.Sprintf(
			"%d worker(s) that fit are not ready: %s; setting one ready would let the task run there",
			len(offState), strings.Join(offState[:min(3, len(offState))], ", "))})
	}
	if g.Reason.Code == model.ReasonNoFreeSlot {
		out = append(out, fullPoolHelp(a)...)
	}
	return out
}

// assignedHelp says what pinned tasks wait for: their worker, what runs
// there and when it should end. The other free workers are named only as
// what a configuration change would open, never as somewhere the tasks
// could go.
func (e *Engine) assignedHelp(j *job, g *PendingExplain) []Help {
	p := g.Placement
	a := p.Assigned
	var b strings.Builder
	switch a.By {
	case AssignedSticky:
		fmt.Fprintf(&b, "the task loads the result of %s and waits for worker %s, which ran it (stage stickiness)", a.Parent, a.Worker)
	case AssignedPipeline:
		fmt.Fprintf(&b, "task type %s is assigned to worker %s (fixed-pipeline mode): its tasks wait for that worker", a.Type, a.Worker)
	default:
		fmt.Fprintf(&b, "job %s is bound to worker %s (static-worker mode): its tasks wait for that worker", j.id, a.Worker)
	}
	switch {
	case a.State != model.WorkerReady:
		fmt.Fprintf(&b, "; %s is %s and takes no new task until it is ready again", a.Worker, a.State)
	case a.RunningTotal > 0:
		fmt.Fprintf(&b, "; %s is busy running %s", a.Worker, runningList(a))
		switch {
		case a.NextEnd.IsZero():
			b.WriteString("; when it frees is unknown")
		case a.RunningTotal > 1:
			fmt.Fprintf(&b, "; the first of them is expected to end at %s", a.NextEnd.UTC().Format(time.RFC3339))
		}
	default:
		fmt.Fprintf(&b, "; %s has too little left unused for it", a.Worker)
	}
	if a.OthersFree > 0 {
		fmt.Fprintf(&b, "; the %d other free worker(s) that fit are not an option", a.OthersFree)
		if a.By == AssignedSticky {
			fmt.Fprintf(&b, " while %s is ready (without stage stickiness, placement.enableStageStickiness: false or no stickTo, the task could use them)", a.Worker)
		} else {
			fmt.Fprintf(&b, " in the %s mode", e.fleet.Mode())
		}
	}
	out := []Help{{Kind: "assigned_worker", Message: b.String()}}
	if a.State != model.WorkerReady {
		out = append(out, Help{Kind: "enable_worker", Message: fmt.Sprintf("setting worker %s ready would let the task run there", a.Worker)})
	}
	if h, ok := e.smallerRequest(j, p, g.Reason); ok {
		out = append(out, h)
	}
	return out
}

// runningList names the tasks a pinned worker runs, with their expected
// ends.
func runningList(a *AssignedWorker) string {
	parts := make([]string, 0, len(a.Running))
	for _, r := range a.Running {
		s := r.Job + "/" + r.Task
		if !r.ExpectedEnd.IsZero() {
			s += " (expected to end at " + r.ExpectedEnd.UTC().Format(time.RFC3339) + ")"
		} else {
			s += " (no declared duration)"
		}
		parts = append(parts, s)
	}
	if more := a.RunningTotal - len(a.Running); more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(parts, ", ")
}

// affinityHelp says how long a task passes over free workers for one that
// ran its job's tasks, and what happens after.
func affinityHelp(j *job, aw *AffinityWaitExplain) Help {
	wait := time.Duration(aw.WaitSeconds * float64(time.Second))
	return Help{Kind: "affinity_wait", Message: fmt.Sprintf(
		"the task passes over %d free worker(s) that fit, waiting for one of the %d worker(s) that ran tasks of job %s, until %s (affinityWait %s of queue %s, counted from when it became ready at %s); from then on it takes a free worker. A shorter affinityWait would end the wait sooner",
		aw.PassedOver, aw.AffinityWorkers, j.id, aw.Until.UTC().Format(time.RFC3339), wait, j.q.name, aw.ReadySince.UTC().Format(time.RFC3339))}
}

// smallerRequest finds the free ready worker that fits the task with the
// least cut request (each dimension cut to what the worker has unused, a
// GPU task keeping at least one GPU), and says what asking for it would do.
// A pinned task looks at its own worker only.
func (e *Engine) smallerRequest(j *job, p *PlacementExplain, r model.Reason) (Help, bool) {
	need := p.Needs
	var best *place.Worker
	var bestReq model.Resources
	bestCut := math.Inf(1)
	own := e.fleet.Bound(j.id)
	if p.Assigned != nil {
		own, _ = e.fleet.Worker(p.Assigned.Worker)
	}
	for _, w := range e.fleet.Workers() {
		if !w.Takes() || w.FreeSlots() < 1 || !p.Selector.Matches(w.Spec.Labels) {
			continue
		}
		if b := w.BoundTo(); b != "" && b != j.id || own != nil && own != w {
			continue
		}
		free := w.Spec.Capacity.Sub(w.Used)
		red := model.Resources{MilliCPU: min(need.MilliCPU, free.MilliCPU), MemoryMB: min(need.MemoryMB, free.MemoryMB),
			GPUs: min(need.GPUs, free.GPUs)}
		if need.GPUs > 0 {
			red.GPUMemoryMB = min(need.GPUMemoryMB, w.Spec.Capacity.GPUMemoryMB)
		}
		if red == need || !red.FitsIn(free) ||
			need.GPUs > 0 && (red.GPUs < 1 || need.GPUMemoryMB > 0 && red.GPUMemoryMB < 1) ||
			need.MemoryMB > 0 && red.MemoryMB < 1 || need.MilliCPU > 0 && red.MilliCPU < 1 {
			continue
		}
		cut := relCut(need.GPUs, red.GPUs) + relCut(need.GPUMemoryMB, red.GPUMemoryMB) + relCut(need.MemoryMB, red.MemoryMB) + relCut(need.MilliCPU, red.MilliCPU)
		if cut < bestCut-1e-12 {
			best, bestReq, bestCut = w, red, cut
		}
	}
	if best == nil {
		return Help{}, false
	}
	var parts []string
	if bestReq.GPUs != need.GPUs {
		parts = append(parts, fmt.Sprintf("%d GPU instead of %d", bestReq.GPUs, need.GPUs))
	}
	if bestReq.GPUMemoryMB != need.GPUMemoryMB {
		parts = append(parts, fmt.Sprintf("%d MB of GPU memory instead of %d", bestReq.GPUMemoryMB, need.GPUMemoryMB))
	}
	if bestReq.MemoryMB != need.MemoryMB {
		parts = append(parts, fmt.Sprintf("%d MB of memory instead of %d", bestReq.MemoryMB, need.MemoryMB))
	}
	if bestReq.MilliCPU != need.MilliCPU {
		parts = append(parts, fmt.Sprintf("%g CPU instead of %g", float64(bestReq.MilliCPU)/1000, float64(need.MilliCPU)/1000))
	}
	// "Would start now" is said only when the next cycle would hand the
	// worker to this task: placement, not the policy, refused it (the
	// policy handed it a slot), and no ready task that the cycle serves
	// before it fits the worker. Otherwise the worker only fits.
	msg := fmt.Sprintf("asking for %s would fit worker %s, which is free now", strings.Join(parts, ", "), best.Spec.Name)
	if r.Code == model.ReasonUnschedulable || r.Code == model.ReasonWorkersDisabled || r.Code == model.ReasonStickyWorkerBusy ||
		r.Code == model.ReasonAssignedWorkerBusy {
		if ahead := e.aheadOf(j, best); ahead != "" {
			msg += ", but the cycle serves first " + ahead + " that fit it"
		} else {
			msg = fmt.Sprintf("asking for %s would start now on worker %s", strings.Join(parts, ", "), best.Spec.Name)
		}
	}
	return Help{Kind: "smaller_request", Message: msg}, true
}

// aheadOf describes the ready tasks that the next cycle serves before j's
// and that fit worker w now: those of queues allocated before j's (a
// higher priority, then the name, as Cycle orders them) and those of the
// jobs ahead of j in its own group. Tasks pinned to another worker are left
// out. "" when there are none.
func (e *Engine) aheadOf(j *job, w *place.Worker) string {
	rank := make(map[*queue]int, len(e.queues))
	for i, q := range e.queues {
		rank[q] = i
	}
	mine := rank[j.q]
	free := w.Spec.Capacity.Sub(w.Used)
	perQueue := make([]int, len(e.queues))
	group := 0
	for _, o := range e.active {
		if o == j || o.done || o.ready.Len() == 0 {
			continue
		}
		before := rank[o.q] < mine
		if !before && (o.q != j.q || o.g != j.g || !o.g.jobs.less(o, j)) {
			continue
		}
		n := 0
		var last *place.Shape
		fits := false
		for _, t := range o.ready.items {
			if t.shape != last {
				last = t.shape
				fits = t.shape.Sel.Matches(w.Spec.Labels) && t.shape.Req.FitsIn(free)
			}
			if !fits {
				continue
			}
			if pw := e.pinOf(t).w; pw != nil && pw != w {
				continue
			}
			n++
		}
		if before {
			perQueue[rank[o.q]] += n
		} else {
			group += n
		}
	}
	var parts []string
	for i, n := range perQueue {
		if n > 0 {
			q := e.queues[i]
			parts = append(parts, fmt.Sprintf("%d ready task(s) of queue %s (priority %d)", n, q.name, q.priority))
		}
	}
	if group > 0 {
		parts = append(parts, fmt.Sprintf("%d ready task(s) of jobs ahead in group %s", group, j.g.key))
	}
	return strings.Join(parts, " and ")
}

func relCut(need, got int64) float64 {
	if need <= 0 {
		return 0
	}
	return float64(need-got) / float64(need)
}
