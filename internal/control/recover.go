package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// recover rebuilds the engine from the store: policies changed at run time,
// workers, then every unfinished job with its tasks in the state recorded.
// A task recorded as running stays running on its worker: the worker's next
// heartbeat, lease request or report is told to register again, and its
// registration lists what it still runs, so the server keeps, stops or
// requeues each attempt (reconcile). A worker that does not come back
// within the heartbeat timeout is declared lost and its tasks requeued; a
// task recorded on a worker that is unknown or lost is requeued at once.
//
// A row that cannot be read back (written by a bug of an older version,
// edited by hand, refused by today's checks) does not stop the start: it
// is quarantined (quarantine.go). Only a store that cannot be read at all
// is an error.
func (c *Controller) recover(ctx context.Context) error {
	now := c.cfg.Clock().UTC()
	q := &quarantine{c: c, now: now}
	if err := c.recoverPolicies(ctx, q, now); err != nil {
		return err
	}
	ra, err := c.recoverAdmission(ctx, now, q) // endpoints and throttling changed at run time (endpoints.go)
	if err != nil {
		return err
	}
	for _, f := range c.onRecover { // the features' own settings (features.go)
		if err := f.Recover(ctx, recovery{c: c, q: q}); err != nil {
			return err
		}
	}
	workers, err := c.st.Workers(ctx)
	if err != nil {
		return err
	}
	for _, w := range workers {
		if err := c.recoverWorker(w, now); err != nil {
			q.worker(w, err)
		}
	}
	jobs, tasks, err := c.st.Unfinished(ctx)
	if err != nil {
		return err
	}
	if err := c.checkQueuesOf(jobs); err != nil {
		return err
	}
	for _, j := range jobs {
		err := c.recoverJob(ra, j, tasks[j.ID], now)
		var sf storeFailure
		if errors.As(err, &sf) {
			return fmt.Errorf("stored job %q: %w", j.ID, sf.err)
		}
		if err != nil {
			q.job(j, tasks[j.ID], err)
		}
	}
	if err := ra.finish(); err != nil {
		return err
	}
	if err := c.recoverHolds(ctx, q); err != nil {
		return err
	}
	return q.commit(ctx)
}

// checkQueuesOf refuses a start whose configuration lacks the queue of a
// stored, unfinished job. Such a job is readable, and its queue was only
// left out of this start's configuration (a forgotten --config, a renamed
// queue): quarantining it would fail acknowledged work for good, so the
// operator is told which queues to put back instead. To retire a queue,
// cancel its jobs first.
func (c *Controller) checkQueuesOf(jobs []store.Job) error {
	known := make(map[string]bool, len(c.engCfg.Queues))
	for _, q := range c.engCfg.Queues {
		known[q.Name] = true
	}
	missing := map[string]int{}
	for _, j := range jobs {
		if j.Queue != "" && !known[j.Queue] {
			missing[j.Queue]++
		}
	}
	if len(missing) == 0 {
		return nil
	}
	names := slices.Sorted(maps.Keys(missing))
	parts := make([]string, len(names))
	for i, n := range names {
		jobs := "jobs"
		if missing[n] == 1 {
			jobs = "job"
		}
		parts[i] = fmt.Sprintf("%q (%d unfinished %s)", n, missing[n], jobs)
	}
	return fmt.Errorf("the store has unfinished jobs in queues this configuration does not define: %s; "+
		"start with the configuration that defines them (--config), or, to retire a queue, cancel its jobs first",
		strings.Join(parts, ", "))
}

