package control

import (
	"context"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// WorkerTask is a task running on a worker, with what it holds of the
// worker: the dashboard's workers page shows them and sums the allocation.
type WorkerTask struct {
	Job, Task string
	Attempt   int
	Started   time.Time
	Resources model.Resources
}

// RunningTasks returns, per worker, the tasks it runs in job and spec
// order. It takes one loop round and walks the running tasks only.
func (c *Controller) RunningTasks(ctx context.Context) (map[string][]WorkerTask, error) {
	v, err := c.read(ctx, func(*txn) (any, error) {
		out := make(map[string][]WorkerTask, len(c.running))
		for worker := range c.running {
			for _, rec := range c.runningOn(worker) {
				wt := WorkerTask{Job: rec.Job, Task: rec.Name, Attempt: rec.Attempt, Started: rec.Started}
				if lj, ok := c.jobs[rec.Job]; ok && rec.Index < len(lj.model.Tasks) && lj.model.Tasks[rec.Index].Name == rec.Name {
					wt.Resources = lj.model.Tasks[rec.Index].Resources
				}
				out[worker] = append(out[worker], wt)
			}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(map[string][]WorkerTask), nil
}

// TaskCounts counts the tasks of the live jobs ids by state, as GET
// /v1/jobs/{id} does; an ended or unknown job is left out. The jobs list
// reads the store, which keeps no counts: the dashboard asks for those of
// the jobs it shows, in one loop round.
func (c *Controller) TaskCounts(ctx context.Context, ids []string) (map[string]map[string]int, error) {
	v, err := c.read(ctx, func(*txn) (any, error) {
		out := make(map[string]map[string]int, len(ids))
		for _, id := range ids {
			if lj, ok := c.jobs[id]; ok {
				out[id] = c.view(lj, false).Counts
			}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(map[string]map[string]int), nil
}
