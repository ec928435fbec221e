package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/postgres"
)

// DefaultLeaderTimeout is server.leaderTimeout when unset: a frozen or
// cut-off leader loses its leadership this long after its last sign of
// life, and a standby takes over.
const DefaultLeaderTimeout = 3 * time.Second

// standbyEvery is how often a standby tries to take the leader lock.
const standbyEvery = 100 * time.Millisecond

// candidate is a store's place in the leader election (postgres.Candidate).
type candidate interface {
	Try(ctx context.Context) (bool, postgres.LeaderRow, error)
	Confirm(ctx context.Context) error
	Resign()
}

// replica is one server of several on a shared store. It stands in the
// leader election; while it leads it runs the scheduling loop on an
// engine rebuilt from the store at its promotion, and serves the whole
// API; while it does not, it answers not_leader with the leader's URL
// (api.Leadership). A leader that loses its lock, or whose commit is
// fenced, stops its loop, writes nothing more and stands again.
type replica struct {
	cand    candidate
	self    string // this replica's advertised URL
	timeout time.Duration
	log     *slog.Logger
	// promote rebuilds the engine from the store and returns the
	// controller and the API handler on it.
	promote func(ctx context.Context) (*control.Controller, http.Handler, error)
	// promoted, when set, is told about every promotion: the epoch and
	// how long the engine's rebuild took.
	promoted func(epoch int64, rebuild time.Duration)

	// settled is closed once the replica first knows its role: leading
	// with its engine rebuilt, or standing by with a leader known.
	settled     chan struct{}
	settledOnce sync.Once

	handler atomic.Pointer[http.Handler] // what the API serves now
	ctrl    atomic.Pointer[control.Controller]

	mu        sync.Mutex
	leading   bool      // holds the lock
	serving   bool      // leading with the engine rebuilt: the API is the leader's
	confirmed time.Time // last proof that this replica holds the lock
	leaderURL string    // the leader's, while this replica does not lead
}

// Leader implements api.Leadership: a replica leads while it holds the
// lock and confirmed it within the timeout; a leader that could not
// confirm it (frozen, cut off) stops serving until it has, since a
// standby may have taken over meanwhile.
func (r *replica) Leader() (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leading {
		return r.serving && time.Since(r.confirmed) < r.timeout, ""
	}
	return false, r.leaderURL
}

// ServeHTTP serves the API of the replica's current role.
func (r *replica) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	(*r.handler.Load()).ServeHTTP(w, req)
}

// settle marks the replica's first role known (settled).
func (r *replica) settle() { r.settledOnce.Do(func() { close(r.settled) }) }

// releaseWaiters ends the long polls of the controller, if any, at shutdown.
func (r *replica) releaseWaiters() {
	if c := r.ctrl.Load(); c != nil {
		c.ReleaseWaiters()
	}
}

