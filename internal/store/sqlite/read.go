package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/store"
)

// Column lists of the reads, in the order the scan functions expect; the
// write column lists (write.go) plus the keys the store assigns.
var (
	jobCols    = "seq, " + strings.Join(jobColumns, ", ")
	taskCols   = strings.Join(taskColumns, ", ")
	workerCols = strings.Join(workerColumns, ", ")
	eventCols  = "id, " + strings.Join(eventColumns, ", ")
)

// Job implements store.Store. The job and its tasks are read in one
// transaction, so they come from the same commit.
func (s *Store) Job(ctx context.Context, id string) (store.Job, []store.Task, error) {
	var (
		j     store.Job
		tasks []store.Task
	)
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		j, err = scanJob(tx.QueryRowContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		tasks, err = queryTasks(ctx, tx, `SELECT `+taskCols+` FROM tasks WHERE job = ? ORDER BY idx, name`, id)
		return err
	})
	if err != nil {
		return store.Job{}, nil, fmt.Errorf("sqlite: job %q: %w", id, err)
	}
	return j, tasks, nil
}

// JobHeader implements store.Store.
func (s *Store) JobHeader(ctx context.Context, id string) (store.Job, error) {
	j, err := scanJob(s.jobHeader.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("sqlite: job %q: %w", id, err)
	}
	return j, nil
}

// Jobs implements store.Store.
func (s *Store) Jobs(ctx context.Context, f store.JobFilter) ([]store.Job, error) {
	var (
		where = []string{"seq > ?"}
		args  = []any{f.AfterSeq}
		order = "seq"
	)
	if f.Newest {
		where, args, order = []string{"seq < ?"}, []any{f.AfterSeq}, "seq DESC"
		if f.AfterSeq <= 0 {
			args[0] = int64(math.MaxInt64)
		}
	}
	if len(f.States) > 0 {
		where = append(where, "state IN ("+strings.Repeat("?, ", len(f.States)-1)+"?)")
		for _, st := range f.States {
			args = append(args, st)
		}
	}
	if f.Queue != "" {
		where = append(where, "queue = ?")
		args = append(args, f.Queue)
	}
	if f.Share != "" {
		where = append(where, "share = ?")
		args = append(args, f.Share)
	}
	for _, in := range []struct {
		col    string
		values []string
	}{{"queue", f.Queues}, {"share", f.Shares}} {
		if len(in.values) == 0 {
			continue
		}
		where = append(where, in.col+" IN ("+strings.Repeat("?, ", len(in.values)-1)+"?)")
		for _, v := range in.values {
			args = append(args, v)
		}
	}
	args = append(args, limit(f.Limit))
	q := `SELECT ` + jobCols + ` FROM jobs WHERE ` + strings.Join(where, " AND ") + ` ORDER BY ` + order + ` LIMIT ?`
	jobs, err := queryJobs(ctx, s.readers, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: jobs: %w", err)
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
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		jobs, err = queryJobs(ctx, tx, `SELECT `+jobCols+` FROM jobs WHERE `+unfinishedWhere+` ORDER BY seq`)
		if err != nil {
			return err
		}
		all, err := queryTasks(ctx, tx, `SELECT `+prefixed("t.", taskColumns)+` FROM jobs j JOIN tasks t ON t.job = j.id
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
		return nil, nil, fmt.Errorf("sqlite: unfinished: %w", err)
	}
	return jobs, tasks, nil
}

// Events implements store.Store.
func (s *Store) Events(ctx context.Context, f store.EventFilter) ([]store.Event, error) {
	q := `SELECT ` + eventCols + ` FROM events WHERE id > ?`
	args := []any{f.AfterID}
	if f.Job != "" {
		q += ` AND job = ?`
		args = append(args, f.Job)
	}
	q += ` ORDER BY id LIMIT ?`
	args = append(args, limit(f.Limit))
	rows, err := s.readers.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: events: %w", err)
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		var (
			e    store.Event
			at   sql.NullInt64
			data []byte
		)
		if err := rows.Scan(&e.ID, &at, &e.Kind, &e.Job, &e.Task, &e.Worker, &e.Reason, &e.Message, &data); err != nil {
			return nil, fmt.Errorf("sqlite: events: %w", err)
		}
		e.At, e.Data = timeOf(at), jsonOf(data)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: events: %w", err)
	}
	return out, nil
}

// Workers implements store.Store.
func (s *Store) Workers(ctx context.Context) ([]store.Worker, error) {
	rows, err := s.readers.QueryContext(ctx, `SELECT `+workerCols+` FROM workers ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: workers: %w", err)
	}
	defer rows.Close()
	var out []store.Worker
	for rows.Next() {
		var (
			w                    store.Worker
			registered, lastSeen sql.NullInt64
			spec                 []byte
		)
		if err := rows.Scan(&w.Name, &w.State, &registered, &lastSeen, &spec); err != nil {
			return nil, fmt.Errorf("sqlite: workers: %w", err)
		}
		w.Registered, w.LastSeen, w.Spec = timeOf(registered), timeOf(lastSeen), jsonOf(spec)
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: workers: %w", err)
	}
	return out, nil
}

// KV implements store.Store.
func (s *Store) KV(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := s.readers.QueryRowContext(ctx, `SELECT value FROM kv WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: kv %q: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: kv %q: %w", key, err)
	}
	if v == nil {
		v = []byte{} // stored, but empty
	}
	return v, nil
}

// read runs fn in a read transaction on a reader connection: in WAL mode
// every query in it sees the same snapshot, and the writer goes on
// committing meanwhile.
func (s *Store) read(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.readers.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin: %w", s.classify(err))
	}
	defer func() { _ = tx.Rollback() }()
	return s.classify(fn(tx))
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// scanner is what *sql.Row and *sql.Rows share.
type scanner interface {
	Scan(dest ...any) error
}

func scanJob(r scanner) (store.Job, error) {
	var (
		j                store.Job
		priority         int64
		submitted, ended sql.NullInt64
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
	rows, err := q.QueryContext(ctx, query, args...)
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
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Task
	for rows.Next() {
		var (
			t                    store.Task
			idx, attempt, fails  int64
			started, ended, exit sql.NullInt64
			output, result, hash []byte
		)
		if err := rows.Scan(&t.Job, &t.Name, &idx, &t.State, &attempt, &fails, &t.Worker,
			&started, &ended, &exit, &output, &result, &t.Reason, &t.Message, &hash,
			&t.CPUSeconds, &t.PeakMemory); err != nil {
			return nil, err
		}
		t.Index, t.Attempt, t.Fails = int(idx), int(attempt), int(fails)
		t.Started, t.Ended = timeOf(started), timeOf(ended)
		if exit.Valid {
			code := int(exit.Int64)
			t.ExitCode = &code
		}
		t.Output, t.Result = string(output), jsonOf(result)
		if len(hash) > 0 {
			t.SecretHash = hash
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// timeOf reads a time column back: NULL is the zero time, anything else is
// UTC.
func timeOf(ns sql.NullInt64) time.Time {
	if !ns.Valid {
		return time.Time{}
	}
	return time.Unix(0, ns.Int64).UTC()
}

// jsonOf reads a JSON column back: NULL (or empty) is nil.
func jsonOf(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// limit is the SQL LIMIT for a filter's Limit: SQLite reads a negative
// limit as "no limit".
func limit(n int) int64 {
	if n <= 0 {
		return -1
	}
	return int64(n)
}

// prefixed qualifies each column with a table alias.
func prefixed(prefix string, cols []string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = prefix + c
	}
	return strings.Join(out, ", ")
}
