package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/allot-sched/allot/internal/store"
)

// Column lists of the reads, in the order the scan functions expect.
const (
	jobCols   = `seq, id, queue, share, requestor, submitter, state, priority, urgent, submitted, ended, spec`
	taskCols  = `job, name, idx, state, attempt, fails, worker, started, ended, exit_code, output, result, reason, message, secret_hash, cpu_seconds, peak_memory`
	tTaskCols = `t.job, t.name, t.idx, t.state, t.attempt, t.fails, t.worker, t.started, t.ended, t.exit_code, t.output, t.result, t.reason, t.message, t.secret_hash, t.cpu_seconds, t.peak_memory`
	eventCols = `id, at, kind, job, task, worker, reason, message, data`
)

// snapshot runs fn in a read-only REPEATABLE READ transaction: every
// query in it sees the same commit, and the writer goes on meanwhile.
func (s *Store) snapshot(ctx context.Context, fn func(pgx.Tx) error) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("begin: %w", classify(err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	return classify(fn(tx))
}

// Job implements store.Store. The job and its tasks come from one
// snapshot.
func (s *Store) Job(ctx context.Context, id string) (store.Job, []store.Task, error) {
	var (
		j     store.Job
		tasks []store.Task
	)
	err := s.snapshot(ctx, func(tx pgx.Tx) error {
		var err error
		j, err = scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		tasks, err = queryTasks(ctx, tx, `SELECT `+taskCols+` FROM tasks WHERE job = $1 ORDER BY idx, name`, id)
		return err
	})
	if err != nil {
		return store.Job{}, nil, fmt.Errorf("postgres: job %q: %w", id, err)
	}
	return j, tasks, nil
}

// JobHeader implements store.Store.
func (s *Store) JobHeader(ctx context.Context, id string) (store.Job, error) {
	fail := func(err error) (store.Job, error) { return store.Job{}, fmt.Errorf("postgres: job %q: %w", id, err) }
	if err := s.checkOpen(); err != nil {
		return fail(err)
	}
	j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(store.ErrNotFound)
	}
	if err != nil {
		return fail(classify(err))
	}
	return j, nil
}

// Jobs implements store.Store.
func (s *Store) Jobs(ctx context.Context, f store.JobFilter) ([]store.Job, error) {
	if err := s.checkOpen(); err != nil {
		return nil, fmt.Errorf("postgres: jobs: %w", err)
	}
	where, args, order := "seq > $1", []any{f.AfterSeq}, "seq"
	if f.Newest {
		where, order = "seq < $1", "seq DESC"
		if f.AfterSeq <= 0 {
			args[0] = int64(math.MaxInt64)
		}
	}
	add := func(cond string, v any) {
		args = append(args, v)
		where += fmt.Sprintf(" AND "+cond, len(args))
	}
	if len(f.States) > 0 {
		add("state = ANY($%d::text[])", f.States)
	}
	if f.Queue != "" {
		add("queue = $%d", f.Queue)
	}
	if f.Share != "" {
		add("share = $%d", f.Share)
	}
	if len(f.Queues) > 0 {
		add("queue = ANY($%d::text[])", f.Queues)
	}
	if len(f.Shares) > 0 {
		add("share = ANY($%d::text[])", f.Shares)
	}
	args = append(args, limit(f.Limit))
	q := fmt.Sprintf(`SELECT `+jobCols+` FROM jobs WHERE %s ORDER BY %s LIMIT $%d`, where, order, len(args))
	jobs, err := queryJobs(ctx, s.pool, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: jobs: %w", classify(err))
	}
	return jobs, nil
}

