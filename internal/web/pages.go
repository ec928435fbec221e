package web

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// funcs are the template helpers.
var funcs = template.FuncMap{
	"ago": func(now, t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		d := now.Sub(t).Round(time.Second)
		if d < 0 {
			d = 0
		}
		return d.String() + " ago"
	},
	"clock": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			return v.UTC().Format("2006-01-02 15:04:05 UTC")
		case *time.Time:
			if v != nil {
				return v.UTC().Format("2006-01-02 15:04:05 UTC")
			}
		}
		return "—"
	},
	"taskStates": func() []string { return taskStates },
	"pct":        func(v float64) string { return fmt.Sprintf("%.0f%%", v) },
	"cost":       func(v float64) string { return fmt.Sprintf("%.2f/h", v) },
	"resources":  resources,
	"since":      since,
	"list":       func(v ...any) []any { return v },
	"labels": func(m map[string]string) string {
		parts := make([]string, 0, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			parts = append(parts, k+"="+m[k])
		}
		return strings.Join(parts, " ")
	},
	"target": func(t int) string {
		if t < 0 {
			return "—"
		}
		return fmt.Sprint(t)
	},
}

// resources writes a worker's resources as people read them: cores,
// memory in GiB when whole, GPUs and their memory.
func resources(r spec.Resources) string {
	var parts []string
	if r.CPU > 0 {
		parts = append(parts, strconv.FormatFloat(float64(r.CPU)/1000, 'f', -1, 64)+" CPU")
	}
	mem := func(mb spec.Memory) string {
		if mb >= 1024 && mb%1024 == 0 {
			return fmt.Sprintf("%dGi", mb/1024)
		}
		return fmt.Sprintf("%dMi", mb)
	}
	if r.Memory > 0 {
		parts = append(parts, mem(r.Memory)+" memory")
	}
	if r.GPUs > 0 {
		g := fmt.Sprintf("%d GPU", r.GPUs)
		if r.GPUMemory > 0 {
			g += " × " + mem(r.GPUMemory)
		}
		parts = append(parts, g)
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, ", ")
}

// groupKeys gives every group seen in the history or the last cycle a
// colour index, in sorted order.
func groupKeys(s *control.Snapshot) map[string]int {
	set := map[string]bool{}
	for _, g := range s.Groups {
		set[g.Queue+"/"+g.Group] = true
	}
	for _, p := range s.History {
		for _, g := range p.Groups {
			set[g.Queue+"/"+g.Group] = true
		}
	}
	keys := slices.Sorted(maps.Keys(set))
	out := make(map[string]int, len(keys))
	for i, k := range keys {
		out[k] = i
	}
	return out
}

// overviewData is the overview page.
type overviewData struct {
	Queues       []queueRow
	Chart        *lineChart
	Workers      []stateCount
	WorkersTotal int
	PendingJobs  int
	PendingTasks int
	ReadyTasks   int
	Endpoints    []endpointRow
	Density      *lineChart
	DensityNote  string
}

type queueRow struct {
	Name     string
	Policy   string
	Priority int
	Running  int
	Waiting  int
	Groups   []groupRow
	// MoreGroups counts the groups left out of Groups (maxGroupRows).
	MoreGroups int
	// Shares is a fairshare queue's usage against entitlement per share
	// (details.go); PoolSlots the pool's size it is measured against.
	Shares    []shareRow
	PoolSlots int
}

// Caps that keep each page bounded on a large system: past them a page
// lists the first rows and says how many it left out.
const (
	// maxGroupRows bounds a queue's group table: with the priority policy
	// every job is a group. The busiest groups are listed.
	maxGroupRows = 50
	// maxWorkerRows bounds the workers page.
	maxWorkerRows = 500
	// maxTaskRows bounds a job page's task table.
	maxTaskRows = 1000
)

type groupRow struct {
	Name    string
	Colour  string
	Running int
	Waiting int
	Target  int // -1 when the policy sets none
	// Bar widths (CSS percentages) against the queue's largest figure.
	RunW, TargetW string
}

