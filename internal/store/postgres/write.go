package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/allot-sched/allot/internal/store"
)

// The write statements. Each writes all rows of one kind in one statement:
// the rows travel as one array per column and unnest spreads them back
// into rows; for jobs and events, WITH ORDINALITY keeps their order, so
// that seq and event IDs follow the slice. A batch of 10,000 task updates
// is one statement, not 10,000.
const (
	upsertJobsSQL = `INSERT INTO jobs (id, queue, share, requestor, submitter, state, priority, urgent, submitted, ended, spec)
		SELECT id, queue, share, requestor, submitter, state, priority, urgent, submitted, ended, spec
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::boolean[],
			$9::bigint[], $10::bigint[], $11::bytea[]) WITH ORDINALITY
			AS r (id, queue, share, requestor, submitter, state, priority, urgent, submitted, ended, spec, ord)
		ORDER BY ord
		ON CONFLICT (id) DO UPDATE SET queue = excluded.queue, share = excluded.share, requestor = excluded.requestor,
			submitter = excluded.submitter, state = excluded.state, priority = excluded.priority, urgent = excluded.urgent,
			submitted = excluded.submitted, ended = excluded.ended, spec = COALESCE(excluded.spec, jobs.spec)`

	insertJobSQL = `INSERT INTO jobs (id, queue, share, requestor, submitter, state, priority, urgent, submitted, ended, spec)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (id) DO NOTHING RETURNING seq`

	// Tasks and workers need no order: a batch names each row once
	// (commitParts folds the others), and they get no IDs.
	tasksSelect = `SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::bigint[], $7::text[],
			$8::bigint[], $9::bigint[], $10::bigint[], $11::bytea[], $12::bytea[], $13::text[], $14::bytea[], $15::bytea[],
			$16::float8[], $17::bigint[])`
	insertTasksSQL = `INSERT INTO tasks (job, name, idx, state, attempt, fails, worker, started, ended, exit_code, output, result, reason, message, secret_hash, cpu_seconds, peak_memory) ` +
		tasksSelect
	upsertTasksSQL = insertTasksSQL + `
		ON CONFLICT (job, name) DO UPDATE SET idx = excluded.idx, state = excluded.state, attempt = excluded.attempt,
			fails = excluded.fails, worker = excluded.worker, started = excluded.started, ended = excluded.ended,
			exit_code = excluded.exit_code, output = excluded.output, result = excluded.result, reason = excluded.reason,
			message = excluded.message, secret_hash = excluded.secret_hash, cpu_seconds = excluded.cpu_seconds,
			peak_memory = excluded.peak_memory`

	upsertWorkersSQL = `INSERT INTO workers (name, state, registered, last_seen, spec)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bytea[])
		ON CONFLICT (name) DO UPDATE SET state = excluded.state, registered = excluded.registered,
			last_seen = excluded.last_seen, spec = COALESCE(excluded.spec, workers.spec)`

	insertEventsSQL = `INSERT INTO events (at, kind, job, task, worker, reason, message, data)
		SELECT at, kind, job, task, worker, reason, message, data
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[], $8::bytea[]) WITH ORDINALITY
			AS r (at, kind, job, task, worker, reason, message, data, ord)
		ORDER BY ord`

	upsertKVSQL = `INSERT INTO kv (key, value) SELECT * FROM unnest($1::text[], $2::bytea[])
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`
	deleteKVSQL = `DELETE FROM kv WHERE key = ANY($1::text[])`

	fenceSQL = `SELECT allot_fence($1)`
)

// CreateJob implements store.Store.
func (s *Store) CreateJob(ctx context.Context, j store.Job, tasks []store.Task, events []store.Event) (store.Job, error) {
	fail := func(err error) (store.Job, error) {
		return store.Job{}, fmt.Errorf("postgres: create job %q: %w", j.ID, err)
	}
	if err := store.CheckJob(j); err != nil {
		return fail(err)
	}
	if err := store.CheckJobTasks(j.ID, tasks); err != nil {
		return fail(err)
	}
	own := make([]store.Task, len(tasks))
	for i, t := range tasks {
		t.Job = j.ID
		own[i] = t
	}
	tcols, err := taskColumns(own, func(i int) string { return fmt.Sprintf("tasks[%d] (%s)", i, own[i].Name) })
	if err != nil {
		return fail(err)
	}
	ecols, err := eventColumns(events)
	if err != nil {
		return fail(err)
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, insertJobSQL, jobArgs(j)...).Scan(&j.Seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrDuplicate
		}
		if err != nil {
			return classify(err)
		}
		b := &pgx.Batch{}
		if len(own) > 0 {
			b.Queue(insertTasksSQL, tcols...)
		}
		if len(events) > 0 {
			b.Queue(insertEventsSQL, ecols...)
			b.Queue(notifyEventsSQL)
		}
		return classify(tx.SendBatch(ctx, b).Close())
	})
	if err != nil {
		return fail(err)
	}
	j.Submitted, j.Ended = utc(j.Submitted), utc(j.Ended)
	return j, nil
}

