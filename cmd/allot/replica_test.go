package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/postgres"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// stallingCandidate wins at once; its confirmations hang while stall is
// set, as on a network that went silent.
type stallingCandidate struct {
	stall    atomic.Bool
	resigned atomic.Int32
}

func (c *stallingCandidate) Try(context.Context) (bool, postgres.LeaderRow, error) {
	return true, postgres.LeaderRow{Epoch: 1}, nil
}

func (c *stallingCandidate) Confirm(ctx context.Context) error {
	for c.stall.Load() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

func (c *stallingCandidate) Resign() { c.resigned.Add(1) }

// A leader that has not confirmed its lock within the timeout stops
// serving (a standby may lead by then) until it confirms it again; once it
// no longer leads, its metrics show no scheduling state.
func TestALeaderThatCannotConfirmItsLockStopsServingUntilItDoes(t *testing.T) {
	st, err := sqlite.Open(sqlite.Memory)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cand := &stallingCandidate{}
	r := &replica{cand: cand, timeout: 200 * time.Millisecond, log: quiet, settled: make(chan struct{}),
		promote: func(ctx context.Context) (*control.Controller, http.Handler, error) {
			c, err := control.New(ctx, control.Config{Logger: quiet}, st)
			return c, http.NotFoundHandler(), err
		}}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.run(ctx, http.NotFoundHandler()) }()
	<-r.settled
	waitFor := func(what string, want bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			if leading, _ := r.Leader(); leading == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: Leader() stayed %v", what, !want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("promoted", true)
	metrics := currentCtrl{r}
	deadline := time.Now().Add(5 * time.Second)
	for metrics.Snapshot().At.IsZero() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if metrics.Snapshot().At.IsZero() {
		t.Fatal("the leader's metrics show no snapshot")
	}
	cand.stall.Store(true)
	start := time.Now()
	waitFor("unconfirmed past the timeout", false)
	if took := time.Since(start); took > time.Second {
		t.Errorf("served %v without confirming its lock, timeout 200ms", took)
	}
	cand.stall.Store(false)
	waitFor("confirmed again", true)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if at := metrics.Snapshot().At; !at.IsZero() {
		t.Errorf("a replica that no longer leads shows its last snapshot (%v) in its metrics", at)
	}
	if cand.resigned.Load() == 0 {
		t.Error("the lock was not given up at the stop")
	}
}

// A promotion that meets an unreachable database (it went away in the
// rebuild) does not stop the server: the replica stands by again and
// leads once the store answers.
func TestAPromotionThatMeetsAnUnreachableStoreStandsByAgain(t *testing.T) {
	st, err := sqlite.Open(sqlite.Memory)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cand := &stallingCandidate{}
	var tries atomic.Int32
	r := &replica{cand: cand, timeout: time.Second, log: quiet, settled: make(chan struct{}),
		promote: func(ctx context.Context) (*control.Controller, http.Handler, error) {
			if tries.Add(1) == 1 {
				return nil, nil, &store.UnavailableError{Cause: "database unreachable", Err: errors.New("connection refused")}
			}
			c, err := control.New(ctx, control.Config{Logger: quiet}, st)
			return c, http.NotFoundHandler(), err
		}}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.run(ctx, http.NotFoundHandler()) }()
	select {
	case <-r.settled:
	case err := <-done:
		t.Fatalf("the replica stopped: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the replica did not lead after the store came back")
	}
	if leading, _ := r.Leader(); !leading || tries.Load() != 2 {
		t.Errorf("leading %v after %d promotions, want leading after the second", leading, tries.Load())
	}
	if cand.resigned.Load() == 0 {
		t.Error("the lock was kept through the failed promotion")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
