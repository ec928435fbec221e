package control

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// gatedStore holds every Commit until the test lets it through, and
// counts the commits under way.
type gatedStore struct {
	store.Store
	entered chan struct{} // a commit began
	release chan struct{} // let one commit through
	mu      sync.Mutex
	active  int
	most    int
	jobs    []int // jobs stored by each commit
}

func (g *gatedStore) Commit(ctx context.Context, b store.Batch) error {
	g.mu.Lock()
	g.active++
	g.most = max(g.most, g.active)
	g.jobs = append(g.jobs, len(b.Jobs))
	g.mu.Unlock()
	g.entered <- struct{}{}
	<-g.release
	err := g.Store.Commit(ctx, b)
	g.mu.Lock()
	g.active--
	g.mu.Unlock()
	return err
}

// The loop applies the requests of round N+1 while round N is being
// committed, but answers them only once N and N+1 are both stored, and
// never commits two rounds at once.
func TestARoundIsAnsweredOnlyOnceItAndTheRoundsBeforeItAreStored(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := &gatedStore{Store: st, entered: make(chan struct{}, 4), release: make(chan struct{})}
	c, err := New(context.Background(), Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}},
		CycleEvery: time.Hour, Logger: slog.New(slog.DiscardHandler)}, g)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	applied := make(chan string, 2)
	submit := func(id string) <-chan error {
		out := make(chan error, 1)
		go func() {
			_, err := c.do(ctx, func(t *txn) (any, error) {
				applied <- id
				return c.submit(ctx, t, oneTask(id), "", "", false, c.gone.epoch.Load())
			})
			out <- err
		}()
		return out
	}
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	answered := func(ch <-chan error) bool {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatal(err)
			}
			return true
		default:
			return false
		}
	}

	a := submit("a")
	<-applied
	wait(g.entered, "round 1's commit")
	b := submit("b")
	if id := <-applied; id != "b" { // while round 1 commits
		t.Fatalf("applied %s, want b", id)
	}
	if answered(a) || answered(b) {
		t.Fatal("a submission was answered before its round was stored")
	}
	g.release <- struct{}{} // round 1 is stored
	if err := <-a; err != nil {
		t.Fatal(err)
	}
	wait(g.entered, "round 2's commit")
	if answered(b) {
		t.Fatal("round 2 was answered before it was stored")
	}
	g.release <- struct{}{}
	if err := <-b; err != nil {
		t.Fatal(err)
	}
	if g.most != 1 {
		t.Errorf("%d commits ran at once, want 1", g.most)
	}
	cancel()
	<-done
}

// A worker that registers again in a round being committed is not declared
// lost, for its old mailbox's silence, by the tick of the next round.
func TestWorkerRegisteringInTheRoundBeingCommittedIsNotLost(t *testing.T) {
	clock := newFakeClock()
	st, err := sqlite.Open(sqlite.Memory)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := New(context.Background(), Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}},
		HeartbeatTimeout: 30 * time.Second, Clock: clock.Now, Logger: slog.New(slog.DiscardHandler)}, st)
	if err != nil {
		t.Fatal(err)
	}
	register := func() (*request, chan error) {
		errc := make(chan error, 1)
		go func() {
			_, err := c.Register(context.Background(), api.Register{Name: "w1", Resources: spec.Resources{CPU: 1000, Memory: 1024}})
			errc <- err
		}()
		return <-c.reqs, errc
	}
	r, errc := register()
	if err := c.round(context.Background(), []*request{r}, false); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	clock.Add(31 * time.Second)
	r, errc = register()
	t1 := c.prepare([]*request{r}, false)
	f := c.launch(context.Background(), t1, []*request{r})
	t2 := c.prepare(nil, true) // the tick, while round 1 commits
	if err := c.land(context.Background(), f, <-f.done); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := c.commitUntilStored(context.Background(), t2); err != nil {
		t.Fatal(err)
	}
	c.finish(t2, nil)
	if got := c.workers["w1"].rec.State; got != "ready" {
		t.Fatalf("w1 is %s after registering in the round being committed, want ready", got)
	}
}

// Submissions from many clients that arrive while a round is committed
// share the next round and its one commit (group commit across requests).
func TestSubmissionsFromManyClientsShareOneCommit(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := &gatedStore{Store: st, entered: make(chan struct{}, 4), release: make(chan struct{})}
	c, err := New(context.Background(), Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}},
		CycleEvery: time.Hour, Logger: slog.New(slog.DiscardHandler)}, g)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	applied := make(chan struct{}, 16)
	submit := func(id string) <-chan error {
		out := make(chan error, 1)
		go func() {
			// What Submit does, with word of when the loop applied it.
			_, err := c.do(ctx, func(t *txn) (any, error) {
				applied <- struct{}{}
				return c.submit(ctx, t, oneTask(id), "", "", false, c.gone.epoch.Load())
			})
			out <- err
		}()
		return out
	}
	first := submit("first")
	<-applied
	<-g.entered // round 1's commit is under way
	const clients = 8
	var answers []<-chan error
	for i := range clients {
		answers = append(answers, submit(fmt.Sprintf("c%d", i)))
	}
	for range clients {
		<-applied
	}
	g.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	<-g.entered
	g.release <- struct{}{}
	for _, a := range answers {
		if err := <-a; err != nil {
			t.Fatal(err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.jobs) != 2 || g.jobs[1] != clients {
		t.Errorf("jobs stored per commit: %v, want [1 %d]: the %d clients' submissions in one commit", g.jobs, clients, clients)
	}
}
