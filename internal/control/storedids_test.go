package control

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// The filter has every ID added, across its layers, and says so of few
// others; until it is loaded it has every ID.
func TestStoredIDsHasWhatWasAddedAndLittleElse(t *testing.T) {
	f := newStoredIDs()
	const added = 3*idFirstLayer + 1000 // three layers and part of a fourth
	ids := make([]string, added)
	for i := range ids {
		ids[i] = fmt.Sprintf("job-%07d", i)
	}
	f.add(ids[:added/2]...)
	f.add(ids[added/2:]...)
	f.add(ids[:100]...) // added again: not counted again
	if !f.mayHold("never-added") {
		t.Fatal("an unloaded filter says an ID is not stored")
	}
	f.loaded.Store(true)
	for _, id := range ids {
		if !f.mayHold(id) {
			t.Fatalf("%s was added, but the filter says it is not stored", id)
		}
	}
	if len(f.layers) < 2 {
		t.Errorf("%d IDs in %d layer(s) of %d, then doubling", added, len(f.layers), idFirstLayer)
	}
	// An ID added twice counts once; so does one the filter already
	// seemed to have (a false positive: it stays "may be stored").
	n := 0
	for _, l := range f.layers {
		n += l.n
	}
	if n > added || n < added*97/100 {
		t.Errorf("layers count %d IDs, want at most %d and not much fewer", n, added)
	}
	const others = 100000
	false_ := 0
	for i := range others {
		if f.mayHold(fmt.Sprintf("other-%07d", i)) {
			false_++
		}
	}
	if rate := float64(false_) / others; rate > 0.03 {
		t.Errorf("%.2f%% of IDs never added would be read for, want at most 3%%", 100*rate)
	}
}

// headerCounter counts the store's reads of a job by ID.
type headerCounter struct {
	store.Store
	reads atomic.Int64
}

func (h *headerCounter) JobHeader(ctx context.Context, id string) (store.Job, error) {
	h.reads.Add(1)
	return h.Store.JobHeader(ctx, id)
}

// Once the stored IDs are loaded, a submission of a new ID does not read
// the store, and one of a stored ID (a job of an earlier server run) reads
// it and is refused.
func TestNewIDsAreNotReadForOnceTheStoredOnesAreLoaded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "allot.db")
	run := func(st store.Store, body func(c *Controller)) {
		t.Helper()
		c, stop := runOn(t, st)
		defer func() {
			if err := stop(); err != nil {
				t.Error(err)
			}
		}()
		body(c)
	}
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	run(st, func(c *Controller) {
		for i := range 20 {
			if _, err := c.Submit(t.Context(), oneTask(fmt.Sprintf("first-%d", i))); err != nil {
				t.Fatal(err)
			}
		}
	})
	st.Close()

	st, err = sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	counted := &headerCounter{Store: st}
	run(counted, func(c *Controller) {
		deadline := time.Now().Add(testTimeout)
		for !c.stored.loaded.Load() {
			if time.Now().After(deadline) {
				t.Fatal("the stored IDs were never loaded")
			}
			time.Sleep(time.Millisecond)
		}
		before := counted.reads.Load()
		for i := range 50 {
			if _, err := c.Submit(t.Context(), oneTask(fmt.Sprintf("second-%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		if n := counted.reads.Load() - before; n > 2 {
			t.Errorf("50 new IDs read the store %d times, want none (or a rare false positive)", n)
		}
		_, err := c.Submit(t.Context(), secondJob("first-7"))
		wantTaken(t, "a job of an ID stored by the server before", err)
		_, err = c.Submit(t.Context(), secondJob("second-3"))
		wantTaken(t, "a job of an ID stored by this server", err)
	})
}

// slowJobs is a store whose listing of jobs (the stored IDs' load) waits
// for its context to end, as a long read of a large history would.
type slowJobs struct {
	store.Store
	inFlight atomic.Int32
	started  chan struct{}
}

func (s *slowJobs) Jobs(ctx context.Context, f store.JobFilter) ([]store.Job, error) {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	select {
	case s.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// Run does not return while the load of the stored IDs still reads the
// store: the caller closes the store next.
func TestRunEndsAfterTheLoadOfStoredIDs(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	slow := &slowJobs{Store: st, started: make(chan struct{}, 1)}
	_, stop := runOn(t, slow)
	select {
	case <-slow.started:
	case <-time.After(testTimeout):
		t.Fatal("the load of the stored IDs never read the store")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := slow.inFlight.Load(); n != 0 {
		t.Errorf("Run returned with %d reads of the store still running", n)
	}
}

// runOn builds a controller of one queue on st and runs its loop; stop
// ends the loop and returns what Run returned.
func runOn(t *testing.T, st store.Store) (*Controller, func() error) {
	t.Helper()
	c, err := New(context.Background(), Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}},
		Logger: slog.New(slog.DiscardHandler)}, st)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return c, func() error { cancel(); return <-done }
}
