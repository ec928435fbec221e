// Package scenario reads scenario files: the input of `allot plan` (one
// cycle) and `allot sim` (a run over simulated time). A scenario is the
// server's scheduling configuration plus workers, jobs and the history a
// policy depends on; docs/scenario.md defines the format field by field.
package scenario

import (
	"context"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/allot-sched/allot/internal/config"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

// DefaultStart is time zero of a scenario that does not set one. A fixed
// instant keeps output byte-identical between runs.
var DefaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// File is the document as written.
type File struct {
	spec.Scheduling `yaml:",inline"`
	// Start is time zero (RFC 3339).
	Start   string        `yaml:"start,omitempty" json:"start,omitempty"`
	Workers []spec.Worker `yaml:"workers" json:"workers"`
	Jobs    []Job         `yaml:"jobs" json:"jobs"`
	State   State         `yaml:"state,omitempty" json:"state,omitempty"`
	// InaccessibleInputs lists job inputs (URLs) that cannot be read, with
	// the reason: a job declaring one goes to the dead-letter list at its
	// submission instead of the queue.
	InaccessibleInputs map[string]string `yaml:"inaccessibleInputs,omitempty" json:"inaccessibleInputs,omitempty"`
}

// MaxJobCopies bounds the copies of one job entry (its count).
const MaxJobCopies = 100_000

// Job is a job entry: a job spec plus when it arrives, and how many copies.
type Job struct {
	spec.Job `yaml:",inline"`
	// SubmitAt is the arrival time after time zero (for `allot sim`).
	SubmitAt spec.Duration `yaml:"submitAt,omitempty" json:"submitAt,omitempty"`
	// Count repeats the job; copies are named id-0, id-1, ... Absent, the
	// entry is one job; 0 is none (the entry is still checked).
	Count *int `yaml:"count,omitempty" json:"count,omitempty"`
}

// State is the history policies depend on, per queue.
type State struct {
	Queues map[string]policy.History `yaml:"queues,omitempty" json:"queues,omitempty"`
}

// Scenario is a checked, expanded scenario.
type Scenario struct {
	Config  engine.Config
	Start   time.Time
	Workers []model.Worker
	// Jobs are ordered by arrival, then by their order in the file.
	Jobs []model.Job
	// Running lists tasks already running at time zero.
	Running []engine.RestoreRunning
	History map[string]policy.History
	// Inputs checks job inputs at submission (the scenario's
	// inaccessibleInputs); a job that fails is dead-lettered.
	Inputs admit.StaticChecker
}

// Load reads and checks a scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s:\n%w", path, err)
	}
	return s, nil
}

// Parse reads and checks a scenario document (YAML or JSON). Every problem
// is reported with its field path and line; nothing is returned on error.
func Parse(data []byte) (*Scenario, error) {
	var f File
	root, err := spec.Decode(data, &f)
	if err != nil {
		return nil, err
	}
	s, err := f.check()
	if err != nil {
		return nil, spec.WithLines(err, root)
	}
	return s, nil
}

