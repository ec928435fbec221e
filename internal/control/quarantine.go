package control

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// A stored row that cannot be read back must never stop the server: a
// server that refuses to start serves nobody, and the row stays as bad at
// the next start. Recovery sets such a row aside instead, and says so:
//
//   - a job is failed: its unfinished tasks end failed with the reason
//     quarantined and a message saying what could not be read, and the
//     job ends failed; its stored spec is kept for inspection;
//   - a worker is dropped: its record is marked lost with a registration
//     that reads back (the original is kept under quarantine/worker/NAME),
//     and it joins as new when it registers again;
//   - a setting changed at run time (a queue's policy, throttling, an
//     endpoint, a policy's history) is moved to quarantine/KEY, and the
//     configured value applies.
//
// Each is logged, recorded as a row_quarantined event whose reason is the
// kind of row, and counted in allot_store_rows_quarantined_total. All of
// it is committed before the server starts serving, so the next start
// reads what the rows became and quarantines nothing more.

// Kinds of quarantined rows: the reason of a row_quarantined event and
// the kind label of the metric.
const (
	QuarantinedJob     = "job"
	QuarantinedWorker  = "worker"
	QuarantinedSetting = "setting"
)

// maxQuarantineReason bounds the message that says why a row was
// quarantined: errors may quote the row.
const maxQuarantineReason = 1 << 10

// quarantine collects what recovery sets aside, to commit in one batch.
type quarantine struct {
	c     *Controller
	now   time.Time
	batch store.Batch
}

// storeFailure marks an error of the store itself (a read that failed), as
// opposed to a row that was read but cannot be used: the first stops the
// start, the second is quarantined.
type storeFailure struct{ err error }

func (s storeFailure) Error() string { return s.err.Error() }
func (s storeFailure) Unwrap() error { return s.err }

func (q *quarantine) reason(what string, err error) string {
	return firstBytes(fmt.Sprintf("the stored %s could not be read back: %v", what, err), maxQuarantineReason)
}

func (q *quarantine) event(kind, job, worker, msg string) {
	q.batch.Events = append(q.batch.Events, store.Event{At: q.now, Kind: EventRowQuarantined, Job: job, Worker: worker,
		Reason: kind, Message: msg})
}

func (q *quarantine) kv(key string, value []byte) {
	if q.batch.KV == nil {
		q.batch.KV = map[string][]byte{}
	}
	q.batch.KV[key] = value
}

// job fails a job whose record cannot be brought back.
func (q *quarantine) job(j store.Job, tasks []store.Task, err error) {
	why := q.reason("job", err)
	q.c.cfg.Logger.Error("stored job quarantined: it ends failed", "job", j.ID, "err", err)
	rec := j
	rec.State, rec.Ended, rec.Spec = store.JobFailed, q.now, nil // the store keeps the spec
	q.batch.Jobs = append(q.batch.Jobs, rec)
	for _, t := range tasks {
		if model.TaskState(t.State).Terminal() {
			continue
		}
		t.State, t.Reason, t.Message, t.Ended = string(model.TaskFailed), model.ReasonQuarantined, why, q.now
		q.batch.Tasks = append(q.batch.Tasks, t)
	}
	q.event(QuarantinedJob, j.ID, "", why)
	q.batch.Events = append(q.batch.Events, store.Event{At: q.now, Kind: EventJobEnded, Job: j.ID, Reason: store.JobFailed,
		Message: why})
}

// worker drops a worker whose record cannot be brought back.
func (q *quarantine) worker(w store.Worker, err error) {
	why := q.reason("worker", err)
	q.c.cfg.Logger.Error("stored worker quarantined: it joins as new when it registers again", "worker", w.Name, "err", err)
	if len(w.Spec) > 0 {
		q.kv(store.QuarantineWorkerKey(w.Name), w.Spec)
	}
	rec := w
	rec.State = workerLost
	rec.Spec, _ = json.Marshal(api.Register{Name: w.Name})
	q.batch.Workers = append(q.batch.Workers, rec)
	q.event(QuarantinedWorker, "", w.Name, why)
}

// setting sets aside a stored setting; the configured value applies.
func (q *quarantine) setting(key string, raw []byte, err error) {
	why := q.reason("setting "+key, err)
	q.c.cfg.Logger.Error("stored setting quarantined: the configured value applies", "key", key, "err", err)
	q.kv(key, nil)
	q.kv(store.QuarantineKey(key), raw)
	q.event(QuarantinedSetting, "", "", why)
}

// entry sets aside one entry of a stored setting whose others apply; the
// caller stores the setting without it.
func (q *quarantine) entry(key, name string, raw []byte, err error) {
	why := q.reason(fmt.Sprintf("setting %s, entry %q,", key, name), err)
	q.c.cfg.Logger.Error("an entry of a stored setting quarantined", "key", key, "entry", name, "err", err)
	q.kv(store.QuarantineEntryKey(key, name), raw)
	q.event(QuarantinedSetting, "", "", why)
}

// commit stores what was set aside, before the server serves anything.
func (q *quarantine) commit(ctx context.Context) error {
	if q.batch.Empty() {
		return nil
	}
	if err := q.c.commit(ctx, q.batch); err != nil {
		return fmt.Errorf("storing the quarantined rows: %w", err)
	}
	return nil
}
