package engine

import (
	"fmt"

	"github.com/allot-sched/allot/internal/model"
)

// Dependencies between jobs (Slurm's --dependency). A job that depends on
// other jobs is held before admission until every dependency is met: its
// tasks stay blocked with a waiting_dependency reason that names the job
// it waits for. The engine learns what the other jobs do from its own
// events: a job starts when a task of it starts (or is restored as having
// run), and ends in end. A job the engine does not hold (it ended and was
// forgotten, or waits on the dead-letter list) is described by the caller
// in SubmitJob.Others, so the state is rebuilt exactly after a restart.
// A dependency that can never be met (afterok on a job that failed) fails
// every task of the waiting job with a dependency_failure reason naming the
// other job; that end in turn settles the jobs that wait for this one.

// OtherJob is what the caller knows of a job another one depends on when
// the engine does not hold it: whether it started and how it ended ("" for
// a job that has not ended, such as one on the dead-letter list).
type OtherJob struct {
	Job     string
	Started bool
	Ended   model.TaskState
}

// jobWait is one unmet dependency of a job on another.
type jobWait struct {
	child *job
	typ   model.DependencyType
}

// jobState is the end state of an ended job: failed if a task failed, else
// cancelled if one was cancelled, else succeeded.
func (j *job) endState() model.TaskState {
	if j.failed {
		return model.TaskFailed
	}
	for _, t := range j.tasks {
		if t.state == model.TaskCancelled {
			return model.TaskCancelled
		}
	}
	return model.TaskSucceeded
}

// dependency is the outcome of checking one dependency at submission.
type dependency struct {
	dep      model.JobDependency
	met      bool
	possible bool
	ended    model.TaskState
}

// checkDependencies resolves spec's dependencies against the jobs the
// engine holds and others, before the job is committed: an unknown job is
// refused.
func (e *Engine) checkDependencies(spec *model.Job, others []OtherJob) ([]dependency, error) {
	if len(spec.DependsOn) == 0 {
		return nil, nil
	}
	out := make([]dependency, len(spec.DependsOn))
	for i, d := range spec.DependsOn {
		if d.Type == "" {
			d.Type = model.AfterOK
		}
		if !d.Type.Known() {
			return nil, fmt.Errorf("job %q: dependsOn[%d].type: %w dependency type %q", spec.ID, i, ErrInvalid, d.Type)
		}
		if d.Job == spec.ID {
			return nil, fmt.Errorf("job %q: dependsOn[%d].job: %w: a job cannot depend on itself", spec.ID, i, ErrInvalid)
		}
		started, ended, known := false, model.TaskState(""), false
		if p, ok := e.jobs[d.Job]; ok {
			started, known = p.started, true
			if p.done {
				ended = p.endState()
			}
		} else {
			for _, o := range others {
				if o.Job == d.Job {
					started, ended, known = o.Started, o.Ended, true
					break
				}
			}
		}
		if !known {
			return nil, fmt.Errorf("job %q: dependsOn[%d].job: %w %q", spec.ID, i, ErrUnknownJob, d.Job)
		}
		met, possible := d.Type.Met(started, ended)
		out[i] = dependency{dep: d, met: met, possible: possible, ended: ended}
	}
	return out, nil
}

// holdForDependencies applies the resolved dependencies of a job just
// committed. It reports whether the job may go on to admission now; a
// dependency that cannot be met has failed the job.
func (e *Engine) holdForDependencies(j *job, deps []dependency) bool {
	for _, d := range deps {
		if !d.possible {
			e.failDependent(j, d.dep.Job, d.dep.Type, d.ended)
			return false
		}
	}
	for _, d := range deps {
		if d.met {
			continue
		}
		j.waitingJobs++
		if e.dependents == nil {
			e.dependents = map[string][]jobWait{}
		}
		e.dependents[d.dep.Job] = append(e.dependents[d.dep.Job], jobWait{child: j, typ: d.dep.Type})
	}
	if j.waitingJobs == 0 {
		return true
	}
	j.admitReason = e.waitingReason(j)
	return false
}

// waitingReason names the first job j still waits for.
func (e *Engine) waitingReason(j *job) model.Reason {
	for _, d := range j.spec.DependsOn {
		for _, w := range e.dependents[d.Job] {
			if w.child == j {
				return model.Because(model.ReasonWaitingDependency, "job %q waits for job %q to %s (%s)",
					j.id, d.Job, w.typ.Wants(), w.typ)
			}
		}
	}
	return model.Because(model.ReasonWaitingDependency, "job %q waits for the jobs it depends on", j.id)
}

