package control

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// Queues lists the queues with their current policy and task counts.
func (c *Controller) Queues(ctx context.Context) ([]api.Queue, error) {
	v, err := c.read(ctx, func(t *txn) (any, error) {
		out := make([]api.Queue, 0, len(c.engCfg.Queues))
		byName := make(map[string]int, len(c.engCfg.Queues))
		for i, q := range c.engCfg.Queues {
			pc := q.Policy
			if pc.Kind == "" {
				pc.Kind = policy.FIFO{}.Name() // the default, named as a user would write it
			}
			raw, _ := json.Marshal(pc)
			aq := api.Queue{Name: q.Name, Priority: q.Priority, Pool: q.Pool, Policy: raw}
			if st, ok := c.eng.PolicyReport(q.Name); ok {
				aq.Status = st
			}
			out = append(out, aq)
			byName[q.Name] = i
		}
		// One pass over the live jobs counts every queue's tasks.
		for _, lj := range c.jobs {
			i, ok := byName[lj.rec.Queue]
			if !ok {
				continue
			}
			for name := range lj.tasks {
				s, _, _ := c.eng.TaskState(lj.rec.ID, name)
				switch {
				case s == model.TaskRunning:
					out[i].Running++
				case !s.Terminal():
					out[i].Waiting++
				}
			}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]api.Queue), nil
}

// storedPolicy is the value under store.QueuePolicyKey: the policy set at
// run time and the configuration's policy of the queue it replaced, as the
// other run-time changes are stored (endpoints.go). A restart keeps Value
// only while the configuration still says Config: an operator who edited
// the queue's policy in the file since gets what they wrote.
type storedPolicy struct {
	Config json.RawMessage `json:"config"`
	Value  json.RawMessage `json:"value"`
}

// configuredPolicy is the queue's policy block as the configuration (file
// and environment) gives it, in its stored form; null for a queue it does
// not name.
func (c *Controller) configuredPolicy(queue string) json.RawMessage {
	for _, q := range c.cfg.Scheduling.Queues {
		if q.Name == queue {
			raw, _ := json.Marshal(q.Policy)
			return raw
		}
	}
	return json.RawMessage("null")
}

// SetPolicy replaces a queue's policy at run time. The change is stored with
// the configuration's policy it replaced, so it survives a restart unless
// the configuration's policy of the queue changed since.
func (c *Controller) SetPolicy(ctx context.Context, queue string, pc policy.Config) (api.Queue, error) {
	if _, err := policy.New(pc); err != nil {
		return api.Queue{}, model.FieldErrors{{Path: "policy", Msg: err.Error(), Err: err}}
	}
	_, err := c.do(ctx, func(t *txn) (any, error) {
		idx := -1
		for i, q := range c.engCfg.Queues {
			if q.Name == queue {
				idx = i
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("%w: queue %q", ErrNotFound, queue)
		}
		if err := c.eng.Apply(engine.SetPolicy{Queue: queue, Policy: pc, At: t.now}); err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.engCfg.Queues[idx].Policy = pc
		c.mu.Unlock()
		raw, _ := json.Marshal(pc)
		stored, _ := json.Marshal(storedPolicy{Config: c.configuredPolicy(queue), Value: raw})
		t.kv(store.QueuePolicyKey(queue), stored)
		t.event(EventPolicyChanged, "", "", "", model.Reason{Code: pc.Kind}, json.RawMessage(raw))
		t.changed = true
		return nil, nil
	})
	if err != nil {
		return api.Queue{}, err
	}
	qs, err := c.Queues(ctx)
	if err != nil {
		return api.Queue{}, err
	}
	for _, q := range qs {
		if q.Name == queue {
			return q, nil
		}
	}
	return api.Queue{}, fmt.Errorf("%w: queue %q", ErrNotFound, queue)
}
