package engine

import (
	"fmt"
	"strings"

	"github.com/allot-sched/allot/internal/model"
)

// Dependency is a parent task not yet succeeded.
type Dependency struct {
	Task   string          `json:"task"`
	State  model.TaskState `json:"state"`
	Worker string          `json:"worker,omitempty"`
}

// blockedGroups groups the job's blocked tasks: all of them when the job
// waits for admission, else by the set of parents they wait for.
func (e *Engine) blockedGroups(j *job) []PendingExplain {
	var blocked []*task
	for _, t := range j.tasks {
		if t.state == model.TaskBlocked {
			blocked = append(blocked, t)
		}
	}
	if len(blocked) == 0 {
		return nil
	}
	if !j.admitted {
		return []PendingExplain{{State: model.TaskBlocked, Tasks: len(blocked), Examples: examples(blocked), Reason: e.admissionReason(j)}}
	}
	type set struct {
		key   string
		tasks []*task
		deps  []Dependency
	}
	var sets []*set
	byKey := map[string]*set{}
	for _, t := range blocked {
		var names []string
		var deps []Dependency
		for _, need := range t.spec.Needs {
			p := j.byName[need]
			if p.state == model.TaskSucceeded {
				continue
			}
			names = append(names, need)
			d := Dependency{Task: need, State: p.state}
			if p.worker != nil {
				d.Worker = p.worker.Spec.Name
			}
			deps = append(deps, d)
		}
		key := strings.Join(names, "\x00")
		s, ok := byKey[key]
		if !ok {
			s = &set{key: key, deps: deps}
			byKey[key] = s
			sets = append(sets, s)
		}
		s.tasks = append(s.tasks, t)
	}
	out := make([]PendingExplain, 0, len(sets))
	for _, s := range sets {
		out = append(out, PendingExplain{State: model.TaskBlocked, Tasks: len(s.tasks), Examples: examples(s.tasks),
			Reason: e.blockedReason(s.tasks[0]), Dependencies: s.deps})
	}
	return out
}

// dependencyHelp names the parents to wait for, or to fix when one failed.
func dependencyHelp(ps []PendingExplain) []Help {
	var out []Help
	seen := map[string]bool{}
	for _, p := range ps {
		for _, d := range p.Dependencies {
			if seen[d.Task] {
				continue
			}
			seen[d.Task] = true
			switch d.State {
			case model.TaskRunning:
				out = append(out, Help{Kind: "dependency", Message: fmt.Sprintf("parent task %s is running on %s: its children start when it succeeds", d.Task, d.Worker)})
			case model.TaskReady, model.TaskBlocked:
				out = append(out, Help{Kind: "dependency", Message: fmt.Sprintf("parent task %s is %s itself: see its own entry", d.Task, d.State)})
			}
			if len(out) >= maxAhead {
				return out
			}
		}
	}
	return out
}
