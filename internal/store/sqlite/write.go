package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/allot-sched/allot/internal/store"
)

// stmts are the write statements, prepared once on the writer connection
// and reused by every transaction: a batch of 10,000 task updates must not
// parse and plan SQL 10,000 times.
type stmts struct {
	insertJob              *sql.Stmt // CreateJob: RETURNING seq
	upsertJob              rowStmt
	insertTask, upsertTask rowStmt
	upsertWorker           rowStmt
	insertEvent            rowStmt
	upsertKV, deleteKV     *sql.Stmt
	all                    []*sql.Stmt
}

// rowStmt writes rows of one kind: chunks[k] writes chunkRows[k] rows in
// one statement (a multi-row VALUES list), one writes the rest one at a
// time. Chunks cut the per-statement cost (database/sql and driver calls,
// binding set-up, statement start and end inside SQLite) that a batch
// otherwise pays per row: a batch of thousands of rows goes in chunks of
// 64, and the few rows of each kind a round of small jobs writes (about
// ten jobs, tasks and twenty to forty events) in chunks of 8.
type rowStmt struct {
	one    *sql.Stmt
	chunks [len(chunkRows)]*sql.Stmt
}

// chunkRows are the numbers of rows of the chunk statements, largest
// first; at 15 columns a task chunk of 64 binds 960 values, far below
// SQLite's limit of 32,766.
var chunkRows = [...]int{64, 8}

// insertSQL is INSERT INTO table (cols) VALUES (?, …), … for rows rows,
// followed by suffix (an ON CONFLICT clause).
func insertSQL(table string, cols []string, rows int, suffix string) string {
	tuple := "(" + strings.Repeat("?, ", len(cols)-1) + "?)"
	var b strings.Builder
	b.WriteString("INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES ")
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(tuple)
	}
	b.WriteString(" " + suffix)
	return b.String()
}

// upsertSuffix updates every column but the key; keepIfNull columns keep
// the stored value when the new one is NULL (a nil Spec).
func upsertSuffix(table string, key, cols, keepIfNull []string) string {
	var set []string
	for _, c := range cols {
		switch {
		case slices.Contains(key, c):
		case slices.Contains(keepIfNull, c):
			set = append(set, fmt.Sprintf("%s = COALESCE(excluded.%s, %s.%s)", c, c, table, c))
		default:
			set = append(set, fmt.Sprintf("%s = excluded.%s", c, c))
		}
	}
	return "ON CONFLICT (" + strings.Join(key, ", ") + ") DO UPDATE SET " + strings.Join(set, ", ")
}

var (
	jobColumns    = strings.Split(`id, queue, share, requestor, submitter, state, priority, urgent, submitted, ended, spec`, ", ")
	taskColumns   = strings.Split(`job, name, idx, state, attempt, fails, worker, started, ended, exit_code, output, result, reason, message, secret_hash, cpu_seconds, peak_memory`, ", ")
	workerColumns = strings.Split(`name, state, registered, last_seen, spec`, ", ")
	eventColumns  = strings.Split(`at, kind, job, task, worker, reason, message, data`, ", ")
)

func (s *stmts) prepare(ctx context.Context, db *sql.DB) error {
	var err error // the first failure; later prepares are skipped
	prep := func(text string) *sql.Stmt {
		if err != nil {
			return nil
		}
		st, e := db.PrepareContext(ctx, text)
		if e != nil {
			err = fmt.Errorf("prepare %.60q: %w", text, e)
			return nil
		}
		s.all = append(s.all, st)
		return st
	}
	rows := func(table string, cols []string, suffix string) rowStmt {
		rs := rowStmt{one: prep(insertSQL(table, cols, 1, suffix))}
		for k, n := range chunkRows {
			rs.chunks[k] = prep(insertSQL(table, cols, n, suffix))
		}
		return rs
	}
	// DO NOTHING + RETURNING: a duplicate ID returns no row, which is how
	// CreateJob tells ErrDuplicate apart from other failures.
	s.insertJob = prep(insertSQL("jobs", jobColumns, 1, "ON CONFLICT (id) DO NOTHING RETURNING seq"))
	s.upsertJob = rows("jobs", jobColumns, upsertSuffix("jobs", []string{"id"}, jobColumns, []string{"spec"}))
	s.insertTask = rows("tasks", taskColumns, "")
	s.upsertTask = rows("tasks", taskColumns, upsertSuffix("tasks", []string{"job", "name"}, taskColumns, nil))
	s.upsertWorker = rows("workers", workerColumns, upsertSuffix("workers", []string{"name"}, workerColumns, []string{"spec"}))
	s.insertEvent = rows("events", eventColumns, "")
	s.upsertKV = prep(`INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`)
	s.deleteKV = prep(`DELETE FROM kv WHERE key = ?`)
	if err != nil {
		s.close()
	}
	return err
}

