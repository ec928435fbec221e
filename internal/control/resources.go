package control

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// EventResourcesChanged records a pending job's new resources.
const EventResourcesChanged = "resources_changed"

// SetResources changes what every task of a pending job (none of its tasks
// has started) asks for: the fields the change names replace each task's
// own (engine.SetJobResources). The job keeps its place; the stored spec
// carries the new requests, so a restart keeps them.
func (c *Controller) SetResources(ctx context.Context, id string, ch api.ResourcesChange) (api.Job, error) {
	if ch.Empty() {
		return api.Job{}, model.FieldErrors{{Path: "", Msg: "name at least one of cpu, memory, gpus, gpuMemory"}}
	}
	_, err := c.do(ctx, func(t *txn) (any, error) {
		lj, ok := c.jobs[id]
		if !ok {
			return nil, c.missingOrEnded(ctx, id)
		}
		if lj.rec.State != "pending" {
			return nil, fmt.Errorf("%w: job %q is %s: only a pending job (no task started yet) changes its resources", ErrConflict, id, lj.rec.State)
		}
		changed := lj.spec
		changed.Tasks = append([]spec.Task(nil), lj.spec.Tasks...)
		for i := range changed.Tasks {
			r := &changed.Tasks[i].Resources
			if ch.CPU != nil {
				r.CPU = *ch.CPU
			}
			if ch.Memory != nil {
				r.Memory = *ch.Memory
			}
			if ch.GPUs != nil {
				r.GPUs = *ch.GPUs
			}
			if ch.GPUMemory != nil {
				r.GPUMemory = *ch.GPUMemory
			}
		}
		ex, err := changed.Expand("", lj.rec.Submitted) // the submission's checks of the new requests
		if err != nil {
			return nil, err
		}
		if len(ex.Job.Tasks) != len(lj.model.Tasks) {
			return nil, fmt.Errorf("job %q: the changed spec expands to %d tasks, not %d", id, len(ex.Job.Tasks), len(lj.model.Tasks))
		}
		res := make([]model.Resources, len(ex.Job.Tasks))
		for i, mt := range ex.Job.Tasks {
			res[i] = mt.Resources
		}
		if err := c.eng.Apply(engine.SetJobResources{Job: id, Resources: res}); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConflict, err)
		}
		raw, err := json.Marshal(changed)
		if err != nil {
			return nil, err
		}
		// In place: lj.entry points into lj.spec.Tasks.
		for i := range lj.spec.Tasks {
			lj.spec.Tasks[i].Resources = changed.Tasks[i].Resources
		}
		for i := range lj.model.Tasks {
			lj.model.Tasks[i].Resources = res[i]
		}
		lj.rec.Spec = raw
		if t.created == nil {
			t.created = map[*store.Job]bool{}
		}
		t.created[&lj.rec] = true // its spec is written, as a new job's is
		t.touchJob(&lj.rec)
		t.event(EventResourcesChanged, id, "", "", model.Reason{}, ch)
		t.changed = true
		return nil, nil
	})
	if err != nil {
		return api.Job{}, err
	}
	return c.Job(ctx, id)
}