func (f *File) check() (*Scenario, error) {
	var list model.FieldErrors
	collect := func(err error) {
		if err == nil {
			return
		}
		if l, ok := err.(model.FieldErrors); ok {
			list = append(list, l...)
		} else {
			list = append(list, &model.FieldError{Msg: err.Error()})
		}
	}
	cfg, err := config.Engine(f.Scheduling)
	collect(err)
	s := &Scenario{Config: cfg, Start: DefaultStart, History: f.State.Queues, Inputs: admit.StaticChecker(f.InaccessibleInputs)}
	if f.Start != "" {
		t, err := time.Parse(time.RFC3339, f.Start)
		if err != nil {
			list = append(list, &model.FieldError{Path: "start", Msg: fmt.Sprintf("%q is not an RFC 3339 time (like 2026-01-01T00:00:00Z)", f.Start)})
		}
		s.Start = t.UTC()
	}
	// Jobs are checked against the queues the document defines, not the
	// engine configuration: when another part of the configuration is bad
	// (an endpoint), config.Engine returns none, and every job would report
	// a queue problem it does not have.
	queueNames := []string{spec.DefaultQueue}
	policies := map[string]policy.Config{} // queue → its policy, to check its jobs
	if len(f.Queues) > 0 {
		queueNames = queueNames[:0]
		for _, q := range f.Queues {
			queueNames = append(queueNames, q.Name)
			policies[q.Name] = q.Policy
		}
	}
	queues := map[string]bool{}
	for _, name := range queueNames {
		queues[name] = true
	}
	for name := range f.State.Queues {
		if !queues[name] {
			list = append(list, &model.FieldError{Path: "state.queues." + name, Msg: fmt.Sprintf("no queue %q is defined", name)})
		}
	}
	names := map[string]string{}
	for i, w := range f.Workers {
		path := fmt.Sprintf("workers[%d]", i)
		ws, err := w.Expand(path, s.Start)
		collect(err)
		for _, mw := range ws {
			if prev, dup := names[mw.Name]; dup {
				list = append(list, &model.FieldError{Path: path + ".name", Msg: fmt.Sprintf("worker %q is already defined at %s", mw.Name, prev)})
				break
			}
			names[mw.Name] = path
		}
		s.Workers = append(s.Workers, ws...)
	}
	ids := map[string]string{}
	for i, j := range f.Jobs {
		path := fmt.Sprintf("jobs[%d]", i)
		count := 1
		if j.Count != nil {
			count = *j.Count
		}
		switch {
		case count < 0:
			list = append(list, &model.FieldError{Path: path + ".count", Msg: "must not be negative"})
			continue
		case count > MaxJobCopies:
			list = append(list, &model.FieldError{Path: path + ".count", Msg: fmt.Sprintf("must be at most %d (got %d)", MaxJobCopies, count)})
			continue
		}
		if j.Queue == "" && len(queueNames) == 1 {
			j.Queue = queueNames[0]
		}
		switch {
		case j.Queue == "":
			list = append(list, &model.FieldError{Path: path + ".queue", Msg: "required when the scenario has several queues"})
		case !queues[j.Queue]:
			list = append(list, &model.FieldError{Path: path + ".queue", Msg: fmt.Sprintf("no queue %q is defined", j.Queue)})
		}
		if j.ID == "" {
			j.ID = fmt.Sprintf("job-%d", i+1)
		}
		ex, err := j.Expand(path, s.Start.Add(time.Duration(j.SubmitAt)))
		if err != nil {
			collect(err)
			continue
		}
		if err := f.CheckJobEndpoint(path, ex.Job); err != nil {
			collect(err)
			continue
		}
		// The queue's policy refuses what a server would refuse at
		// submission (a priority outside its levels, an unknown SLA group,
		// a share with a '*').
		if pc, ok := policies[j.Queue]; ok {
			if err := policy.CheckJob(pc, &ex.Job); err != nil {
				list = append(list, model.FieldErrorOf(path, err))
				continue
			}
		}
		if len(ex.Running) > 0 && s.DeadLetter(ex.Job) != "" {
			list = append(list, &model.FieldError{Path: path + ".inputs", Msg: "the job has running tasks, but an input is inaccessible: it would be dead-lettered"})
			continue
		}
		copies := expandIDs(j.ID, count)
		for _, id := range copies {
			if prev, dup := ids[id]; dup {
				list = append(list, &model.FieldError{Path: path + ".id", Msg: fmt.Sprintf("job %q is already defined at %s", id, prev)})
				break
			}
			ids[id] = path
			job := ex.Job
			job.ID = id
			s.Jobs = append(s.Jobs, job)
			for _, r := range ex.Running {
				s.Running = append(s.Running, engine.RestoreRunning{Job: id, Task: r.Name, Started: s.Start.Add(-r.For)})
			}
		}
	}
	if len(list) > 0 {
		return nil, list
	}
	sort.SliceStable(s.Jobs, func(a, b int) bool { return s.Jobs[a].Submitted.Before(s.Jobs[b].Submitted) })
	return s, nil
}

func expandIDs(id string, count int) []string {
	if count == 0 {
		return nil
	}
	if count == 1 {
		return []string{id}
	}
	width := len(fmt.Sprint(count - 1))
	out := make([]string, count)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%0*d", id, width, i)
	}
	return out
}

// Engine builds an engine in the scenario's state at time zero: workers
// registered, every job submitted (arrival times are ignored: `allot plan`
// looks at one instant), running tasks restored, history handed to the
// policies.
func (s *Scenario) Engine() (*engine.Engine, error) {
	e, err := engine.New(s.Config)
	if err != nil {
		return nil, err
	}
	for _, w := range s.Workers {
		if err := e.Apply(engine.AddWorker{Worker: w, At: s.Start}); err != nil {
			return nil, err
		}
	}
	for _, j := range s.Jobs {
		j.Submitted = s.Start
		var ev engine.Event = engine.SubmitJob{Job: j}
		if why := s.DeadLetter(j); why != "" {
			ev = engine.DeadLetter{Job: j, Reason: why, At: s.Start}
		}
		if err := e.Apply(ev); err != nil {
			return nil, err
		}
	}
	for _, r := range s.Running {
		if err := e.Apply(r); err != nil {
			return nil, err
		}
	}
	for _, q := range sortedKeys(s.History) {
		if err := e.Apply(engine.SetHistory{Queue: q, History: s.History[q], At: s.Start}); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// DeadLetter checks j's inputs, as the control plane does at submission,
// and returns why j goes to the dead-letter list, or "".
func (s *Scenario) DeadLetter(j model.Job) string {
	if err := admit.CheckInputs(context.Background(), s.Inputs, j.Inputs); err != nil {
		return err.Error()
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