func (s *stmts) close() error {
	var errs []error
	for _, st := range s.all {
		errs = append(errs, st.Close())
	}
	s.all = nil
	return errors.Join(errs...)
}

// CreateJob implements store.Store.
func (s *Store) CreateJob(ctx context.Context, j store.Job, tasks []store.Task, events []store.Event) (store.Job, error) {
	fail := func(err error) (store.Job, error) {
		return store.Job{}, fmt.Errorf("sqlite: create job %q: %w", j.ID, err)
	}
	jobArgs, err := jobRow(j)
	if err != nil {
		return fail(err)
	}
	if err := store.CheckJobTasks(j.ID, tasks); err != nil {
		return fail(err)
	}

	err = s.inTx(ctx, func(tx *sql.Tx) error {
		// Under a context without cancellation for the reason execRows
		// gives; the transaction still ends when ctx does.
		row := tx.StmtContext(ctx, s.stmts.insertJob).QueryRowContext(context.WithoutCancel(ctx), jobArgs...)
		if err := row.Scan(&j.Seq); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrDuplicate
			}
			return constraint(err)
		}
		err := execRows(ctx, tx, s.stmts.insertTask, tasks, func(t store.Task) ([]any, error) {
			t.Job = j.ID
			return taskRow(t)
		}, func(i int, t store.Task) string { return fmt.Sprintf("tasks[%d] (%s)", i, t.Name) })
		if err != nil {
			return err
		}
		return execRows(ctx, tx, s.stmts.insertEvent, events, eventRow, eventName)
	})
	if err != nil {
		return fail(err)
	}
	j.Submitted, j.Ended = utc(j.Submitted), utc(j.Ended)
	return j, nil
}

// Commit implements store.Store. Rows are written in the order jobs, tasks,
// workers, events, KV (keys sorted), so a task may belong to a job created
// in the same batch.
func (s *Store) Commit(ctx context.Context, b store.Batch) error {
	if b.Empty() {
		return nil
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := execRows(ctx, tx, s.stmts.upsertJob, b.Jobs, jobRow,
			func(i int, j store.Job) string { return fmt.Sprintf("jobs[%d] (%s)", i, j.ID) }); err != nil {
			return err
		}
		if err := execRows(ctx, tx, s.stmts.upsertTask, b.Tasks, taskRow,
			func(i int, t store.Task) string { return fmt.Sprintf("tasks[%d] (%s/%s)", i, t.Job, t.Name) }); err != nil {
			return err
		}
		if err := execRows(ctx, tx, s.stmts.upsertWorker, b.Workers, workerRow,
			func(i int, w store.Worker) string { return fmt.Sprintf("workers[%d] (%s)", i, w.Name) }); err != nil {
			return err
		}
		if err := execRows(ctx, tx, s.stmts.insertEvent, b.Events, eventRow, eventName); err != nil {
			return err
		}
		return s.writeKV(ctx, tx, b.KV)
	})
	if err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	return nil
}

func eventName(i int, e store.Event) string { return fmt.Sprintf("events[%d] (%s)", i, e.Kind) }

// execRows writes rows in tx with rs, with the values args returns for
// each row: whole chunks through rs.chunks, largest first, the rest one
// by one. An error
// names the row (name) and stops; the caller then rolls the transaction
// back.
//
// The statements run under a context without cancellation, and ctx is
// checked between statements instead: the driver starts a goroutine per
// statement to watch a cancellable context, which costs more than a
// single-row write, and no statement here runs long enough to need
// interrupting.
func execRows[T any](ctx context.Context, tx *sql.Tx, rs rowStmt, rows []T, args func(T) ([]any, error), name func(int, T) string) error {
	if len(rows) == 0 {
		return nil
	}
	rowCtx := context.WithoutCancel(ctx)
	one := tx.StmtContext(ctx, rs.one)
	single := func(i int) error {
		a, err := args(rows[i])
		if err == nil {
			_, err = one.ExecContext(rowCtx, a...)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name(i, rows[i]), constraint(err))
		}
		return nil
	}
	i := 0
	var buf []any
	for k, size := range chunkRows {
		if len(rows)-i < size {
			continue
		}
		chunk := tx.StmtContext(ctx, rs.chunks[k])
		if buf == nil {
			buf = make([]any, 0, size*16)
		}
		for ; i+size <= len(rows); i += size {
			if err := ctx.Err(); err != nil {
				return err
			}
			buf = buf[:0]
			for k := i; k < i+size; k++ {
				a, err := args(rows[k])
				if err != nil {
					return fmt.Errorf("%s: %w", name(k, rows[k]), err)
				}
				buf = append(buf, a...)
			}
			if _, err := chunk.ExecContext(rowCtx, buf...); err != nil {
				// A failed statement leaves no trace, so run the chunk
				// again row by row to name the row at fault.
				for k := i; k < i+size; k++ {
					if rowErr := single(k); rowErr != nil {
						return rowErr
					}
				}
				return fmt.Errorf("rows %d-%d: %w", i, i+size-1, constraint(err))
			}
		}
	}
	for ; i < len(rows); i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := single(i); err != nil {
			return err
		}
	}
	return nil
}

