package control

import (
	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// Output of stopped attempts. A cancelled attempt ends on the server at
// once, but its process ends on the worker a little later, after the stop
// order: the worker's report of it then names an attempt that no longer
// runs. It still brings what the attempt printed and how it exited, which a
// user reads with `allot logs` as for a timed-out attempt. So the loop keeps
// the record of every attempt it stopped for a cancel until the worker's
// report arrives (the job may be forgotten meanwhile), and stores the
// report's output and exit code on it; the state stays cancelled. A worker
// that is lost, leaves, or registers again without the attempt will never
// report it: its entries are dropped then, so the map holds only attempts a
// worker still owes. The report's exit code and usage also complete the
// attempt's accounting record, written when the cancel ended it.

// owedReport is a cancelled attempt whose report is still to come: its
// task record, and its accounting record once the round that ended it
// wrote one.
type owedReport struct {
	rec      *store.Task
	acct     store.Attempt
	recorded bool
}

// awaitStopped notes that the server stopped rec's attempt on worker for a
// cancel: its report is still to come.
func (c *Controller) awaitStopped(worker string, rec *store.Task) {
	if c.owed == nil {
		c.owed = map[string]map[api.Attempt]*owedReport{}
	}
	m := c.owed[worker]
	if m == nil {
		m = map[api.Attempt]*owedReport{}
		c.owed[worker] = m
	}
	m[api.Attempt{Job: rec.Job, Task: rec.Name, Attempt: rec.Attempt}] = &owedReport{rec: rec}
}

// owesRecord keeps a, the accounting record of rec's attempt, if that
// attempt's report is still owed: the report completes it.
func (c *Controller) owesRecord(rec *store.Task, a store.Attempt) {
	if o := c.owed[rec.Worker][api.Attempt{Job: a.Job, Task: a.Task, Attempt: a.Attempt}]; o != nil && o.rec == rec {
		o.acct, o.recorded = a, true
	}
}

// stoppedRecord returns the record of the cancelled attempt a that worker
// still owes a report of, nil if there is none (or the record moved on).
func (c *Controller) stoppedRecord(worker string, a api.Attempt) *store.Task {
	o := c.owed[worker][a]
	if o == nil {
		return nil
	}
	rec := o.rec
	if rec.Worker != worker || rec.Attempt != a.Attempt || rec.State != string(model.TaskCancelled) {
		return nil
	}
	return rec
}

// keepStoppedOutput stores the output and exit code that r reports for a
// cancelled attempt of worker, once; it reports whether r was one.
func (c *Controller) keepStoppedOutput(t *txn, worker string, r api.Report) bool {
	rec := c.stoppedRecord(worker, r.Attempt)
	if rec == nil {
		return false
	}
	o := c.owed[worker][r.Attempt]
	c.forgetStopped(worker, r.Attempt)
	exit := r.ExitCode
	rec.ExitCode, rec.Output = &exit, lastBytes(r.Output, MaxOutputBytes)
	rec.CPUSeconds, rec.PeakMemory = max(r.CPUSeconds, 0), max(r.PeakMemory, 0)
	t.touchTask(rec)
	if o.recorded {
		a := o.acct
		a.ExitCode, a.CPUSeconds, a.PeakMemory = &exit, rec.CPUSeconds, rec.PeakMemory
		t.batch.Attempts = append(t.batch.Attempts, a)
	}
	t.changed = true
	return true
}

func (c *Controller) forgetStopped(worker string, a api.Attempt) {
	if m := c.owed[worker]; m != nil {
		delete(m, a)
		if len(m) == 0 {
			delete(c.owed, worker)
		}
	}
}

// dropStopped forgets the attempts worker owes reports of, except those it
// says it still holds (holds is nil for a worker that is gone).
func (c *Controller) dropStopped(worker string, holds []api.Attempt) {
	keep := make(map[api.Attempt]bool, len(holds))
	for _, a := range holds {
		keep[a] = true
	}
	for a := range c.owed[worker] {
		if !keep[a] {
			c.forgetStopped(worker, a)
		}
	}
}