type stateCount struct {
	State string
	Count int
}

// workerStates lists the worker states in the order people read them.
var workerStates = []string{string(model.WorkerReady), string(model.WorkerDraining), string(model.WorkerDisabled), "lost"}

func (d *Dashboard) overview(r *http.Request, _ auth.Principal) (string, string, string, any, error) {
	snap := d.ctrl.Snapshot()
	qs, err := d.ctrl.Queues(r.Context())
	if err != nil {
		return "", "", "", nil, err
	}
	keys := groupKeys(snap)
	out := overviewData{Chart: historyChart(snap.History, keys), ReadyTasks: snap.ReadyTasks}
	byQueue := map[string]int{}
	var fleet []api.Worker // read once, for the first fair-share queue
	for _, q := range qs {
		var pol struct {
			Kind string `json:"kind"`
		}
		_ = json.Unmarshal(q.Policy, &pol)
		byQueue[q.Name] = len(out.Queues)
		row := queueRow{Name: q.Name, Policy: pol.Kind, Priority: q.Priority}
		if q.Status != nil && pol.Kind == "fairshare" {
			if fleet == nil {
				if fleet, err = d.ctrl.Workers(r.Context()); err != nil {
					return "", "", "", nil, err
				}
			}
			row.PoolSlots = poolSlots(q.Pool, fleet)
			row.Shares = shareRows(q.Status, row.PoolSlots)
		}
		out.Queues = append(out.Queues, row)
	}
	for _, g := range snap.Groups {
		i, ok := byQueue[g.Queue]
		if !ok { // a queue removed from the configuration, still draining
			byQueue[g.Queue] = len(out.Queues)
			i = len(out.Queues)
			out.Queues = append(out.Queues, queueRow{Name: g.Queue})
		}
		q := &out.Queues[i]
		q.Running += g.Running
		q.Waiting += g.Waiting
		q.Groups = append(q.Groups, groupRow{Name: g.Group, Colour: colourOf(keys[g.Queue+"/"+g.Group]), Running: g.Running,
			Waiting: g.Waiting, Target: g.Target})
	}
	for i := range out.Queues {
		q := &out.Queues[i]
		if len(q.Groups) > maxGroupRows {
			slices.SortFunc(q.Groups, func(a, b groupRow) int {
				return cmp.Or(cmp.Compare(b.Running+b.Waiting, a.Running+a.Waiting), strings.Compare(a.Name, b.Name))
			})
			q.MoreGroups, q.Groups = len(q.Groups)-maxGroupRows, q.Groups[:maxGroupRows]
		}
		sort.Slice(q.Groups, func(a, b int) bool { return q.Groups[a].Name < q.Groups[b].Name })
		top := 1
		for _, g := range q.Groups {
			top = max(top, g.Running, g.Target)
		}
		for j := range q.Groups {
			g := &q.Groups[j]
			g.RunW = percent(float64(g.Running), float64(top))
			g.TargetW = percent(float64(max(g.Target, 0)), float64(top))
		}
	}
	for _, s := range workerStates {
		out.Workers = append(out.Workers, stateCount{s, snap.Workers[s]})
		out.WorkersTotal += snap.Workers[s]
	}
	for _, s := range slices.Sorted(maps.Keys(snap.Workers)) {
		if !slices.Contains(workerStates, s) {
			out.Workers = append(out.Workers, stateCount{s, snap.Workers[s]})
			out.WorkersTotal += snap.Workers[s]
		}
	}
	out.PendingJobs, out.PendingTasks = snap.Pending.Jobs, snap.Pending.Tasks
	out.Endpoints = endpointRows(snap.Endpoints)
	if d.opt.Density == nil {
		out.DensityNote = "Density is not available from this server."
	} else {
		out.Density = densityChart(d.opt.Density.Density())
	}
	return "overview", "Overview", "overview", out, nil
}

