package engine

import (
	"fmt"

	"github.com/allot-sched/allot/internal/model"
)

// SetJobResources changes what each task of a job that has not started
// asks for (allot update --cpu …, Slurm's scontrol update): Resources holds
// one request per task, in the job's task order. The job keeps its place;
// its tasks are placed by the new requests from the next cycle on. A job
// with a task that runs or has ended is refused: its running attempts hold
// what they asked for.
type SetJobResources struct {
	Job       string
	Resources []model.Resources
}

func (SetJobResources) event() {}

func (e *Engine) setJobResources(ev SetJobResources) error {
	j, ok := e.jobs[ev.Job]
	if !ok || j.done {
		return fmt.Errorf("%w %q", ErrUnknownJob, ev.Job)
	}
	if len(ev.Resources) != len(j.tasks) {
		return fmt.Errorf("job %q: resources: %w: %d requests for %d tasks", ev.Job, ErrInvalid, len(ev.Resources), len(j.tasks))
	}
	for _, t := range j.tasks {
		if t.state != model.TaskReady && t.state != model.TaskBlocked {
			return fmt.Errorf("job %q: %w: task %q is %s; only a job none of whose tasks has started or ended changes its resources",
				ev.Job, ErrInvalid, t.spec.Name, t.state)
		}
	}
	sel, ok := j.q.pool.Merge(j.spec.Selector)
	if !ok { // it merged at submission
		return fmt.Errorf("job %q: selector: %w: contradicts the pool of queue %q", ev.Job, ErrInvalid, j.q.name)
	}
	for i, t := range j.tasks {
		t.spec.Resources = ev.Resources[i]
		if t.shape == nil || t.shape.Req != t.spec.Resources {
			t.shape = e.fleet.Shape(t.spec.Resources, sel)
		}
	}
	j.ready.setHead()
	e.tally(j) // the waiting tasks are counted by their head task's shape
	return nil
}
