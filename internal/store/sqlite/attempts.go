package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/allot-sched/allot/internal/store"
)

var attemptColumns = strings.Split(`job, task, attempt, worker, queue, share, submitter, started, ended, exit_code, gpus, cpu_seconds, peak_memory`, ", ")

var attemptCols = strings.Join(attemptColumns, ", ")

// attemptRow validates a (store.CheckAttempt) and returns its column values.
func attemptRow(a store.Attempt) ([]any, error) {
	if err := store.CheckAttempt(a); err != nil {
		return nil, err
	}
	var exit any
	if a.ExitCode != nil {
		exit = int64(*a.ExitCode)
	}
	return []any{a.Job, a.Task, int64(a.Attempt), a.Worker, a.Queue, a.Share, a.Submitter, timeValue(a.Started),
		timeValue(a.Ended), exit, int64(a.GPUs), a.CPUSeconds, a.PeakMemory}, nil
}

func attemptName(i int, a store.Attempt) string {
	return fmt.Sprintf("attempts[%d] (%s/%s/%d)", i, a.Job, a.Task, a.Attempt)
}

// Attempts implements store.Store.
func (s *Store) Attempts(ctx context.Context, f store.AttemptFilter) ([]store.Attempt, error) {
	where, args := []string{"1 = 1"}, []any{}
	if !f.EndedAfter.IsZero() {
		where, args = append(where, "ended > ?"), append(args, f.EndedAfter.UnixNano())
	}
	if !f.StartedBefore.IsZero() {
		where, args = append(where, "started < ?"), append(args, f.StartedBefore.UnixNano())
	}
	if f.Job != "" {
		where, args = append(where, "job = ?"), append(args, f.Job)
	}
	q := `SELECT ` + attemptCols + ` FROM attempts WHERE `
	for i, w := range where {
		if i > 0 {
			q += " AND "
		}
		q += w
	}
	rows, err := s.readers.QueryContext(ctx, q+` ORDER BY ended, job, task, attempt`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: attempts: %w", err)
	}
	defer rows.Close()
	var out []store.Attempt
	for rows.Next() {
		var (
			a              store.Attempt
			n, gpus        int64
			started, ended sql.NullInt64
			exit           sql.NullInt64
		)
		if err := rows.Scan(&a.Job, &a.Task, &n, &a.Worker, &a.Queue, &a.Share, &a.Submitter, &started, &ended, &exit,
			&gpus, &a.CPUSeconds, &a.PeakMemory); err != nil {
			return nil, fmt.Errorf("sqlite: attempts: %w", err)
		}
		a.Attempt, a.GPUs, a.Started, a.Ended = int(n), int(gpus), timeOf(started), timeOf(ended)
		if exit.Valid {
			e := int(exit.Int64)
			a.ExitCode = &e
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: attempts: %w", err)
	}
	return out, nil
}

// AppendOutput implements store.Store.
func (s *Store) AppendOutput(ctx context.Context, c store.OutputChunk, limit int64) error {
	if err := store.CheckOutputChunk(c); err != nil {
		return fmt.Errorf("sqlite: append output: %w", err)
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var end int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(off + length(data)), 0) FROM output_chunks
			WHERE job = ? AND task = ? AND attempt = ?`, c.Job, c.Task, c.Attempt).Scan(&end); err != nil {
			return err
		}
		data, off := c.Data, c.Offset
		if off < end {
			skip := min(end-off, int64(len(data)))
			data, off = data[skip:], off+skip
		}
		if len(data) == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO output_chunks (job, task, attempt, off, data) VALUES (?, ?, ?, ?, ?)`,
			c.Job, c.Task, c.Attempt, off, data); err != nil {
			return constraint(err)
		}
		if limit > 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM output_chunks WHERE job = ? AND task = ? AND attempt = ?
				AND off + length(data) <= ?`, c.Job, c.Task, c.Attempt, off+int64(len(data))-limit); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: append output of %s/%s attempt %d: %w", c.Job, c.Task, c.Attempt, err)
	}
	return nil
}

// Output implements store.Store.
func (s *Store) Output(ctx context.Context, job, task string, attempt int, limit, from int64) (store.Output, error) {
	fail := func(err error) (store.Output, error) {
		return store.Output{}, fmt.Errorf("sqlite: output of %s/%s attempt %d: %w", job, task, attempt, err)
	}
	var chunks []store.OutputChunkRow
	err := s.read(ctx, func(tx *sql.Tx) error {
		// The chunk that ends the output is always read: it gives the
		// total even when nothing after from is new.
		rows, err := tx.QueryContext(ctx, `SELECT off, data FROM output_chunks WHERE job = ? AND task = ? AND attempt = ?
			AND (off + length(data) > ? OR off = (SELECT MAX(off) FROM output_chunks WHERE job = ? AND task = ? AND attempt = ?))
			ORDER BY off`, job, task, attempt, from, job, task, attempt)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c store.OutputChunkRow
			if err := rows.Scan(&c.Offset, &c.Data); err != nil {
				return err
			}
			chunks = append(chunks, c)
		}
		return rows.Err()
	})
	if err != nil {
		return fail(err)
	}
	if len(chunks) == 0 {
		return fail(store.ErrNotFound)
	}
	return store.AssembleOutput(chunks, limit, from), nil
}