// Unfinished implements store.Store. It reads the jobs_unfinished partial
// index, so its cost grows with the number of live jobs, not with history.
func (s *Store) Unfinished(ctx context.Context) ([]store.Job, map[string][]store.Task, error) {
	var (
		jobs  []store.Job
		tasks = make(map[string][]store.Task)
	)
	err := s.snapshot(ctx, func(tx pgx.Tx) error {
		var err error
		jobs, err = queryJobs(ctx, tx, `SELECT `+jobCols+` FROM jobs WHERE `+unfinishedWhere+` ORDER BY seq`)
		if err != nil {
			return err
		}
		all, err := queryTasks(ctx, tx, `SELECT `+tTaskCols+` FROM jobs j JOIN tasks t ON t.job = j.id
			WHERE j.`+unfinishedWhere+` ORDER BY j.seq, t.idx, t.name`)
		if err != nil {
			return err
		}
		for _, t := range all {
			tasks[t.Job] = append(tasks[t.Job], t)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: unfinished: %w", err)
	}
	return jobs, tasks, nil
}

// Events implements store.Store.
func (s *Store) Events(ctx context.Context, f store.EventFilter) ([]store.Event, error) {
	fail := func(err error) ([]store.Event, error) { return nil, fmt.Errorf("postgres: events: %w", err) }
	if err := s.checkOpen(); err != nil {
		return fail(err)
	}
	q, args := `SELECT `+eventCols+` FROM events WHERE id > $1`, []any{f.AfterID}
	if f.Job != "" {
		q += ` AND job = $2`
		args = append(args, f.Job)
	}
	args = append(args, limit(f.Limit))
	q += fmt.Sprintf(` ORDER BY id LIMIT $%d`, len(args))
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return fail(classify(err))
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		var (
			e             store.Event
			at            *int64
			message, data []byte
		)
		if err := rows.Scan(&e.ID, &at, &e.Kind, &e.Job, &e.Task, &e.Worker, &e.Reason, &message, &data); err != nil {
			return fail(err)
		}
		e.At, e.Message, e.Data = timeOf(at), string(message), jsonOf(data)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return fail(classify(err))
	}
	return out, nil
}

// Workers implements store.Store.
func (s *Store) Workers(ctx context.Context) ([]store.Worker, error) {
	fail := func(err error) ([]store.Worker, error) { return nil, fmt.Errorf("postgres: workers: %w", err) }
	if err := s.checkOpen(); err != nil {
		return fail(err)
	}
	rows, err := s.pool.Query(ctx, `SELECT name, state, registered, last_seen, spec FROM workers ORDER BY name`)
	if err != nil {
		return fail(classify(err))
	}
	defer rows.Close()
	var out []store.Worker
	for rows.Next() {
		var (
			w                    store.Worker
			registered, lastSeen *int64
			spec                 []byte
		)
		if err := rows.Scan(&w.Name, &w.State, &registered, &lastSeen, &spec); err != nil {
			return fail(err)
		}
		w.Registered, w.LastSeen, w.Spec = timeOf(registered), timeOf(lastSeen), jsonOf(spec)
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return fail(classify(err))
	}
	return out, nil
}

// KV implements store.Store.
func (s *Store) KV(ctx context.Context, key string) ([]byte, error) {
	fail := func(err error) ([]byte, error) { return nil, fmt.Errorf("postgres: kv %q: %w", key, err) }
	if err := s.checkOpen(); err != nil {
		return fail(err)
	}
	var v []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM kv WHERE key = $1`, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(store.ErrNotFound)
	}
	if err != nil {
		return fail(classify(err))
	}
	return nonNil(v), nil // stored, even if empty
}

// querier is what a pool and a transaction share.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func scanJob(r pgx.Row) (store.Job, error) {
	var (
		j                store.Job
		priority         int64
		submitted, ended *int64
		spec             []byte
	)
	if err := r.Scan(&j.Seq, &j.ID, &j.Queue, &j.Share, &j.Requestor, &j.Submitter, &j.State, &priority, &j.Urgent,
		&submitted, &ended, &spec); err != nil {
		return store.Job{}, err
	}
	j.Priority = int(priority)
	j.Submitted, j.Ended, j.Spec = timeOf(submitted), timeOf(ended), jsonOf(spec)
	return j, nil
}

func queryJobs(ctx context.Context, q querier, query string, args ...any) ([]store.Job, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

func queryTasks(ctx context.Context, q querier, query string, args ...any) ([]store.Task, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Task
	for rows.Next() {
		var (
			t                             store.Task
			idx, attempt, fails           int64
			started, ended, exit          *int64
			output, result, message, hash []byte
		)
		if err := rows.Scan(&t.Job, &t.Name, &idx, &t.State, &attempt, &fails, &t.Worker,
			&started, &ended, &exit, &output, &result, &t.Reason, &message, &hash,
			&t.CPUSeconds, &t.PeakMemory); err != nil {
			return nil, err
		}
		t.Index, t.Attempt, t.Fails = int(idx), int(attempt), int(fails)
		t.Started, t.Ended = timeOf(started), timeOf(ended)
		if exit != nil {
			code := int(*exit)
			t.ExitCode = &code
		}
		t.Output, t.Result, t.Message = string(output), jsonOf(result), string(message)
		if len(hash) > 0 {
			t.SecretHash = hash
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// timeOf reads a time column back: NULL is the zero time, anything else is
// UTC.
func timeOf(ns *int64) time.Time {
	if ns == nil {
		return time.Time{}
	}
	return time.Unix(0, *ns).UTC()
}

// jsonOf reads a JSON column back: NULL (or empty) is nil.
func jsonOf(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// limit is the SQL LIMIT for a filter's Limit: NULL is no limit.
func limit(n int) *int64 {
	if n <= 0 {
		return nil
	}
	v := int64(n)
	return &v
}
