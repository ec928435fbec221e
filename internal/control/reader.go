package control

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/store"
)

// StoreReader answers the API's job reads from the store alone, without
// a loop: a replica that does not lead serves them from the store the
// leader writes (docs/ha.md). A job reads as of the leader's last commit;
// its pending tasks carry no scheduling reason (the engine that knows it
// runs on the leader).
//
// Its event streams wake when Notify is called (the PostgreSQL store's
// WatchEvents calls it after every commit that appended events, through
// LISTEN/NOTIFY), and end at Close.
type StoreReader struct {
	st store.Store

	mu        sync.Mutex
	changed   chan struct{}
	closing   chan struct{}
	closeOnce sync.Once
}

// NewStoreReader returns the reads of st.
func NewStoreReader(st store.Store) *StoreReader {
	return &StoreReader{st: st, changed: make(chan struct{}), closing: make(chan struct{})}
}

// Changed returns a channel closed at the next Notify: new events may be
// stored.
func (r *StoreReader) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Notify wakes the event streams waiting on Changed.
func (r *StoreReader) Notify() {
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.changed)
	r.changed = make(chan struct{})
}

// Closing is closed by Close: the event streams end.
func (r *StoreReader) Closing() <-chan struct{} { return r.closing }

// Close ends the event streams (the server shuts down).
func (r *StoreReader) Close() { r.closeOnce.Do(func() { close(r.closing) }) }

// Store returns the store, for the reads the API makes itself.
func (r *StoreReader) Store() store.Store { return r.st }

// Job returns a job with its tasks as stored.
func (r *StoreReader) Job(ctx context.Context, id string) (api.Job, error) {
	j, tasks, err := r.st.Job(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return api.Job{}, fmt.Errorf("%w: job %q", ErrNotFound, id)
	}
	if err != nil {
		return api.Job{}, err
	}
	return withHold(ctx, r.st, withDeadLetter(ctx, r.st, storedView(j, tasks), j)), nil
}

// Jobs lists jobs, as Controller.Jobs.
func (r *StoreReader) Jobs(ctx context.Context, f store.JobFilter) (api.JobList, error) {
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	jobs, err := r.st.Jobs(ctx, f)
	if err != nil {
		return api.JobList{}, err
	}
	out := api.JobList{Jobs: make([]api.Job, 0, len(jobs))}
	for _, j := range jobs {
		out.Jobs = append(out.Jobs, jobHeader(j))
	}
	withHolds(ctx, r.st, out.Jobs)
	if len(jobs) == f.Limit {
		out.Next = jobs[len(jobs)-1].Seq
	}
	return out, nil
}

// Logs returns the output tails of a job's tasks, as Controller.Logs.
func (r *StoreReader) Logs(ctx context.Context, id string) (api.Logs, error) {
	_, tasks, err := r.st.Job(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return api.Logs{}, fmt.Errorf("%w: job %q", ErrNotFound, id)
	}
	if err != nil {
		return api.Logs{}, err
	}
	out := api.Logs{Job: id, Tasks: []api.TaskLog{}}
	for _, t := range tasks {
		if t.Attempt > 0 {
			out.Tasks = append(out.Tasks, api.TaskLog{Task: t.Name, Attempt: t.Attempt, Output: t.Output})
		}
	}
	return out, nil
}
