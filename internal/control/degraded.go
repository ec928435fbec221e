package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/allot-sched/allot/internal/store"
)

// A full disk (or a read-only or failing file system) must not stop the
// server. The engine applies a round's requests before the round's batch
// is committed, so a batch the store refuses cannot simply be dropped: the
// engine and the store would disagree. The loop holds the round instead:
// its callers wait for their answer, and the same batch is committed again,
// with backoff, until it is stored. Meanwhile the loop answers what comes
// in without changing anything: reads run, changes are refused with
// store.ErrUnavailable (nothing of them is applied, so the caller may send
// them again), and workers' heartbeats and lease requests, which need no
// round, keep their running tasks theirs. Once the batch is stored, the
// round ends as usual and the loop goes on.

// StoreHealth says whether the store takes writes. While it does not
// (Degraded), changes are refused with store.ErrUnavailable and /readyz
// answers 503 with the cause.
type StoreHealth struct {
	Degraded bool
	// Cause is why writes fail, in a few words: "disk full", "read-only
	// database or file system", "I/O error", ...
	Cause string
	// Since is when the first write failed (the loop's clock).
	Since time.Time
	// LastError is the store's last error, in full.
	LastError string
	// Retries counts the commits of the held round that failed again.
	Retries int
}

// Retry schedule of a held round: the first retry soon (a transient
// failure), then doubling up to Config.StoreRetryMax, so a full disk costs
// a failed write every few seconds and the server resumes within that time
// of there being room.
const (
	storeRetryFirst = 50 * time.Millisecond
	// DefaultStoreRetryMax is Config.StoreRetryMax when unset.
	DefaultStoreRetryMax = 2 * time.Second
	// degradedLogEvery is how often the log says again that the store
	// still refuses writes.
	degradedLogEvery = time.Minute
)

// StoreHealth returns whether the store takes writes, and if not, why.
func (c *Controller) StoreHealth() StoreHealth {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.health
}

// commitUntilStored commits the round's batch, holding the round while the
// store refuses it for a cause retrying can cure. It fails only for a
// refusal no retry cures (an invalid row is a bug, a fenced store has
// another leader), or when ctx ends first.
func (c *Controller) commitUntilStored(ctx context.Context, t *txn) error {
	err := c.commit(ctx, t.batch)
	if err == nil || !retryable(err) {
		return err
	}
	return c.holdUntilStored(ctx, t, err)
}

// holdUntilStored holds the round t, whose commit failed with err, which
// retrying may cure, and commits its batch again until it is stored.
func (c *Controller) holdUntilStored(ctx context.Context, t *txn, err error) error {
	c.degrade(err)
	wait := storeRetryFirst
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w while the store refused writes (%s)", ctx.Err(), store.Cause(err))
		case r := <-c.reqs:
			c.answerHeld(r)
		case <-timer.C:
			if err = c.commit(ctx, t.batch); err == nil {
				c.resume(t)
				return nil
			}
			if !retryable(err) {
				return err
			}
			c.degrade(err)
			wait = min(wait*2, c.cfg.StoreRetryMax)
			timer.Reset(wait)
		}
	}
}

// retryable reports whether committing the same batch again may succeed.
func retryable(err error) bool {
	switch {
	case errors.Is(err, store.ErrInvalid), errors.Is(err, store.ErrFenced),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return true
}

// answerHeld answers a request that arrives while a round is held: a read
// runs (it changes nothing), a change is refused unapplied.
func (c *Controller) answerHeld(r *request) {
	if r.read {
		t := &txn{c: c, now: c.cfg.Clock().UTC()}
		r.val, r.err = r.fn(t)
	} else {
		r.err = c.refusal()
	}
	close(r.done)
}

// refusal is the error of a change refused while the store refuses writes.
func (c *Controller) refusal() error {
	h := c.StoreHealth()
	return fmt.Errorf("%w: %s since %s: the change was not applied; send it again once the server is ready (GET /readyz)",
		store.ErrUnavailable, h.Cause, h.Since.Format(time.RFC3339))
}

// degrade records a failed commit of the held round, logging the first
// one, a change of cause, and a reminder every degradedLogEvery.
func (c *Controller) degrade(err error) {
	now := c.cfg.Clock().UTC()
	cause := store.Cause(err)
	c.mu.Lock()
	first := !c.health.Degraded
	if first {
		c.health = StoreHealth{Degraded: true, Since: now}
	} else {
		c.health.Retries++
	}
	changed := c.health.Cause != cause
	c.health.Cause, c.health.LastError = cause, err.Error()
	h := c.health
	c.mu.Unlock()
	switch {
	case first || changed:
		c.degradedLogged = time.Now()
		c.cfg.Logger.Error("the store refuses writes: changes are refused (503 store_unavailable) and the pending round is retried "+
			"until it is stored; reads, heartbeats and running tasks go on", "cause", cause, "err", err)
		if o := c.cfg.Observer; o != nil {
			o.StoreState(cause)
		}
	case time.Since(c.degradedLogged) >= degradedLogEvery:
		c.degradedLogged = time.Now()
		c.cfg.Logger.Warn("the store still refuses writes", "cause", cause, "for", now.Sub(h.Since).Round(time.Second),
			"retries", h.Retries, "err", err)
	default:
		c.cfg.Logger.Debug("the store refused the held round again", "cause", cause, "retries", h.Retries, "err", err)
	}
}

// resume ends the outage once the held round t is stored. Workers could
// not register while nothing could be stored, so the time it lasted does
// not count against them: the wait for workers known from before a restart
// starts over, and so does the contact clock of those that registered in
// the held round.
func (c *Controller) resume(t *txn) {
	now := c.cfg.Clock().UTC()
	c.mu.Lock()
	h := c.health
	c.health = StoreHealth{}
	c.mu.Unlock()
	for _, lw := range c.workers {
		if !lw.recovered.IsZero() {
			lw.recovered = now
		}
	}
	for _, box := range t.newBoxes { // not shared yet: deliver publishes them
		box.lastSeen = now
	}
	c.cfg.Logger.Warn("the store takes writes again: the held round is stored and changes are accepted",
		"cause_was", h.Cause, "after", now.Sub(h.Since).Round(time.Millisecond), "retries", h.Retries)
	if o := c.cfg.Observer; o != nil {
		o.StoreState("")
	}
}