// workersData is the workers page.
type workersData struct {
	Workers []workerRow
	// More counts the workers left out (maxWorkerRows).
	More int
	Now  time.Time
}

func (d *Dashboard) workers(r *http.Request, _ auth.Principal) (string, string, string, any, error) {
	ws, err := d.ctrl.Workers(r.Context())
	if err != nil {
		return "", "", "", nil, err
	}
	running, err := d.ctrl.RunningTasks(r.Context())
	if err != nil {
		return "", "", "", nil, err
	}
	data := workersData{Now: d.ctrl.Snapshot().At}
	if len(ws) > maxWorkerRows {
		data.More, ws = len(ws)-maxWorkerRows, ws[:maxWorkerRows]
	}
	for _, w := range ws {
		data.Workers = append(data.Workers, workerRowOf(w, running[w.Name]))
	}
	return "workers", "Workers", "workers", data, nil
}

// jobsData is the jobs page: the jobs that match the filter, each with why
// its waiting tasks wait.
type jobsData struct {
	Queue, State string
	Queues       []string
	States       []string
	Jobs         []jobRow
	More         bool
}

type jobRow struct {
	api.Job
	Reasons  []pendingReason
	Progress progress
}

type pendingReason struct {
	Tasks  int
	Code   string
	Reason string
}

// jobStates are the job states a filter may name.
var jobStates = []string{"pending", "running", "succeeded", "failed", "cancelled", control.JobDeadLettered}

const jobsPageLimit = 200

func (d *Dashboard) jobs(r *http.Request, p auth.Principal) (string, string, string, any, error) {
	q := r.URL.Query()
	data := jobsData{Queue: q.Get("queue"), State: q.Get("state"), States: jobStates}
	if data.State == "" {
		data.State = "pending,running"
	}
	states := strings.Split(data.State, ",")
	for _, s := range states {
		if !slices.Contains(jobStates, s) {
			return "", "", "", nil, &httpError{http.StatusBadRequest, fmt.Sprintf("state: unknown job state %q (known: %s)", s, strings.Join(jobStates, ", "))}
		}
	}
	if err := p.AllowFilter(data.Queue, ""); err != nil {
		return "", "", "", nil, &httpError{http.StatusForbidden, err.Error()}
	}
	qs, err := d.ctrl.Queues(r.Context())
	if err != nil {
		return "", "", "", nil, err
	}
	for _, q := range qs {
		data.Queues = append(data.Queues, q.Name)
	}
	f := store.JobFilter{Queue: data.Queue, States: states, Limit: jobsPageLimit}
	f.Queues, f.Shares = p.JobScope()
	list, err := d.ctrl.Jobs(r.Context(), f)
	if err != nil {
		return "", "", "", nil, err
	}
	data.More = list.Next != 0
	// The reasons of the page's jobs only: a backlog of any size costs the
	// page what it shows.
	var waiting []string
	for _, j := range list.Jobs {
		if j.State == "pending" || j.State == "running" {
			waiting = append(waiting, j.ID)
		}
	}
	pending := map[string][]engine.Pending{}
	counts := map[string]map[string]int{}
	if len(waiting) > 0 {
		if pending, err = d.ctrl.PendingOf(r.Context(), waiting); err != nil {
			return "", "", "", nil, err
		}
		if counts, err = d.ctrl.TaskCounts(r.Context(), waiting); err != nil {
			return "", "", "", nil, err
		}
	}
	for _, j := range list.Jobs {
		row := jobRow{Job: j}
		if c, ok := counts[j.ID]; ok {
			row.Progress = progressOf(c)
		}
		for _, pe := range pending[j.ID] {
			row.Reasons = append(row.Reasons, pendingReason{Tasks: pe.Tasks, Code: pe.Reason.Code, Reason: pe.Reason.Message})
		}
		data.Jobs = append(data.Jobs, row)
	}
	return "jobs", "Jobs", "jobs", data, nil
}

