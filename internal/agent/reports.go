package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// maxReportBatch bounds one POST of reports (each may carry an output tail).
const maxReportBatch = 64

// maxReportBatchBytes bounds the outputs, results and errors of one POST of
// reports, well under the server's default body limit (8 MiB): a batch the
// server refused with 413 would be sent again report by report, each alone
// at most MaxOutputTailBytes of output and the result's 64 KiB.
const maxReportBatchBytes = 4 << 20

// reporter delivers finished attempts to the server. Reports queue up and
// go in one request; while a request is out (or waits to be retried) new
// ones join the queue and leave with the next. A report leaves the queue
// only once the server took it, or rejected it as invalid: it survives a
// server that is down for as long as the agent runs.
type reporter struct {
	// send delivers one batch. An error wrapping errRejected drops the
	// batch; any other keeps it for a retry.
	send func(context.Context, []api.Report) error
	bo   backoff
	log  *slog.Logger

	mu      sync.Mutex
	pending []queued
	// inflight is the batch being sent: it has left pending but the server
	// has not taken it yet.
	inflight []queued
	wake     chan struct{}

	// What was delivered: reports the server took, the requests that
	// carried them, and the time the reports waited from add to delivery.
	taken, requests atomic.Int64
	waited          atomic.Int64 // nanoseconds
}

// queued is a report waiting for delivery, with when it was added.
type queued struct {
	rep api.Report
	at  time.Time
}

// errRejected marks a batch the server refused for what it contains:
// sending it again would be refused again.
var errRejected = errors.New("rejected by the server")

func newReporter(send func(context.Context, []api.Report) error, bo backoff, log *slog.Logger) *reporter {
	return &reporter{send: send, bo: bo, log: log, wake: make(chan struct{}, 1)}
}

// add queues a report and wakes the sender.
func (r *reporter) add(rep api.Report) {
	r.mu.Lock()
	r.pending = append(r.pending, queued{rep, time.Now()})
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// len is how many reports wait for delivery.
func (r *reporter) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

func (r *reporter) take() []queued {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, size := 0, 0
	for n < len(r.pending) && n < maxReportBatch {
		size += reportBytes(r.pending[n].rep)
		if n > 0 && size > maxReportBatchBytes {
			break
		}
		n++
	}
	b := append([]queued(nil), r.pending[:n]...)
	r.pending = r.pending[n:]
	r.inflight = b
	return b
}

// reportBytes is the part of a report's size that grows with the task.
func reportBytes(rep api.Report) int {
	return len(rep.Output) + len(rep.Result) + len(rep.Error)
}

// putBack returns an undelivered batch to the front of the queue, so
// reports keep the order in which attempts ended.
func (r *reporter) putBack(b []queued) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = append(b, r.pending...)
	r.inflight = nil
}

// delivered ends the batch in flight: the server took (or refused) it.
func (r *reporter) delivered() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inflight = nil
}

// sent delivers b in one request and counts what the server took.
func (r *reporter) sent(ctx context.Context, b []queued) error {
	reps := make([]api.Report, len(b))
	for i, q := range b {
		reps[i] = q.rep
	}
	err := r.send(ctx, reps)
	r.requests.Add(1)
	if err == nil {
		now := time.Now()
		var waited time.Duration
		for _, q := range b {
			waited += now.Sub(q.at)
		}
		r.taken.Add(int64(len(b)))
		r.waited.Add(int64(waited))
	}
	return err
}

// held lists the attempts whose reports the server has not taken yet,
// queued or in flight. A registration lists them with the running ones, so
// a server that restarted keeps those attempts for the reports to come
// instead of requeueing them and ignoring their results.
func (r *reporter) held() []api.Attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]api.Attempt, 0, len(r.pending)+len(r.inflight))
	for _, q := range r.inflight {
		out = append(out, q.rep.Attempt)
	}
	for _, q := range r.pending {
		out = append(out, q.rep.Attempt)
	}
	return out
}

// run delivers reports as they come until ctx ends.
func (r *reporter) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		_ = r.flush(ctx)
	}
}

// flush delivers everything queued, retrying with backoff, until the queue
// is empty or ctx ends; then it returns the last delivery error.
func (r *reporter) flush(ctx context.Context) error {
	failed := false
	for r.len() > 0 {
		err := r.sendOne(ctx)
		if err == nil {
			if failed {
				r.log.Info("reports delivered after retrying")
			}
			r.bo.reset()
			failed = false
			continue
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%d report(s) not delivered: %w", r.len(), err)
		}
		d := r.bo.after(err)
		level := slog.LevelDebug
		if !failed {
			level = slog.LevelWarn // once per outage, not once per retry
		}
		r.log.Log(ctx, level, "could not deliver reports; they are kept and retried", "reports", r.len(), "in", d, "err", err)
		failed = true
		if !sleep(ctx, d) {
			return fmt.Errorf("%d report(s) not delivered: %w", r.len(), err)
		}
	}
	return nil
}

// sendOne sends the oldest batch. A rejected batch of several reports is
// sent again one by one, so one bad report does not take the others down.
func (r *reporter) sendOne(ctx context.Context) error {
	b := r.take()
	if len(b) == 0 {
		return nil
	}
	err := r.sent(ctx, b)
	switch {
	case err == nil:
		r.delivered()
		return nil
	case !errors.Is(err, errRejected):
		r.putBack(b)
		return err
	case len(b) == 1:
		r.delivered()
		r.log.Error("the server rejected a report; dropping it", append(attemptAttrs(b[0].rep.Attempt), "err", err)...)
		return nil
	}
	defer r.delivered()
	for i, one := range b {
		if err := r.sent(ctx, b[i:i+1]); err != nil {
			if !errors.Is(err, errRejected) {
				r.putBack(b[i:])
				return err
			}
			r.log.Error("the server rejected a report; dropping it", append(attemptAttrs(one.rep.Attempt), "err", err)...)
		}
	}
	return nil
}