// recoverPolicies applies the policies changed at run time, each while the
// configuration's policy of its queue is still the one it replaced (else
// the file wins, as for endpoints and throttling), and logs which policy
// each such queue gets and why. One that cannot be read or applied is
// quarantined and the configured one stays.
func (c *Controller) recoverPolicies(ctx context.Context, q *quarantine, now time.Time) error {
	for i, qc := range c.engCfg.Queues {
		key := store.QueuePolicyKey(qc.Name)
		raw, err := c.st.KV(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		value, replaced, err := readStoredPolicy(raw)
		if err != nil {
			q.setting(key, raw, err)
			continue
		}
		switch file := c.configuredPolicy(qc.Name); {
		case replaced == nil:
			c.cfg.Logger.Info("queue policy: the policy set at run time is used instead of the configuration's; "+
				"it was stored without the configuration's policy it replaced, so an edit of the file since is not seen; "+
				"to go back to the file's policy, set it again at run time (allot queues set-policy)",
				"queue", qc.Name, "policy", string(value))
		case !bytes.Equal(compactJSON(replaced), compactJSON(file)):
			c.cfg.Logger.Info("queue policy: the configuration's policy is used: it changed since the policy was set at run time, "+
				"so the file wins", "queue", qc.Name, "runtime", string(value), "config", string(file))
			continue
		default:
			c.cfg.Logger.Info("queue policy: the policy set at run time is used instead of the configuration's, "+
				"which is unchanged since; edit the queue's policy in the file (the file then wins) or set it again to change it",
				"queue", qc.Name, "policy", string(value))
		}
		var pc policy.Config
		if err := json.Unmarshal(value, &pc); err != nil {
			q.setting(key, raw, err)
			continue
		}
		if err := c.eng.Apply(engine.SetPolicy{Queue: qc.Name, Policy: pc, At: now}); err != nil {
			q.setting(key, raw, err)
			continue
		}
		// What the queue lists, explain's copy builds and the stored
		// history is checked against is the policy in force.
		c.engCfg.Queues[i].Policy = pc
	}
	return nil
}

// readStoredPolicy reads the value under store.QueuePolicyKey: the policy
// set at run time, and the configuration's policy it replaced (nil for a
// value stored as the bare policy block, before the replaced one was kept).
func readStoredPolicy(raw []byte) (value, replaced json.RawMessage, err error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, nil, err
	}
	v, hasValue := fields["value"]
	cfg, hasConfig := fields["config"]
	if !hasValue || !hasConfig {
		return raw, nil, nil // the bare block
	}
	return v, cfg, nil
}

// compactJSON is b without insignificant space, for comparing stored forms.
func compactJSON(b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return b
	}
	return out.Bytes()
}

// recoverWorker brings back a registered worker, disabled until it
// registers again.
func (c *Controller) recoverWorker(w store.Worker, now time.Time) error {
	var reg api.Register
	if err := json.Unmarshal(w.Spec, &reg); err != nil {
		return fmt.Errorf("its registration: %w", err)
	}
	if w.State == workerLost {
		c.workers[w.Name] = &liveWorker{rec: w, reg: reg}
		return nil // gone before the restart: it registers as new
	}
	mw, err := workerModel(reg, now)
	if err != nil {
		return err
	}
	if mw.Name != w.Name {
		return fmt.Errorf("its registration names %q", mw.Name)
	}
	// Disabled until it registers again: it keeps its running tasks, but
	// a task started on it now could not be handed over (it has no
	// mailbox yet), and only its registration says what it still runs.
	// If it does not come back within the heartbeat timeout, it is
	// declared lost.
	mw.State = model.WorkerDisabled
	if err := c.eng.Apply(engine.AddWorker{Worker: mw, At: now, GPUDevices: reg.GPUDevices}); err != nil {
		return err
	}
	c.workers[w.Name] = &liveWorker{rec: w, reg: reg, recovered: now}
	return nil
}

