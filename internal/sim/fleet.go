package sim

import (
	"fmt"
	"time"

	"github.com/allot-sched/allot/internal/density"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/elastic"
	"github.com/allot-sched/allot/internal/model"
)

// CostResult is what the fleet cost over the run. Disabled workers are left
// out: a worker costs its cost per hour while it is ready or draining, and
// nothing while disabled (by the scenario or the elastic coordinator).
type CostResult struct {
	// WorkerHours is the time workers spent enabled, summed.
	WorkerHours float64 `json:"workerHours"`
	// DisabledWorkerHours is the time workers spent disabled, summed.
	DisabledWorkerHours float64 `json:"disabledWorkerHours"`
	// Cost is Σ cost per hour × enabled hours.
	Cost float64 `json:"cost"`
}

// ElasticResult is what the elastic coordinator did during the run.
type ElasticResult struct {
	PollIntervalSeconds float64 `json:"pollIntervalSeconds"`
	Polls               int     `json:"polls"`
	Disables            int     `json:"disables"`
	Enables             int     `json:"enables"`
	// Toggles lists the first maxToggles toggles in order.
	Toggles []Toggle `json:"toggles"`
	// DisabledAtEnd lists the workers disabled when the run ended: they
	// are still workers of the fleet, left out of the cost.
	DisabledAtEnd []string `json:"disabledAtEnd"`
}

// Toggle is one state change the coordinator made.
type Toggle struct {
	AtSeconds float64           `json:"at"`
	Worker    string            `json:"worker"`
	State     model.WorkerState `json:"state"`
	Reason    string            `json:"reason"`
}

// maxToggles caps ElasticResult.Toggles.
const maxToggles = 200

// simWorker is the simulator's view of one worker.
type simWorker struct {
	name          string
	cost          float64
	running       int32
	disabled      bool
	disabledSince int64
	disabledNs    nsSum
}

// fleetTrack follows the workers: which are busy and enabled (the density
// series and the cost), and runs the elastic coordinator.
type fleetTrack struct {
	ws       []simWorker
	idx      map[string]int32
	busy     int // workers running at least one task
	enabled  int
	enabled0 int
	dens     *density.Recorder

	coord       *elastic.Coordinator
	poll        int64 // interval, ns
	pollPending bool
	idlePolls   int // polls in a row that changed nothing while nothing ran
	el          ElasticResult
}

func newFleetTrack(in Input, opt Options) (*fleetTrack, error) {
	ft := &fleetTrack{ws: make([]simWorker, len(in.Workers)), idx: make(map[string]int32, len(in.Workers))}
	for i, w := range in.Workers {
		sw := simWorker{name: w.Name, cost: w.CostPerHour, disabled: w.State == model.WorkerDisabled}
		ft.ws[i] = sw
		ft.idx[w.Name] = int32(i)
		if !sw.disabled {
			ft.enabled++
		}
	}
	ft.enabled0 = ft.enabled
	if opt.DensityBucket < 0 {
		return nil, fmt.Errorf("options.densityBucket: must not be negative (got %s)", opt.DensityBucket)
	}
	if opt.DensityBucket > 0 {
		ft.dens = density.NewRecorder(opt.DensityBucket, ft.enabled)
	}
	if ec := in.Config.Placement.Elastic; ec.Enabled {
		c, err := elastic.New(ec)
		if err != nil {
			return nil, fmt.Errorf("config: placement.%w", err)
		}
		ft.coord, ft.poll = c, int64(ec.PollInterval)
		ft.el.PollIntervalSeconds = ec.PollInterval.Seconds()
	}
	return ft, nil
}

func (ft *fleetTrack) worker(name string) int32 {
	if i, ok := ft.idx[name]; ok {
		return i
	}
	return -1
}

func (ft *fleetTrack) changed(now int64) {
	if ft.dens != nil {
		ft.dens.Workers(now, ft.busy, ft.enabled)
	}
}

// occupy and release count a slot holder on worker wi.
func (ft *fleetTrack) occupy(wi int32, now int64) {
	if wi < 0 {
		return
	}
	if ft.ws[wi].running++; ft.ws[wi].running == 1 {
		ft.busy++
		ft.changed(now)
	}
}