// inTx runs fn in a write transaction, behind the fence, and commits.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", classify(err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if epoch := s.epoch.Load(); epoch != 0 {
		if _, err := tx.Exec(ctx, fenceSQL, epoch); err != nil {
			return classify(err)
		}
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", classify(err))
	}
	return nil
}

// Commit implements store.Store. The batch is one pipelined round trip:
// the fence check (when fenced), then jobs, tasks, workers, events and KV,
// one statement each, in one implicit transaction that commits at the end
// of the pipeline, or rolls back whole at its first error.
func (s *Store) Commit(ctx context.Context, b store.Batch) error {
	if err := s.commit(ctx, b); err != nil {
		return fmt.Errorf("postgres: commit: %w", err)
	}
	return nil
}

// part is one statement of a commit and what to call its rows in an error.
type part struct {
	what string
	sql  string
	args []any
}

func (s *Store) commit(ctx context.Context, b store.Batch) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if b.Empty() {
		return nil
	}
	parts, err := commitParts(b)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	batch := &pgx.Batch{}
	if epoch := s.epoch.Load(); epoch != 0 {
		parts = append([]part{{what: "fence", sql: fenceSQL, args: []any{epoch}}}, parts...)
	}
	for _, p := range parts {
		batch.Queue(p.sql, p.args...)
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return classify(err)
	}
	defer c.Release()
	br := c.SendBatch(ctx, batch)
	var failed error
	for _, p := range parts {
		if _, err := br.Exec(); err != nil {
			failed = fmt.Errorf("%s: %w", p.what, classify(err))
			break
		}
	}
	if err := br.Close(); failed == nil && err != nil {
		failed = fmt.Errorf("end of the transaction: %w", classify(err))
	}
	if failed == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(failed, &pe) && pe.Code == "23503" {
		// The transaction is gone; name the task whose job is missing.
		if named := s.nameMissingJob(ctx, b); named != nil {
			return fmt.Errorf("%w (%w)", named, pe)
		}
	}
	return failed
}