// recoverJob brings back an unfinished job with its tasks. On an error the
// engine and the loop's maps are as they were before: the job is
// quarantined by the caller. An error the store gave is a storeFailure.
func (c *Controller) recoverJob(ra *admissionRecovery, j store.Job, recs []store.Task, now time.Time) (err error) {
	var js spec.Job
	if err := json.Unmarshal(j.Spec, &js); err != nil {
		return fmt.Errorf("its spec: %w", err)
	}
	if dead, err := ra.deadLetter(j, js); dead || err != nil {
		return err
	}
	// Priority may have changed at run time; the record has the latest.
	js.Priority, js.Urgent = j.Priority, j.Urgent
	lj, err := newLiveJob(js, j.Submitted)
	if err != nil {
		return err
	}
	lj.rec = j
	for _, r := range recs {
		if _, ok := lj.tasks[r.Name]; !ok {
			return fmt.Errorf("task %q is not in its spec", r.Name)
		}
	}
	if err := ra.prepare(lj); err != nil {
		return err
	}
	// Dependencies on other jobs hold a job's start only: one that
	// started is not held again (a job it waited for may run again,
	// requeued, and not have ended at the restart).
	m := lj.model
	if startedJob(j, recs) {
		m.DependsOn = nil
	}
	others, err := c.otherJobs(ra.ctx, m.DependsOn)
	if err != nil {
		return err
	}
	if err := c.eng.Apply(engine.SubmitJob{Job: m, Others: others}); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			c.unrecover(lj, now)
		}
	}()
	if err := ra.restoreThrottle(lj); err != nil {
		return err
	}
	for _, r := range recs {
		*lj.tasks[r.Name] = r
	}
	// Ended tasks first: a running task may need one listed after it in
	// the spec, and only a task whose needs succeeded can run. Members of
	// merged batches last, once their heads run again.
	for phase := range 3 {
		for _, mt := range lj.model.Tasks {
			rec := lj.tasks[mt.Name]
			if restorePhase(rec) != phase {
				continue
			}
			if err := c.restoreTask(rec); err != nil {
				return fmt.Errorf("task %q: %w", mt.Name, err)
			}
		}
	}
	c.addJob(lj)
	return nil
}

// unrecover takes a job that recovery gave the engine back out of it: it
// ends there, and the loop forgets its running tasks.
func (c *Controller) unrecover(lj *liveJob, now time.Time) {
	_ = c.eng.Apply(engine.CancelJob{Job: lj.rec.ID, At: now})
	_ = c.eng.Apply(engine.ForgetJob{Job: lj.rec.ID})
	for _, rec := range lj.tasks {
		c.unindexRunning(rec)
	}
}

// restorePhase orders a job's task records for recovery: those not running,
// then running ones, then members of merged batches.
func restorePhase(rec *store.Task) int {
	switch {
	case rec.State != string(model.TaskRunning):
		return 0
	case inBatch(rec):
		return 2
	}
	return 1
}

func (c *Controller) restoreTask(rec *store.Task) error {
	switch model.TaskState(rec.State) {
	case model.TaskRunning:
		if lw, ok := c.workers[rec.Worker]; ok && lw.rec.State != workerLost {
			head, member := batchHead(rec)
			err := c.eng.Apply(engine.RestoreRunning{Job: rec.Job, Task: rec.Name, Worker: rec.Worker,
				Started: rec.Started, Attempt: rec.Attempt, Fails: rec.Fails, Batch: head, GPUs: rec.GPUs})
			if err == nil {
				// The engine gives the recorded devices back, or others
				// when they are not free (a record without devices).
				rec.GPUs = c.eng.TaskGPUs(rec.Job, rec.Name)
				c.indexRunning(rec)
				return nil
			}
			if !member || !errors.Is(err, engine.ErrInvalid) {
				return err
			}
			// Its head is not running there any more (it was requeued):
			// the member waits again, and its worker is told to stop it.
		}
		rec.State = string(model.TaskReady)
		return c.eng.Apply(engine.RestoreTask{Job: rec.Job, Task: rec.Name, State: model.TaskReady, Attempt: rec.Attempt, Fails: rec.Fails})
	case model.TaskReady, model.TaskBlocked:
		return c.eng.Apply(engine.RestoreTask{Job: rec.Job, Task: rec.Name, State: model.TaskReady, Attempt: rec.Attempt, Fails: rec.Fails})
	default:
		return c.eng.Apply(engine.RestoreTask{Job: rec.Job, Task: rec.Name, State: model.TaskState(rec.State), Attempt: rec.Attempt, Fails: rec.Fails})
	}
}
