package agent

import (
	"fmt"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// Merged batches (docs/placement.md#task-merging, docs/agent.md). The
// server may lease tasks of one job stage that share a model as one
// assignment whose Batch lists them, head first. The agent runs them one
// after another in ONE slot, each as its own process with its own
// environment, output, result and report, so whatever the first loads into
// the machine's caches is warm for the rest.
//
// The server's engine reads the batch through the order of the reports:
//   - each member after the head is reported as soon as it ends, with its
//     own outcome;
//   - the head's report comes after every member that ran, and stands for
//     the batch: it keeps the head's exit code, output and result, and
//     when a later member failed it says so as an error, which fails it;
//   - after a failure the members not yet run are not started; their
//     reports ("not run") come after the head's, which has already ended
//     them with the batch: failed with reason batch_failure (or retried),
//     naming the head as their parent.
//
// A member stopped by the server (a stop order, shutdown) is not a
// failure: the batch goes on with the next one.

// membersOf lists the assignments an assignment carries: its batch, or
// itself.
func membersOf(as api.Assignment) []api.Assignment {
	if len(as.Batch) > 0 {
		return as.Batch
	}
	return []api.Assignment{as}
}

// unitOf lists the attempts that run in at's slot: its batch, or itself.
func unitOf(at *attempt) []*attempt {
	if at.batch != nil {
		return at.batch
	}
	return []*attempt{at}
}

// newUnitLocked makes the attempts of an accepted assignment and returns
// the one to queue for a slot: the attempt, or the head of a merged batch
// holding its members. Every attempt of a batch is held (a.attempts) until
// its report is queued. Called with a.mu held.
func (a *Agent) newUnitLocked(as api.Assignment) *attempt {
	if len(as.Batch) == 0 {
		at := newAttempt(as)
		a.attempts[as.Attempt] = at
		return at
	}
	head := as.Batch[0].Task
	unit := make([]*attempt, 0, len(as.Batch))
	for _, m := range as.Batch {
		if _, dup := a.attempts[m.Attempt]; dup {
			a.log.Debug("batch member already running here", attemptAttrs(m.Attempt)...)
			continue
		}
		at := newAttempt(m)
		at.batchHead = head
		a.attempts[m.Attempt] = at
		unit = append(unit, at)
	}
	if len(unit) == 0 {
		// Unreachable (the head's attempt was checked), but an empty batch
		// must not take a slot forever.
		unit = append(unit, &attempt{as: as.Batch[0], batchHead: head})
	}
	unit[0].batch = unit
	return unit[0]
}

// runBatch runs a merged batch in the slot it holds and queues its
// reports in the order described above, then frees the slot.
func (a *Agent) runBatch(unit []*attempt) {
	head := unit[0]
	a.log.Info("merged batch started", "job", head.as.Job, "head", head.as.Task, "tasks", len(unit))
	var headRep api.Report
	failed := "" // why the batch failed, once it has
	var unrun []api.Report
	for i, at := range unit {
		if failed != "" {
			unrun = append(unrun, notRun(at, head.as.Task, failed))
			continue
		}
		rep, left := a.runLogged(at)
		if why := failure(rep); why != "" {
			failed = fmt.Sprintf("task %q of the batch failed: %s", at.as.Task, why)
		}
		if i == 0 {
			headRep = rep // held: it goes last
			if !at.began.IsZero() {
				a.stats.ran(at, time.Now())
			}
			a.leftovers <- left
			continue
		}
		a.queueReport(at, rep)
		a.leftovers <- left
		a.mu.Lock()
		delete(a.attempts, at.as.Attempt)
		a.mu.Unlock()
	}
	if failed != "" && failure(headRep) == "" && !headRep.Stopped {
		headRep.Error = failed
	}
	a.report.add(headRep)
	for _, rep := range unrun {
		a.report.add(rep)
	}
	a.log.Info("merged batch ended", "job", head.as.Job, "head", head.as.Task, "tasks", len(unit), "failed", failed)
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, at := range unit {
		delete(a.attempts, at.as.Attempt)
	}
	a.busy--
	a.startQueuedLocked()
}

// failure says why a report is a failure of the task, "" when it is not:
// a success, or an attempt stopped by the server or the worker (the server
// decides what becomes of it). It reads a report as the server does.
func failure(rep api.Report) string {
	switch {
	case rep.Stopped:
		return ""
	case rep.Error != "":
		return rep.Error
	case rep.ExitCode != 0:
		return fmt.Sprintf("exit code %d", rep.ExitCode)
	}
	return ""
}

// notRun is the report of a batch member left unrun because the batch
// failed; one stopped meanwhile is reported as stopped.
func notRun(at *attempt, head, why string) api.Report {
	at.mu.Lock()
	defer at.mu.Unlock()
	rep := reportOf(at.as)
	if at.cause != "" {
		rep.Stopped, rep.Error = at.stopped, at.cause+" before it started"
		return rep
	}
	rep.Error = fmt.Sprintf("not run: merged batch %q failed: %s", head, why)
	return rep
}