// jobData is one job's page.
type jobData struct {
	Job    api.Job
	DAG    *dagView
	Counts []stateCount
	// Tasks are the rows of the task table, at most maxTaskRows;
	// MoreTasks counts the others.
	Tasks     []api.Task
	MoreTasks int
	// Details are the explanation and output (outside the live part).
	Details jobDetails
	Now     time.Time
}

// taskStates orders a job's task counts.
var taskStates = []string{"blocked", "ready", "pending", "running", "succeeded", "failed", "cancelled"}

func (d *Dashboard) job(r *http.Request, p auth.Principal) (string, string, string, any, error) {
	id := r.PathValue("id")
	notFound := &httpError{http.StatusNotFound, fmt.Sprintf("There is no job %q.", id)}
	j, err := d.ctrl.Job(r.Context(), id)
	switch {
	case errors.Is(err, control.ErrNotFound):
		return "", "", "", nil, notFound
	case err != nil:
		return "", "", "", nil, err
	case !p.Sees(j.Queue, j.Share):
		// As the API does: another team's job is answered as missing.
		return "", "", "", nil, notFound
	}
	data := jobData{Job: j, DAG: layoutDAG(j.Tasks), Tasks: j.Tasks, Now: d.ctrl.Snapshot().At}
	data.Details.Ended = j.State != "pending" && j.State != "running"
	if r.Header.Get("HX-Request") != "true" { // the live part's polls show neither
		data.Details = d.jobDetails(r.Context(), j)
	}
	if len(j.Tasks) > maxTaskRows {
		data.MoreTasks, data.Tasks = len(j.Tasks)-maxTaskRows, j.Tasks[:maxTaskRows]
	}
	for _, s := range taskStates {
		if n := j.Counts[s]; n > 0 {
			data.Counts = append(data.Counts, stateCount{s, n})
		}
	}
	for _, s := range slices.Sorted(maps.Keys(j.Counts)) {
		if !slices.Contains(taskStates, s) {
			data.Counts = append(data.Counts, stateCount{s, j.Counts[s]})
		}
	}
	return "job", "Job " + j.ID, "jobs", data, nil
}

// endpointRow is an endpoint or one of its variants with its bars.
type endpointRow struct {
	admit.EndpointStats
	// UtilW and TargetW are CSS widths on a 0–100% utilisation scale;
	// Over says the utilisation is above 100%, which the bar shows as
	// over (a full bar in the over colour, and the figure).
	UtilW, TargetW string
	TargetPct      float64
	Over           bool
	Rows           []variantRow
}

type variantRow struct {
	admit.VariantStats
	UtilW, TargetW string
	TargetPct      float64
	Over           bool
}

func endpointRows(stats []admit.EndpointStats) []endpointRow {
	out := make([]endpointRow, 0, len(stats))
	for _, e := range stats {
		row := endpointRow{EndpointStats: e, UtilW: percent(e.Utilization, 100), Over: e.Utilization > 100}
		if e.MaxCapacity > 0 {
			row.TargetPct = 100 * float64(e.TargetCapacity) / float64(e.MaxCapacity)
		}
		row.TargetW = percent(row.TargetPct, 100)
		for _, v := range e.Variants {
			vr := variantRow{VariantStats: v, UtilW: percent(v.Utilization, 100), Over: v.Utilization > 100}
			if v.MaxCapacity > 0 {
				vr.TargetPct = 100 * float64(v.TargetCapacity) / float64(v.MaxCapacity)
			}
			vr.TargetW = percent(vr.TargetPct, 100)
			row.Rows = append(row.Rows, vr)
		}
		out = append(out, row)
	}
	return out
}

func (d *Dashboard) endpoints(*http.Request, auth.Principal) (string, string, string, any, error) {
	return "endpoints", "Endpoints", "endpoints", endpointRows(d.ctrl.Snapshot().Endpoints), nil
}
