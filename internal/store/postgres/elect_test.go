package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/postgres/pgtest"
)

// Candidates of one database: one leads, the others read its row; a
// leader that stays silent past the timeout (frozen) loses its session,
// and so the lock, to a standby, whose epoch fences the former leader's
// writes; a confirmed leader keeps it; Resign fences the store for good.
func TestElectionTimeoutMovesTheLeadAndFencesTheFormerLeader(t *testing.T) {
	url := pgtest.URL(t)
	ctx := t.Context()
	const timeout = 500 * time.Millisecond
	first, second := openURL(t, url), openURL(t, url)
	defer first.Close()
	defer second.Close()
	a := first.Candidate("server one", "http://one:7070", timeout)
	b := second.Candidate("server two", "http://two:7070", timeout)
	lead, row, err := a.Try(ctx)
	if err != nil || !lead {
		t.Fatalf("the first candidate: lead %v, %v", lead, err)
	}
	if lead, row2, err := b.Try(ctx); err != nil || lead || row2.URL != "http://one:7070" || row2.Epoch != row.Epoch {
		t.Fatalf("the second candidate: lead %v, row %+v, %v; want the first's row", lead, row2, err)
	}
	// Confirmed more often than the timeout, the lead stays.
	for range 4 {
		time.Sleep(timeout / 3)
		if err := a.Confirm(ctx); err != nil {
			t.Fatalf("confirming a live lead: %v", err)
		}
	}
	if lead, _, _ := b.Try(ctx); lead {
		t.Fatal("a standby took the lock of a leader that confirmed it")
	}
	if err := first.Commit(ctx, store.Batch{KV: map[string][]byte{"k": []byte("1")}}); err != nil {
		t.Fatalf("the leader's commit: %v", err)
	}
	// Silent past the timeout, as a frozen process: the database ends the
	// session and the standby leads with the next epoch.
	time.Sleep(timeout + 300*time.Millisecond)
	lead, row2, err := b.Try(ctx)
	if err != nil || !lead || row2.Epoch != row.Epoch+1 {
		t.Fatalf("the standby after the leader's silence: lead %v, row %+v, %v; want the next epoch", lead, row2, err)
	}
	if err := a.Confirm(ctx); err == nil {
		t.Error("the former leader confirmed a lock its session lost")
	}
	if err := first.Commit(ctx, store.Batch{KV: map[string][]byte{"k": []byte("stale")}}); !errors.Is(err, store.ErrFenced) {
		t.Errorf("the former leader's commit: %v, want ErrFenced", err)
	}
	if err := second.Commit(ctx, store.Batch{KV: map[string][]byte{"k": []byte("2")}}); err != nil {
		t.Fatalf("the new leader's commit: %v", err)
	}
	if got, err := second.Leader(ctx); err != nil || got.Holder != "server two" || got.URL != "http://two:7070" {
		t.Errorf("leader row %+v, %v", got, err)
	}
	// Resigning fences the store at once and frees the lock.
	b.Resign()
	if err := second.Commit(ctx, store.Batch{KV: map[string][]byte{"k": []byte("3")}}); !errors.Is(err, store.ErrFenced) {
		t.Errorf("a commit after Resign: %v, want ErrFenced", err)
	}
	if lead, _, err := a.Try(ctx); err != nil || !lead {
		t.Errorf("the lock after Resign: lead %v, %v", lead, err)
	}
	a.Resign()
}

// Every commit that appends events, of any server, wakes the watchers of
// the schema (LISTEN/NOTIFY, sent in the commit); a commit without events
// does not.
func TestWatchEventsIsToldOfEveryCommitWithEvents(t *testing.T) {
	url := pgtest.URL(t)
	writer, reader := openURL(t, url), openURL(t, url)
	defer writer.Close()
	defer reader.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	woke := make(chan struct{}, 16)
	go reader.WatchEvents(ctx, func() { woke <- struct{}{} })
	wait := func(what string) {
		t.Helper()
		select {
		case <-woke:
		case <-time.After(5 * time.Second):
			t.Fatalf("no wake-up %s", what)
		}
	}
	wait("at the connection")
	if err := writer.Commit(ctx, store.Batch{KV: map[string][]byte{"k": []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	if err := writer.Commit(ctx, store.Batch{Events: []store.Event{{At: time.Now(), Kind: "policy_changed"}}}); err != nil {
		t.Fatal(err)
	}
	wait("after a commit with an event")
	select {
	case <-woke:
		t.Error("woken twice: once for the commit without events")
	case <-time.After(200 * time.Millisecond):
	}
}