// writeKV applies the KV part of a batch in key order: a nil value deletes
// the key, any other is stored.
func (s *Store) writeKV(ctx context.Context, tx *sql.Tx, kv map[string][]byte) error {
	if len(kv) == 0 {
		return nil
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	upsert, del := tx.StmtContext(ctx, s.stmts.upsertKV), tx.StmtContext(ctx, s.stmts.deleteKV)
	for _, k := range keys {
		if err := store.CheckKVKey(k); err != nil {
			return err
		}
		v := kv[k]
		var err error
		if v == nil {
			_, err = del.ExecContext(ctx, k)
		} else {
			_, err = upsert.ExecContext(ctx, k, v)
		}
		if err != nil {
			return fmt.Errorf("kv[%q]: %w", k, constraint(err))
		}
	}
	return nil
}

// inTx runs fn in a write transaction on the one writer connection (BEGIN
// IMMEDIATE, so the write lock is taken at the start) and commits; any error
// rolls everything back. A full disk or a failing file system comes back as
// a *store.UnavailableError (see classify): SQLite rolled the transaction
// back, and the connection takes the same write again once there is room.
func (s *Store) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", s.classify(err))
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return s.classify(err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", s.classify(err))
	}
	return nil
}

// constraint turns SQLite's constraint violations into store.ErrInvalid
// (keeping SQLite's message), and leaves other errors alone.
func constraint(err error) error {
	var se *msqlite.Error
	if !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_CONSTRAINT {
		return err
	}
	if se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY {
		return fmt.Errorf("job is not stored: %w (%w)", store.ErrInvalid, err)
	}
	return fmt.Errorf("%w: %w", store.ErrInvalid, err)
}

// jobRow validates j (store.CheckJob) and returns its column values.
func jobRow(j store.Job) ([]any, error) {
	if err := store.CheckJob(j); err != nil {
		return nil, err
	}
	return []any{j.ID, j.Queue, j.Share, j.Requestor, j.Submitter, j.State, int64(j.Priority), j.Urgent,
		timeValue(j.Submitted), timeValue(j.Ended), jsonValue(j.Spec)}, nil
}

// taskRow validates t (store.CheckTask) and returns its column values.
func taskRow(t store.Task) ([]any, error) {
	if err := store.CheckTask(t); err != nil {
		return nil, err
	}
	var exit any
	if t.ExitCode != nil {
		exit = int64(*t.ExitCode)
	}
	var output any
	if t.Output != "" {
		output = []byte(t.Output)
	}
	var hash any
	if len(t.SecretHash) > 0 {
		hash = t.SecretHash
	}
	return []any{t.Job, t.Name, int64(t.Index), t.State, int64(t.Attempt), int64(t.Fails), t.Worker,
		timeValue(t.Started), timeValue(t.Ended), exit, output, jsonValue(t.Result), t.Reason, t.Message, hash,
		t.CPUSeconds, t.PeakMemory}, nil
}

// workerRow validates w (store.CheckWorker) and returns its column values.
func workerRow(w store.Worker) ([]any, error) {
	if err := store.CheckWorker(w); err != nil {
		return nil, err
	}
	return []any{w.Name, w.State, timeValue(w.Registered), timeValue(w.LastSeen), jsonValue(w.Spec)}, nil
}

// eventRow validates e (store.CheckEvent) and returns its column values.
func eventRow(e store.Event) ([]any, error) {
	if err := store.CheckEvent(e); err != nil {
		return nil, err
	}
	return []any{timeValue(e.At), e.Kind, e.Job, e.Task, e.Worker, e.Reason, e.Message, jsonValue(e.Data)}, nil
}

// timeValue is the column value for a time store.CheckTime accepted: UTC
// unix nanoseconds, or NULL for the zero time (so the Unix epoch itself
// stays distinct from "not set").
func timeValue(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// jsonValue is the column value for a JSON document store.CheckJSON
// accepted: its bytes as given (so they read back identical), or NULL when
// it is empty.
func jsonValue(doc json.RawMessage) any {
	if len(doc) == 0 {
		return nil
	}
	return []byte(doc)
}

// utc is how the store reads a time back: UTC, no monotonic reading, and the
// zero time unchanged.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}
