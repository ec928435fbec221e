package control

import (
	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// Output of stopped attempts. An attempt the server stops (a cancel, a
// requeue, a preemption) ends on the server at once, but its process ends
// on the worker a little later, after the stop order: the worker's report
// of it then names an attempt that no longer runs. It still brings what
// the attempt printed, how it exited and what it used, which a user reads
// with `allot logs` (--attempt once the task runs again) and `allot usage`
// as for a timed-out attempt. So the loop keeps every attempt it stopped
// until the worker's report arrives (the job may be forgotten, or the task
// run again, meanwhile): the output the attempt streams until then is kept,
// and the report's exit code and usage complete the attempt's accounting
// record, written when the stop ended it. A cancelled attempt whose task
// has not moved on also gets the report's output and exit code on its
// task record; the state stays cancelled. A worker that is lost, leaves,
// or registers again without the attempt will never report it: its entries
// are dropped then, so the map holds only attempts a worker still owes.

// owedReport is a stopped attempt whose report is still to come.
type owedReport struct {
	rec        *store.Task // the task's record; it may have moved on to a later attempt
	secretHash []byte      // the stopped attempt's (rec's may be the next one's)
	cancelled  bool
	acct       store.Attempt // its accounting record, once the round that stopped it wrote one
	recorded   bool
}

// awaitStopped notes that the server stopped rec's attempt on worker (for
// a cancel when cancelled): its report is still to come.
func (c *Controller) awaitStopped(worker string, rec *store.Task, cancelled bool) {
	if c.owed == nil {
		c.owed = map[string]map[api.Attempt]*owedReport{}
	}
	m := c.owed[worker]
	if m == nil {
		m = map[api.Attempt]*owedReport{}
		c.owed[worker] = m
	}
	m[api.Attempt{Job: rec.Job, Task: rec.Name, Attempt: rec.Attempt}] = &owedReport{rec: rec, secretHash: rec.SecretHash, cancelled: cancelled}
}

// owesRecord keeps a, the accounting record of rec's attempt, if that
// attempt's report is still owed: the report completes it.
func (c *Controller) owesRecord(rec *store.Task, a store.Attempt) {
	if o := c.owed[rec.Worker][api.Attempt{Job: a.Job, Task: a.Task, Attempt: a.Attempt}]; o != nil && o.rec == rec {
		o.acct, o.recorded = a, true
	}
}

// owedReport returns the stopped attempt a that worker still owes a report
// of, nil if there is none.
func (c *Controller) owedReport(worker string, a api.Attempt) *owedReport {
	return c.owed[worker][a]
}

// keepsTask reports whether the report of o goes on its task record too:
// a cancelled attempt whose task has not moved on.
func (o *owedReport) keepsTask(worker string, a api.Attempt) bool {
	rec := o.rec
	return o.cancelled && rec.Worker == worker && rec.Attempt == a.Attempt && rec.State == string(model.TaskCancelled)
}

// keepStoppedOutput stores what r reports of an attempt the server
// stopped on worker, once; it reports whether r was one.
func (c *Controller) keepStoppedOutput(t *txn, worker string, r api.Report) bool {
	o := c.owedReport(worker, r.Attempt)
	if o == nil {
		return false
	}
	c.forgetStopped(worker, r.Attempt)
	exit := r.ExitCode
	cpu, mem := max(r.CPUSeconds, 0), max(r.PeakMemory, 0)
	if o.keepsTask(worker, r.Attempt) {
		rec := o.rec
		rec.ExitCode, rec.Output = &exit, lastBytes(r.Output, MaxOutputBytes)
		rec.CPUSeconds, rec.PeakMemory = cpu, mem
		t.touchTask(rec)
	}
	if o.recorded {
		a := o.acct
		a.ExitCode, a.CPUSeconds, a.PeakMemory = &exit, cpu, mem
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
