package storetest

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/allot-sched/allot/internal/store"
)

// FullDisk wraps a store so that its writes fail as on a full disk for as
// long as the test says: while full, Commit, CreateJob, PutToken and
// RevokeToken write nothing and return a *store.UnavailableError with the
// cause "disk full" (wrapping ENOSPC), as the SQLite store does; reads go
// through. What sits above a store is tested with it at a moment of the
// test's choosing, which a real file system cannot give.
type FullDisk struct {
	store.Store

	mu      sync.Mutex
	full    bool
	refused int
}

// NewFullDisk wraps s; it starts with room.
func NewFullDisk(s store.Store) *FullDisk { return &FullDisk{Store: s} }

// Fill makes every write fail from now on.
func (f *FullDisk) Fill() { f.set(true) }

// Free makes room again: writes go through.
func (f *FullDisk) Free() { f.set(false) }

func (f *FullDisk) set(full bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.full = full
}

// Refused is how many writes failed so far.
func (f *FullDisk) Refused() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}

// refuse reports whether the disk is full, counting the write it refuses.
func (f *FullDisk) refuse(what string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.full {
		return nil
	}
	f.refused++
	return &store.UnavailableError{Cause: "disk full", Err: fmt.Errorf("%s: write allot.db-wal: %w", what, syscall.ENOSPC)}
}

// Commit implements store.Store.
func (f *FullDisk) Commit(ctx context.Context, b store.Batch) error {
	if err := f.refuse("commit"); err != nil {
		return err
	}
	return f.Store.Commit(ctx, b)
}

// CreateJob implements store.Store.
func (f *FullDisk) CreateJob(ctx context.Context, j store.Job, tasks []store.Task, events []store.Event) (store.Job, error) {
	if err := f.refuse("create job"); err != nil {
		return store.Job{}, err
	}
	return f.Store.CreateJob(ctx, j, tasks, events)
}

// PutToken implements store.Store.
func (f *FullDisk) PutToken(ctx context.Context, t store.Token) error {
	if err := f.refuse("put token"); err != nil {
		return err
	}
	return f.Store.PutToken(ctx, t)
}

// RevokeToken implements store.Store.
func (f *FullDisk) RevokeToken(ctx context.Context, id string, at time.Time) (store.Token, error) {
	if err := f.refuse("revoke token"); err != nil {
		return store.Token{}, err
	}
	return f.Store.RevokeToken(ctx, id, at)
}
