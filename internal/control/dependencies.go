package control

import (
	"context"
	"errors"
	"fmt"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// otherJobs describes to the engine the jobs a job depends on that the
// engine does not hold: those that ended (and were forgotten) as the store
// has them, and those on the dead-letter list as not started. A job it
// depends on that does not exist refuses the job, naming the field. It
// runs on the loop, which owns the live jobs; the store is read only for a
// job that depends on one no longer live.
func (c *Controller) otherJobs(ctx context.Context, deps []model.JobDependency) ([]engine.OtherJob, error) {
	var out []engine.OtherJob
	for i, d := range deps {
		if _, live := c.jobs[d.Job]; live {
			continue
		}
		if _, dead := c.eng.DeadLettered(d.Job); dead {
			out = append(out, engine.OtherJob{Job: d.Job})
			continue
		}
		j, err := c.st.JobHeader(ctx, d.Job)
		if errors.Is(err, store.ErrNotFound) {
			return nil, model.FieldErrors{{Path: fmt.Sprintf("dependsOn[%d].job", i),
				Msg: fmt.Sprintf("no job %q to depend on", d.Job), Err: ErrInvalid}}
		}
		if err != nil {
			return nil, storeFailure{err}
		}
		o := engine.OtherJob{Job: d.Job}
		if store.JobEnded(j.State) {
			o.Ended, o.Started = model.TaskState(j.State), j.State != store.JobCancelled
		}
		out = append(out, o)
	}
	return out, nil
}

// dependencyView lists a job's dependencies for the API; live says the
// engine holds the job, so each is waiting or met.
func (c *Controller) dependencyView(id string, deps []model.JobDependency, live bool) []api.JobDependency {
	if len(deps) == 0 {
		return nil
	}
	waiting := map[string]bool{}
	if live {
		for _, w := range c.eng.JobWaitsFor(id) {
			waiting[w.Job] = true
		}
	}
	out := make([]api.JobDependency, len(deps))
	for i, d := range deps {
		out[i] = api.JobDependency{Job: d.Job, Type: d.Type}
		switch {
		case !live:
		case waiting[d.Job]:
			out[i].State = "waiting"
		default:
			out[i].State = "met"
		}
	}
	return out
}

// startedJob reports whether a stored job has started: a task of it ran.
func startedJob(j store.Job, recs []store.Task) bool {
	if j.State != "pending" {
		return true
	}
	for _, r := range recs {
		if r.Attempt > 0 {
			return true
		}
	}
	return false
}
