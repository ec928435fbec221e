package control

import (
	"context"
	"sort"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/admit"
)

// Snapshot is what the scheduling loop last decided, published after every
// round that ran a cycle. Readers that poll often (the dashboard, the
// metrics scrape, the endpoints listing) take it without a loop round, so
// looking at the scheduler does not slow it down. It is never modified
// after it is published.
type Snapshot struct {
	At time.Time `json:"at"`
	// Groups summarises every active group of every queue after the last
	// cycle: running and waiting tasks, and the policy's target.
	Groups []engine.GroupSummary `json:"groups"`
	// Pending counts the waiting tasks and their jobs, and the tasks per
	// reason code. The reasons of one job are a loop round away
	// (Controller.PendingOf): listing every waiting job each cycle would
	// cost time in proportion to the backlog.
	Pending engine.PendingSummary `json:"pending"`
	// Endpoints are the scheduling metrics of every endpoint and variant.
	Endpoints []admit.EndpointStats `json:"endpoints"`
	// Workers counts the registered workers by state (ready, draining,
	// disabled, lost).
	Workers map[string]int `json:"workers"`
	// ReadyTasks is the length of the ready queue over all queues.
	ReadyTasks int `json:"readyTasks"`
	// LiveTasks counts the tasks of the unfinished jobs, what
	// server.limits.maxLiveTasks bounds (livetasks.go).
	LiveTasks int `json:"liveTasks"`
	// History holds one sample of the groups' running slots against their
	// targets per HistoryEvery, the newest last, at most HistoryLen; its
	// groups are those of GroupPoints.
	History []HistoryPoint `json:"history"`
	// JobQueues are the queues whose policy makes every job its own group
	// (priority, sla).
	JobQueues map[string]bool `json:"jobQueues,omitempty"`
}

// JobsGroup names the one group that GroupPoints folds the per-job groups of
// a queue in JobQueues into.
const JobsGroup = "(jobs)"

// GroupPoints returns the groups sorted by queue and group, the groups of a
// queue in JobQueues folded into one point named JobsGroup (the sum of their
// slots, waiting tasks and targets). The history and the metrics show
// these: one series per job would grow with the jobs run, not with the
// configuration, in memory and in the metrics' label sets.
func (s *Snapshot) GroupPoints() []GroupPoint {
	out := make([]GroupPoint, 0, len(s.Groups))
	folded := map[string]int{} // queue -> index in out
	for _, g := range s.Groups {
		p := GroupPoint{Queue: g.Queue, Group: g.Group, Running: g.Running, Waiting: g.Waiting, Target: g.Target}
		if !s.JobQueues[g.Queue] {
			out = append(out, p)
			continue
		}
		i, ok := folded[g.Queue]
		if !ok {
			folded[g.Queue] = len(out)
			p.Group = JobsGroup
			out = append(out, p)
			continue
		}
		f := &out[i]
		f.Running += g.Running
		f.Waiting += g.Waiting
		if g.Target >= 0 {
			f.Target = max(f.Target, 0) + g.Target
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Queue != b.Queue {
			return a.Queue < b.Queue
		}
		return a.Group < b.Group
	})
	return out
}

// HistoryPoint is the groups' running slots and targets at one time.
type HistoryPoint struct {
	At     time.Time    `json:"at"`
	Groups []GroupPoint `json:"groups"`
}

// GroupPoint is one group's running slots and target in a HistoryPoint.
type GroupPoint struct {
	Queue   string `json:"queue"`
	Group   string `json:"group"`
	Running int    `json:"running"`
	Waiting int    `json:"waiting"`
	// Target is the policy's target slot count, -1 when it sets none.
	Target int `json:"target"`
}

// HistoryEvery and HistoryLen bound the snapshot's history: one sample
// every 5 s for an hour.
const (
	HistoryEvery = 5 * time.Second
	HistoryLen   = 720
)

// Snapshot returns the last published snapshot; before the first cycle it
// is empty but for its time.
func (c *Controller) Snapshot() *Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap == nil {
		return &Snapshot{At: c.cfg.Clock().UTC(), Workers: map[string]int{}, Pending: engine.PendingSummary{ByReason: []engine.ReasonCount{}}}
	}
	return c.snap
}

// publish builds the snapshot from the round's last cycle. It runs on the
// loop, which owns the engine and the worker records.
func (c *Controller) publish(t *txn, d *engine.Decisions) {
	now := t.now
	s := &Snapshot{At: now, Groups: d.Groups, Pending: c.eng.PendingSummary(), Endpoints: c.eng.EndpointStats(),
		Workers: c.workerCounts(t), ReadyTasks: c.eng.ReadyTasks(), LiveTasks: c.live.total}
	if s.Groups == nil {
		s.Groups = []engine.GroupSummary{}
	}
	for _, g := range d.Groups {
		// A group named after a live job of its queue is that job: the
		// queue's policy groups by job.
		if lj, ok := c.jobs[g.Group]; ok && lj.rec.Queue == g.Queue {
			if s.JobQueues == nil {
				s.JobQueues = map[string]bool{}
			}
			s.JobQueues[g.Queue] = true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var hist []HistoryPoint
	if c.snap != nil {
		hist = c.snap.History
	}
	if n := len(hist); n == 0 || now.Sub(hist[n-1].At) >= HistoryEvery {
		p := HistoryPoint{At: now, Groups: s.GroupPoints()}
		// A new slice each time: readers hold the old one.
		start := max(0, len(hist)+1-HistoryLen)
		next := make([]HistoryPoint, 0, len(hist)-start+1)
		hist = append(append(next, hist[start:]...), p)
	}
	s.History = hist
	c.snap = s
}

// workerCounts counts the workers by state, or keeps the last snapshot's
// counts when no worker came, left or changed state in this round (each of
// those appends an event): the walk over every worker stays off the common
// round. Published counts are never modified, so snapshots may share them.
func (c *Controller) workerCounts(t *txn) map[string]int {
	if prev := c.snap; prev != nil { // only the loop writes c.snap
		changed := false
		for i := range t.batch.Events {
			switch t.batch.Events[i].Kind {
			case EventWorkerRegistered, EventWorkerLost, EventWorkerState:
				changed = true
			}
		}
		if !changed {
			return prev.Workers
		}
	}
	counts := make(map[string]int, 4)
	for _, lw := range c.workers {
		counts[lw.rec.State]++
	}
	return counts
}

// PendingOf gives, for each of the live jobs ids, why its waiting tasks are
// not running, as of the last cycle: the entries the engine's list of
// waiting jobs would hold for it. Jobs without waiting tasks, ended or
// unknown ones have none. One loop round answers for all of them, so a
// page of jobs costs one round and the jobs it shows, not the backlog.
func (c *Controller) PendingOf(ctx context.Context, ids []string) (map[string][]engine.Pending, error) {
	v, err := c.read(ctx, func(*txn) (any, error) {
		out := make(map[string][]engine.Pending, len(ids))
		for _, id := range ids {
			if _, live := c.jobs[id]; !live {
				continue
			}
			if ps := c.eng.PendingOf(id); len(ps) > 0 {
				out[id] = ps
			}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(map[string][]engine.Pending), nil
}
