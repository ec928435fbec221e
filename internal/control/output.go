package control

import (
	"context"
	"errors"
	"fmt"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// An attempt's output reaches the server twice: as the worker reads it, in
// chunks (POST /v1/workers/{name}/output), kept in the store up to a limit
// per attempt with the oldest bytes dropped beyond it; and as the tail its
// report carries (store.Task.Output), which is what an agent that does not
// stream leaves. allot logs reads the chunks when there are any, else the
// tail.

// DefaultMaxOutputBytes is Config.MaxOutputBytes when unset: how much of
// each attempt's output the server keeps.
const DefaultMaxOutputBytes = 8 << 20

// AppendOutput stores chunks of the output of attempts worker runs (or
// has just ended). A chunk of an attempt that is no longer the task's
// current one on that worker is dropped, unless the server stopped it and
// its report is still to come: otherwise its output has no reader. A chunk
// without the attempt's secret is refused with ErrForbidden, and nothing of
// the request is stored.
func (c *Controller) AppendOutput(ctx context.Context, worker string, chunks []api.OutputChunk) error {
	if err := CheckOutputChunks(chunks); err != nil {
		return err
	}
	if err := c.seen(worker); err != nil {
		return err
	}
	v, err := c.read(ctx, func(t *txn) (any, error) {
		keep := make([]bool, len(chunks))
		for i, ch := range chunks {
			_, rec := c.task(ch.Job, ch.Task)
			var hash []byte
			switch o := c.owedReport(worker, ch.Attempt); {
			case o != nil:
				// An attempt the server stopped streams the rest of its
				// output after its job was forgotten or its task started
				// again: kept until its report (stopped.go).
				hash = o.secretHash
			case rec != nil && rec.Worker == worker && rec.Attempt == ch.Attempt.Attempt:
				hash = rec.SecretHash
			default:
				continue
			}
			if !hashMatches(hash, ch.Secret) {
				return nil, fmt.Errorf("%w: chunks[%d]: output for attempt %d of %s/%s did not carry the attempt's secret",
					ErrForbidden, i, ch.Attempt.Attempt, ch.Job, ch.Task)
			}
			keep[i] = true
		}
		return keep, nil
	})
	if err != nil {
		return err
	}
	keep := v.([]bool)
	for i, ch := range chunks {
		if !keep[i] {
			continue
		}
		err := c.st.AppendOutput(ctx, store.OutputChunk{Job: ch.Job, Task: ch.Task, Attempt: ch.Attempt.Attempt,
			Offset: ch.Offset, Data: ch.Data}, c.cfg.MaxOutputBytes)
		if errors.Is(err, store.ErrInvalid) {
			// CheckOutputChunks has checked what the store checks: the
			// store's words (its name, its query) are not the caller's.
			c.cfg.Logger.Warn("output chunk refused by the store", "worker", worker, "chunk", i, "err", err)
			return fmt.Errorf("%w: chunks[%d]: the chunk cannot be stored", ErrInvalid, i)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// CheckOutputChunks checks where each chunk lies in its attempt's output
// (store.CheckOutputRange), so that a request with a chunk no store takes
// is refused whole, naming it (chunks[1].offset), before any of it is
// stored.
func CheckOutputChunks(chunks []api.OutputChunk) error {
	var errs model.FieldErrors
	for i, ch := range chunks {
		if msg := store.CheckOutputRange(ch.Offset, len(ch.Data)); msg != "" {
			errs = append(errs, &model.FieldError{Path: fmt.Sprintf("chunks[%d].offset", i), Msg: msg})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// Logs returns the output of a job's tasks (api.LogQuery says which).
func (c *Controller) Logs(ctx context.Context, id string, q api.LogQuery) (api.Logs, error) {
	return (&StoreReader{st: c.st, maxOutput: c.cfg.MaxOutputBytes}).Logs(ctx, id, q)
}

// Logs returns the output of a job's tasks, as Controller.Logs.
func (r *StoreReader) Logs(ctx context.Context, id string, q api.LogQuery) (api.Logs, error) {
	_, tasks, err := r.st.Job(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return api.Logs{}, fmt.Errorf("%w: job %q", ErrNotFound, id)
	}
	if err != nil {
		return api.Logs{}, err
	}
	out := api.Logs{Job: id, Tasks: []api.TaskLog{}}
	exits := &attemptExits{st: r.st, job: id}
	found, most := false, 0
	for _, t := range tasks {
		if q.Task != "" && t.Name != q.Task {
			continue
		}
		found = true
		most = max(most, t.Attempt)
		attempt := t.Attempt
		if q.Attempt > 0 {
			if q.Attempt > t.Attempt && q.Task == "" {
				continue // this task has not had that attempt (yet)
			}
			if q.Attempt > t.Attempt {
				return api.Logs{}, fmt.Errorf("%w: task %s of job %q has had %d attempt(s), not %d", ErrNotFound, t.Name, id, t.Attempt, q.Attempt)
			}
			attempt = q.Attempt
		}
		if attempt == 0 {
			continue // never started
		}
		tl, err := r.attemptLog(ctx, t, attempt, q.Offset, exits)
		if err != nil {
			return api.Logs{}, err
		}
		out.Tasks = append(out.Tasks, tl)
	}
	if q.Task != "" && !found {
		return api.Logs{}, fmt.Errorf("%w: job %q has no task %q", ErrNotFound, id, q.Task)
	}
	if q.Attempt > most {
		return api.Logs{}, fmt.Errorf("%w: the tasks of job %q have had at most %d attempt(s), not %d", ErrNotFound, id, most, q.Attempt)
	}
	return out, nil
}

// attemptLog is the output of one attempt of t from byte from on: the
// streamed chunks, else (an agent that does not stream) the tail its
// report carried.
func (r *StoreReader) attemptLog(ctx context.Context, t store.Task, attempt int, from int64, exits *attemptExits) (api.TaskLog, error) {
	tl := api.TaskLog{Task: t.Name, Attempt: attempt, Running: attempt == t.Attempt && t.State == string(model.TaskRunning)}
	if attempt == t.Attempt {
		tl.ExitCode = t.ExitCode // however it ended, cancelled too
	}
	if tl.ExitCode == nil && !tl.Running {
		// An earlier attempt, or the current one of a task that waits
		// again (requeued while it ran): its accounting record says.
		exit, err := exits.of(ctx, t.Name, attempt)
		if err != nil {
			return tl, err
		}
		tl.ExitCode = exit
	}
	o, err := r.st.Output(ctx, t.Job, t.Name, attempt, r.maxOutput, from)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrNotFound) && attempt == t.Attempt:
		o = store.Output{Total: int64(len(t.Output)), Data: []byte(t.Output)}
		if from > 0 {
			from = min(from, o.Total)
			o.Start, o.Data = from, o.Data[from:]
		}
	case errors.Is(err, store.ErrNotFound):
	default:
		return tl, err
	}
	tl.Output, tl.Offset, tl.Total = string(o.Data), o.Start, o.Total
	tl.Dropped = max(0, o.Start-from)
	return tl, nil
}

// attemptExits gives how a job's ended attempts exited, from their
// accounting records, read once per Logs call (a job of many tasks asked
// for an earlier attempt of each costs one read, not one per task).
type attemptExits struct {
	st   store.Store
	job  string
	exit map[api.Attempt]*int // nil until read
}

// of is how the attempt of task exited; nil when it has no record (or
// its record no exit code).
func (e *attemptExits) of(ctx context.Context, task string, attempt int) (*int, error) {
	if e.exit == nil {
		recs, err := e.st.Attempts(ctx, store.AttemptFilter{Job: e.job})
		if err != nil {
			return nil, err
		}
		e.exit = make(map[api.Attempt]*int, len(recs))
		for _, a := range recs {
			e.exit[api.Attempt{Job: a.Job, Task: a.Task, Attempt: a.Attempt}] = a.ExitCode
		}
	}
	return e.exit[api.Attempt{Job: e.job, Task: task, Attempt: attempt}], nil
}