func (ft *fleetTrack) release(wi int32, now int64) {
	if wi < 0 {
		return
	}
	if ft.ws[wi].running--; ft.ws[wi].running == 0 {
		ft.busy--
		ft.changed(now)
	}
}

func (ft *fleetTrack) setState(wi int32, s model.WorkerState, now int64) {
	w := &ft.ws[wi]
	off := s == model.WorkerDisabled
	if off == w.disabled {
		return
	}
	if off {
		w.disabledSince = now
		ft.enabled--
	} else {
		w.disabledNs.add(now - w.disabledSince)
		ft.enabled++
	}
	w.disabled = off
	ft.changed(now)
}

// pollLimit is how many polls in a row may change nothing while nothing
// runs before the run counts as stalled: enough to outlast the cooldown.
func (ft *fleetTrack) pollLimit() int {
	if ft.poll <= 0 {
		return 1
	}
	return int(int64(ft.coord.Config().ToggleCooldown)/ft.poll) + 2
}

// mayHelp reports whether a coming poll may enable a disabled worker for
// tasks that wait while nothing else would happen.
func (ft *fleetTrack) mayHelp() bool {
	return ft.coord != nil && ft.enabled < len(ft.ws) && ft.idlePolls <= ft.pollLimit()
}

// elasticPoll runs the coordinator at the current instant and applies its
// toggles to the engine.
func (r *runner) elasticPoll() error {
	ft := r.fl
	ft.pollPending = false
	ft.el.Polls++
	at := r.at()
	acts := ft.coord.Poll(at, r.eng.ElasticWorkers(), r.eng.ReadyTasks())
	for _, a := range acts {
		if err := r.eng.Apply(engine.SetWorkerState{Name: a.Worker, State: a.State, At: at}); err != nil {
			return fmt.Errorf("elastic: %w", err)
		}
		ft.setState(ft.worker(a.Worker), a.State, r.now)
		kind := "enable"
		if a.State == model.WorkerDisabled {
			kind = "disable"
			ft.el.Disables++
		} else {
			ft.el.Enables++
		}
		if len(ft.el.Toggles) < maxToggles {
			ft.el.Toggles = append(ft.el.Toggles, Toggle{AtSeconds: time.Duration(r.now).Seconds(), Worker: a.Worker, State: a.State, Reason: a.Reason})
		}
		r.note(kind, "", "", a.Worker, a.Reason)
	}
	if len(acts) > 0 {
		r.dirty = true
		ft.idlePolls = 0
	} else if r.running == 0 && r.realPending == 0 {
		ft.idlePolls++
	}
	return nil
}

// schedulePoll queues the next poll on the grid Start + k·interval while
// the run has work left.
func (r *runner) schedulePoll() {
	ft := r.fl
	if ft.coord == nil || ft.pollPending || ft.poll <= 0 || r.unfinished == 0 && r.realPending == 0 {
		return
	}
	next := (r.now/ft.poll + 1) * ft.poll
	r.q.Push(next, event{kind: evElastic})
	ft.pollPending = true
}

// fleetResult fills the cost, elastic and density parts of res.
func (r *runner) fleetResult(res *Result) {
	ft := r.fl
	end := r.end
	for i := range ft.ws {
		w := &ft.ws[i]
		off := w.disabledNs
		if w.disabled {
			off.add(end - w.disabledSince)
		}
		offH := off.seconds() / 3600
		onH := time.Duration(end).Hours() - offH
		res.Cost.WorkerHours += onH
		res.Cost.DisabledWorkerHours += offH
		res.Cost.Cost += onH * w.cost
	}
	if ft.coord != nil {
		el := ft.el
		el.DisabledAtEnd = []string{}
		for _, w := range ft.ws {
			if w.disabled {
				el.DisabledAtEnd = append(el.DisabledAtEnd, w.name)
			}
		}
		if el.Toggles == nil {
			el.Toggles = []Toggle{}
		}
		res.Elastic = &el
	}
	if ft.dens != nil {
		res.Density = densityResult(ft.dens.Finish(end, ft.enabled0))
	}
}