// jobEnded settles every dependency on j, which just ended.
func (e *Engine) jobEnded(j *job) {
	if len(e.dependents[j.id]) > 0 {
		e.settle(j.id, j.started, j.endState())
	}
}

// settle re-checks the jobs waiting for job id after it started or ended:
// those whose dependency is met go on to admission once nothing else
// holds them, those whose dependency can no longer be met fail. The
// waiting jobs are visited in the order they were submitted.
func (e *Engine) settle(id string, started bool, ended model.TaskState) {
	waits := e.dependents[id]
	var keep []jobWait
	for _, w := range waits {
		c := w.child
		if c.done {
			continue
		}
		met, possible := w.typ.Met(started, ended)
		switch {
		case !possible:
			e.failDependent(c, id, w.typ, ended)
		case met:
			c.waitingJobs--
			if c.waitingJobs == 0 {
				c.admitReason = model.Reason{}
				if c.held == "" || c.spec.Endpoint == "" {
					// A held endpoint job joins admission when
					// released (unhold): held, it takes no
					// endpoint capacity.
					e.enqueue(c)
				}
				e.tally(c)
			}
		default:
			keep = append(keep, w)
		}
	}
	if len(keep) == 0 {
		delete(e.dependents, id)
	} else {
		e.dependents[id] = keep
	}
	// Jobs that failed here settled their own dependents in end.
	for _, w := range waits {
		if !w.child.done && w.child.waitingJobs > 0 {
			w.child.admitReason = e.waitingReason(w.child)
		}
	}
}

// failDependent ends every task of j that has not ended as failed: j
// depends on job parent in a way parent can no longer meet.
func (e *Engine) failDependent(j *job, parent string, typ model.DependencyType, ended model.TaskState) {
	j.waitingJobs = 0
	r := model.Because(model.ReasonDependencyFailure, "job %q %s; job %q needed it to %s (%s)",
		parent, endedWords(ended), j.id, typ.Wants(), typ)
	for _, t := range j.tasks {
		if t.state.Terminal() || t.state == model.TaskRunning {
			continue
		}
		e.dropWaiting(t)
		e.end(t, model.TaskFailed, r, "")
	}
}

func endedWords(s model.TaskState) string {
	switch s {
	case model.TaskSucceeded:
		return "succeeded"
	case model.TaskCancelled:
		return "was cancelled"
	}
	return "failed"
}

// JobWaitsFor lists the dependencies of a job that are not met yet, in
// the order the job names them; nil for a job that waits for no other job
// or that the engine does not hold.
func (e *Engine) JobWaitsFor(id string) []model.JobDependency {
	j, ok := e.jobs[id]
	if !ok || j.done || j.waitingJobs == 0 {
		return nil
	}
	var out []model.JobDependency
	for _, d := range j.spec.DependsOn {
		for _, w := range e.dependents[d.Job] {
			if w.child == j {
				out = append(out, model.JobDependency{Job: d.Job, Type: w.typ})
				break
			}
		}
	}
	return out
}

// settleStarted settles the after dependencies on the jobs that started
// since the last cycle. It runs after a cycle's allocation, not inside it,
// so that a job a start frees joins admission between cycles.
func (e *Engine) settleStarted() {
	for len(e.startedJobs) > 0 {
		started := e.startedJobs
		e.startedJobs = nil
		for _, j := range started {
			if len(e.dependents[j.id]) > 0 {
				e.settle(j.id, true, "")
			}
		}
	}
}

// jobDependencyHelp says, for each job j still waits for, what that job is
// doing: explain's "what would help" for a job held by its dependencies.
func (e *Engine) jobDependencyHelp(j *job) []Help {
	var out []Help
	for _, d := range e.JobWaitsFor(j.id) {
		doing := "is not held by the scheduler (it waits on the dead-letter list: redrive it)"
		if p, ok := e.jobs[d.Job]; ok {
			switch {
			case p.running > 0:
				doing = fmt.Sprintf("runs %d task(s)", p.running)
			case p.started:
				doing = "has started and waits to run more"
			default:
				doing = "has not started: see its own explanation"
			}
		}
		out = append(out, Help{Kind: "job_dependency", Message: fmt.Sprintf("job %s %s; job %s waits for it to %s (%s)",
			d.Job, doing, j.id, d.Type.Wants(), d.Type)})
		if len(out) >= maxAhead {
			break
		}
	}
	return out
}