// run stands in the election until ctx ends, leading whenever it wins.
// It returns nil when ctx ended, or the error of a loop that stopped for
// another reason than losing the leadership (the server then stops).
func (r *replica) run(ctx context.Context, follower http.Handler) error {
	var lastErr string
	var epoch int64
	for {
		r.handler.Store(&follower)
		// Standby: try the lock every standbyEvery.
		for {
			lead, row, err := r.cand.Try(ctx)
			if ctx.Err() != nil {
				r.cand.Resign()
				return nil
			}
			if err != nil {
				// Unreachable, the store cannot tell who leads.
				r.mu.Lock()
				r.leaderURL = ""
				r.mu.Unlock()
				if msg := err.Error(); msg != lastErr {
					r.log.Warn("leader election: cannot reach the store; trying again", "err", err)
					lastErr = msg
				}
			} else {
				lastErr = ""
			}
			if lead {
				r.log.Info("took the leader lock; rebuilding the engine from the store", "epoch", row.Epoch)
				epoch = row.Epoch
				break
			}
			if err == nil {
				r.mu.Lock()
				if row.URL == r.self {
					// This replica's own row, from before it lost the
					// lock: whoever holds it now has not written yet.
					row.URL = ""
				}
				r.leaderURL = row.URL
				r.mu.Unlock()
				if row.URL != "" {
					r.settle()
				}
			}
			select {
			case <-ctx.Done():
				r.cand.Resign()
				return nil
			case <-time.After(standbyEvery):
			}
		}
		err := r.lead(ctx, epoch)
		r.mu.Lock()
		r.leading, r.serving, r.leaderURL = false, false, ""
		r.mu.Unlock()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// lead runs the loop from a promotion until the leadership ends: nil when
// it was lost or fenced (the replica stands again) or ctx ended, the
// loop's error otherwise. The lock is given up (Resign) before it returns.
func (r *replica) lead(ctx context.Context, epoch int64) error {
	r.mu.Lock()
	r.leading, r.confirmed, r.leaderURL = true, time.Now(), ""
	r.mu.Unlock()
	// Keep the lock's session alive and confirmed, from before the rebuild
	// on: the rebuild may take longer than the timeout.
	lost := make(chan error, 1)
	keepCtx, stopKeep := context.WithCancel(ctx)
	defer stopKeep()
	go func() {
		tick := time.NewTicker(r.timeout / 4)
		defer tick.Stop()
		for {
			select {
			case <-keepCtx.Done():
				return
			case <-tick.C:
			}
			if err := r.cand.Confirm(keepCtx); err != nil {
				if keepCtx.Err() == nil {
					lost <- err
				}
				return
			}
			r.mu.Lock()
			r.confirmed = time.Now()
			r.mu.Unlock()
		}
	}()
	start := time.Now()
	ctrl, h, err := r.promote(ctx)
	if err != nil {
		r.cand.Resign()
		if ctx.Err() != nil || errors.Is(err, store.ErrFenced) || errors.Is(err, store.ErrUnavailable) {
			// Another replica took over, or the database went away in
			// the rebuild: stand by again.
			r.log.Warn("promotion abandoned; standing by again", "err", err)
			return nil
		}
		return err
	}
	rebuild := time.Since(start)
	r.log.Info("promoted: the engine is rebuilt from the store; serving as the leader", "epoch", epoch, "rebuild", rebuild)
	if r.promoted != nil {
		r.promoted(epoch, rebuild)
	}
	r.ctrl.Store(ctrl)
	r.handler.Store(&h)
	r.mu.Lock()
	r.serving = true
	r.mu.Unlock()
	r.settle()
	loopCtx, stopLoop := context.WithCancel(context.Background())
	defer stopLoop()
	loopErr := make(chan error, 1)
	go func() { loopErr <- ctrl.Run(loopCtx) }()
	var result error
	select {
	case <-ctx.Done():
		stopLoop()
		result = <-loopErr
	case err := <-lost:
		r.mu.Lock()
		r.serving = false
		r.mu.Unlock()
		// Fence first, so that the loop's last round and its stop write
		// nothing; then stop it.
		r.log.Error("leadership lost: the leader lock's session is gone; stopping the loop and standing by", "err", err)
		r.cand.Resign()
		stopLoop()
		<-loopErr
	case err := <-loopErr:
		if errors.Is(err, store.ErrFenced) {
			r.log.Error("fenced: another server leads now; stopping the loop and standing by", "err", err)
		} else if err != nil {
			result = err
		}
	}
	r.mu.Lock()
	r.serving = false
	r.mu.Unlock()
	r.cand.Resign()
	ctrl.ReleaseWaiters()
	return result
}

var _ api.Leadership = (*replica)(nil)

// followerView is the replica as its follower API sees it: never leading,
// so that a request that reached the follower's handler just before a
// promotion is still answered not_leader (that handler has no loop).
type followerView struct{ r *replica }

func (f followerView) Leader() (bool, string) {
	f.r.mu.Lock()
	defer f.r.mu.Unlock()
	return false, f.r.leaderURL
}