// commitParts validates every row of b (the shared checks, naming the row
// at fault) and returns the statements that write it. Rows that name the
// same key twice are folded into one, the later winning, as a sequence of
// upserts would leave them (a nil spec keeping the earlier one): one
// INSERT … ON CONFLICT cannot touch a row twice.
func commitParts(b store.Batch) ([]part, error) {
	var parts []part
	if len(b.Jobs) > 0 {
		for i, j := range b.Jobs {
			if err := store.CheckJob(j); err != nil {
				return nil, fmt.Errorf("jobs[%d] (%s): %w", i, j.ID, err)
			}
		}
		jobs := foldJobs(b.Jobs)
		parts = append(parts, part{"jobs", upsertJobsSQL, jobColumns(jobs)})
	}
	if len(b.Tasks) > 0 {
		tasks := foldTasks(b.Tasks)
		args, err := taskColumns(tasks, func(i int) string { return fmt.Sprintf("tasks (%s/%s)", tasks[i].Job, tasks[i].Name) })
		if err != nil {
			// Name the row by its place in the batch, as SQLite does.
			for i, t := range b.Tasks {
				if cerr := store.CheckTask(t); cerr != nil {
					return nil, fmt.Errorf("tasks[%d] (%s/%s): %w", i, t.Job, t.Name, cerr)
				}
			}
			return nil, err
		}
		parts = append(parts, part{"tasks", upsertTasksSQL, args})
	}
	if len(b.Workers) > 0 {
		for i, w := range b.Workers {
			if err := store.CheckWorker(w); err != nil {
				return nil, fmt.Errorf("workers[%d] (%s): %w", i, w.Name, err)
			}
		}
		parts = append(parts, part{"workers", upsertWorkersSQL, workerColumns(foldWorkers(b.Workers))})
	}
	if len(b.Events) > 0 {
		args, err := eventColumns(b.Events)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part{"events", insertEventsSQL, args})
		parts = append(parts, part{"events' notification", notifyEventsSQL, nil})
	}
	if len(b.KV) > 0 {
		keys := make([]string, 0, len(b.KV))
		for k := range b.KV {
			if err := store.CheckKVKey(k); err != nil {
				return nil, err
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var put, del []string
		var values [][]byte
		for _, k := range keys {
			if v := b.KV[k]; v == nil {
				del = append(del, k)
			} else {
				put = append(put, k)
				values = append(values, nonNil(v))
			}
		}
		if len(put) > 0 {
			parts = append(parts, part{"kv", upsertKVSQL, []any{put, values}})
		}
		if len(del) > 0 {
			parts = append(parts, part{"kv", deleteKVSQL, []any{del}})
		}
	}
	return parts, nil
}

// nameMissingJob finds, after a commit was refused for a task whose job is
// not stored, the first such task of b, as an error that names it; nil
// when it cannot tell.
func (s *Store) nameMissingJob(ctx context.Context, b store.Batch) error {
	inBatch := make(map[string]bool, len(b.Jobs))
	for _, j := range b.Jobs {
		inBatch[j.ID] = true
	}
	var ids []string
	for _, t := range b.Tasks {
		if !inBatch[t.Job] && !slices.Contains(ids, t.Job) {
			ids = append(ids, t.Job)
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT id FROM jobs WHERE id = ANY($1::text[])`, ids)
	if err != nil {
		return nil
	}
	stored, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil
	}
	for i, t := range b.Tasks {
		if !inBatch[t.Job] && !slices.Contains(stored, t.Job) {
			return fmt.Errorf("tasks[%d] (%s/%s): job is not stored: %w", i, t.Job, t.Name, store.ErrInvalid)
		}
	}
	return nil
}

// foldJobs keeps one row per job ID, in the order of first appearance,
// with the fields of the last row and the last non-nil spec.
func foldJobs(in []store.Job) []store.Job {
	at := make(map[string]int, len(in))
	out := make([]store.Job, 0, len(in))
	for _, j := range in {
		i, seen := at[j.ID]
		if !seen {
			at[j.ID] = len(out)
			out = append(out, j)
			continue
		}
		if j.Spec == nil {
			j.Spec = out[i].Spec
		}
		out[i] = j
	}
	return out
}

func foldTasks(in []store.Task) []store.Task {
	type key struct{ job, name string }
	at := make(map[key]int, len(in))
	out := make([]store.Task, 0, len(in))
	for _, t := range in {
		k := key{t.Job, t.Name}
		if i, seen := at[k]; seen {
			out[i] = t
			continue
		}
		at[k] = len(out)
		out = append(out, t)
	}
	return out
}

func foldWorkers(in []store.Worker) []store.Worker {
	at := make(map[string]int, len(in))
	out := make([]store.Worker, 0, len(in))
	for _, w := range in {
		i, seen := at[w.Name]
		if !seen {
			at[w.Name] = len(out)
			out = append(out, w)
			continue
		}
		if w.Spec == nil {
			w.Spec = out[i].Spec
		}
		out[i] = w
	}
	return out
}

// jobArgs are the values of insertJobSQL for j.
func jobArgs(j store.Job) []any {
	return []any{j.ID, j.Queue, j.Share, j.Requestor, j.Submitter, j.State, int64(j.Priority), j.Urgent,
		timeValue(j.Submitted), timeValue(j.Ended), jsonValue(j.Spec)}
}

// jobColumns are the arrays of upsertJobsSQL for checked jobs.
func jobColumns(jobs []store.Job) []any {
	n := len(jobs)
	var (
		id, queue, share, requestor, submitter, state = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		priority                                      = make([]int64, n)
		urgent                                        = make([]bool, n)
		submitted, ended                              = make([]*int64, n), make([]*int64, n)
		spec                                          = make([][]byte, n)
	)
	for i, j := range jobs {
		id[i], queue[i], share[i], requestor[i], submitter[i], state[i] = j.ID, j.Queue, j.Share, j.Requestor, j.Submitter, j.State
		priority[i], urgent[i] = int64(j.Priority), j.Urgent
		submitted[i], ended[i], spec[i] = timeValue(j.Submitted), timeValue(j.Ended), jsonValue(j.Spec)
	}
	return []any{id, queue, share, requestor, submitter, state, priority, urgent, submitted, ended, spec}
}

// taskColumns checks tasks (store.CheckTask) and returns the arrays of
// the task statements; name says which row a refusal is about.
func taskColumns(tasks []store.Task, name func(int) string) ([]any, error) {
	n := len(tasks)
	var (
		job, tname, state, worker, reason = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		idx, attempt, fails               = make([]int64, n), make([]int64, n), make([]int64, n)
		started, ended, exit              = make([]*int64, n), make([]*int64, n), make([]*int64, n)
		output, result, message, hash     = make([][]byte, n), make([][]byte, n), make([][]byte, n), make([][]byte, n)
		cpuSeconds, peakMemory            = make([]float64, n), make([]int64, n)
	)
	for i, t := range tasks {
		if err := store.CheckTask(t); err != nil {
			return nil, fmt.Errorf("%s: %w", name(i), err)
		}
		job[i], tname[i], state[i], worker[i], reason[i] = t.Job, t.Name, t.State, t.Worker, t.Reason
		idx[i], attempt[i], fails[i] = int64(t.Index), int64(t.Attempt), int64(t.Fails)
		started[i], ended[i] = timeValue(t.Started), timeValue(t.Ended)
		if t.ExitCode != nil {
			code := int64(*t.ExitCode)
			exit[i] = &code
		}
		if t.Output != "" {
			output[i] = []byte(t.Output)
		}
		result[i], message[i] = jsonValue(t.Result), []byte(t.Message)
		if message[i] == nil {
			message[i] = []byte{}
		}
		if len(t.SecretHash) > 0 {
			hash[i] = t.SecretHash
		}
		cpuSeconds[i], peakMemory[i] = t.CPUSeconds, t.PeakMemory
	}
	return []any{job, tname, idx, state, attempt, fails, worker, started, ended, exit, output, result, reason, message, hash,
		cpuSeconds, peakMemory}, nil
}

// workerColumns are the arrays of upsertWorkersSQL for checked workers.
func workerColumns(ws []store.Worker) []any {
	n := len(ws)
	name, state := make([]string, n), make([]string, n)
	registered, lastSeen := make([]*int64, n), make([]*int64, n)
	spec := make([][]byte, n)
	for i, w := range ws {
		name[i], state[i] = w.Name, w.State
		registered[i], lastSeen[i], spec[i] = timeValue(w.Registered), timeValue(w.LastSeen), jsonValue(w.Spec)
	}
	return []any{name, state, registered, lastSeen, spec}
}

// eventColumns checks events (store.CheckEvent) and returns the arrays of
// insertEventsSQL.
func eventColumns(evs []store.Event) ([]any, error) {
	n := len(evs)
	at := make([]*int64, n)
	kind, job, task, worker, reason := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	message, data := make([][]byte, n), make([][]byte, n)
	for i, e := range evs {
		if err := store.CheckEvent(e); err != nil {
			return nil, fmt.Errorf("events[%d] (%s): %w", i, e.Kind, err)
		}
		at[i] = timeValue(e.At)
		kind[i], job[i], task[i], worker[i], reason[i] = e.Kind, e.Job, e.Task, e.Worker, e.Reason
		message[i], data[i] = nonNil([]byte(e.Message)), jsonValue(e.Data)
	}
	return []any{at, kind, job, task, worker, reason, message, data}, nil
}

// timeValue is the column value for a time store.CheckTime accepted: UTC
// Unix nanoseconds, or NULL for the zero time (so the Unix epoch itself
// stays distinct from "not set").
func timeValue(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	ns := t.UnixNano()
	return &ns
}

// jsonValue is the column value for a JSON document store.CheckJSON
// accepted: its bytes as given, or NULL when it is empty.
func jsonValue(doc json.RawMessage) []byte {
	if len(doc) == 0 {
		return nil
	}
	return doc
}

// nonNil is b, or an empty slice for nil: a NOT NULL bytea column.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// utc is how the store reads a time back: UTC, no monotonic reading, and
// the zero time unchanged.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}
