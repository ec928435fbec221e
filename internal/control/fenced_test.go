package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/classload"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// fencingStore refuses every commit with store.ErrFenced once fenced, as
// a shared store does after another server took the lead, and counts the
// commits tried from then on.
type fencingStore struct {
	store.Store
	fenced atomic.Bool
	tried  atomic.Int32
}

func (f *fencingStore) Commit(ctx context.Context, b store.Batch) error {
	if f.fenced.Load() {
		f.tried.Add(1)
		return fmt.Errorf("%w: the leader epoch is 2, this server writes for epoch 1", store.ErrFenced)
	}
	return f.Store.Commit(ctx, b)
}

// A fenced leader stops its loop at the first refused commit and writes
// nothing more: not the policies' history at stop either. The callers of
// the refused round are told this server does not lead (their change was
// not applied), so that clients move to the leader at once.
func TestAFencedLoopStopsWritesNothingMoreAndAnswersNotLeader(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fs := &fencingStore{Store: st}
	// classload keeps a history the loop saves at stop.
	sched := spec.Scheduling{Queues: []spec.Queue{{Name: "default", Policy: policy.Config{Kind: "classload",
		Settings: &classload.Config{Classes: []classload.LoadClass{{Name: "a", Percent: 50}, {Name: "b", Percent: 50}},
			RebalanceThreshold: 10, RebalanceMinimumDuration: 5 * time.Minute}}}}}
	c, err := New(context.Background(), Config{Scheduling: sched, Logger: slog.New(slog.DiscardHandler)}, fs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	if _, err := c.Register(ctx, api.Register{Name: "w1", Resources: spec.Resources{CPU: 4000, Memory: 8192}, Slots: 2}); err != nil {
		t.Fatal(err)
	}
	fs.fenced.Store(true)
	_, err = c.Register(ctx, api.Register{Name: "w2", Resources: spec.Resources{CPU: 4000, Memory: 8192}, Slots: 2})
	var nl *api.NotLeaderError
	if !errors.As(err, &nl) {
		t.Errorf("a change in the fenced round: %v, want not_leader", err)
	}
	if err := <-done; !errors.Is(err, store.ErrFenced) {
		t.Errorf("the loop ended with %v, want fenced", err)
	}
	if _, err := c.Register(ctx, api.Register{Name: "w3", Resources: spec.Resources{CPU: 4000, Memory: 8192}, Slots: 2}); !errors.As(err, &nl) {
		t.Errorf("a change after the fenced loop stopped: %v, want not_leader", err)
	}
	if n := fs.tried.Load(); n != 1 {
		t.Errorf("%d commits tried once fenced, want only the refused round's", n)
	}
}
