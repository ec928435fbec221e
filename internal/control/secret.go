package control

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// Attempt secrets. A worker token lets its holder report for every attempt
// of the worker it names, and a task runs on that worker: were the token
// enough, a task that got hold of it could report a forged result for
// another tenant's attempt beside it. So each attempt gets a secret of its
// own, issued with its lease entry (api.Assignment.Secret). The agent
// keeps it in memory, out of the task's reach, and sends it back with the
// attempt's report (api.Report.Secret); a report for a running attempt
// without it is refused and changes nothing.
//
// The server keeps only the secret's SHA-256 digest, in the task's record
// (store.Task.SecretHash): it is stored with the attempt's start, so a
// restarted server checks the reports of the attempts it restores, and a
// copy of the database does not let anyone report.

// ReasonBadSecret is the reason code of a report_refused event: the report
// did not carry the secret of the attempt it names.
const ReasonBadSecret = "secret_mismatch"

// newAttemptSecret returns a fresh secret (128 random bits, as text) and
// the digest the server keeps of it.
func newAttemptSecret() (secret string, hash []byte) {
	secret = rand.Text()
	sum := sha256.Sum256([]byte(secret))
	return secret, sum[:]
}

// hashMatches reports whether secret is the one issued for the attempt
// whose secret has the digest hash (store.Task.SecretHash). An attempt
// started before attempts had secrets (no digest) takes any report, so
// that an upgrade does not fail the attempts running across it.
func hashMatches(hash []byte, secret string) bool {
	if len(hash) == 0 {
		return true
	}
	sum := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(sum[:], hash) == 1
}

// refuseForged checks the secret of every report that would change a
// running attempt of worker. Each mismatch is recorded as a report_refused
// event (counted by the metrics, seen by the job's owner) and logged, and
// the answer is ErrForbidden naming the first one: then nothing of the
// batch is applied. A report that would change nothing (an attempt that
// already ended or moved on) is not checked; it is ignored as before.
func (c *Controller) refuseForged(t *txn, worker string, reports []api.Report) error {
	var first error
	for i, r := range reports {
		_, rec := c.task(r.Job, r.Task)
		var hash []byte
		switch o := c.owedReport(worker, r.Attempt); {
		case reportable(rec, worker, r.Attempt):
			hash = rec.SecretHash
		case o != nil:
			hash = o.secretHash // its output and usage are still kept (stopped.go)
		default:
			continue
		}
		if hashMatches(hash, r.Secret) {
			continue
		}
		msg := fmt.Sprintf("a report for attempt %d of %s/%s did not carry the attempt's secret", r.Attempt.Attempt, r.Job, r.Task)
		c.cfg.Logger.Warn("report refused: wrong attempt secret", "worker", worker, "job", r.Job, "task", r.Task, "attempt", r.Attempt.Attempt)
		t.event(EventReportRefused, r.Job, r.Task, worker, model.Reason{Code: ReasonBadSecret, Message: msg}, attemptData(r.Attempt.Attempt))
		if first == nil {
			first = fmt.Errorf("%w: reports[%d]: %s", ErrForbidden, i, msg)
		}
	}
	return first
}

// reportable reports whether a report of attempt a from worker would
// change rec: the attempt runs there now.
func reportable(rec *store.Task, worker string, a api.Attempt) bool {
	return rec != nil && rec.State == string(model.TaskRunning) && rec.Worker == worker && rec.Attempt == a.Attempt
}
