package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/allot-sched/allot/internal/store"
)

const attemptCols = `job, task, attempt, worker, queue, share, submitter, started, ended, exit_code, gpus, cpu_seconds, peak_memory`

// upsertAttemptsSQL writes a batch's attempt records in one statement;
// foldAttempts made their keys unique.
const upsertAttemptsSQL = `INSERT INTO attempts (` + attemptCols + `)
	SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[],
		$8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::double precision[], $13::bigint[])
	ON CONFLICT (job, task, attempt) DO UPDATE SET worker = excluded.worker, queue = excluded.queue,
	share = excluded.share, submitter = excluded.submitter, started = excluded.started, ended = excluded.ended,
	exit_code = excluded.exit_code, gpus = excluded.gpus, cpu_seconds = excluded.cpu_seconds,
	peak_memory = excluded.peak_memory`

// attemptsPart is the statement of a commit that upserts a batch's attempt
// records, checked (store.CheckAttempt) and folded so that a record named
// twice is written once, the later winning.
func attemptsPart(as []store.Attempt) (part, error) {
	type key struct {
		job, task string
		n         int
	}
	at := make(map[key]int, len(as))
	var rows []store.Attempt
	for i, a := range as {
		if err := store.CheckAttempt(a); err != nil {
			return part{}, fmt.Errorf("attempts[%d] (%s/%s/%d): %w", i, a.Job, a.Task, a.Attempt, err)
		}
		k := key{a.Job, a.Task, a.Attempt}
		if j, seen := at[k]; seen {
			rows[j] = a
			continue
		}
		at[k] = len(rows)
		rows = append(rows, a)
	}
	n := len(rows)
	job, task, worker, queue, share, submitter := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	attempt, gpus, mem := make([]int64, n), make([]int64, n), make([]int64, n)
	started, ended, exit := make([]*int64, n), make([]*int64, n), make([]*int64, n)
	cpu := make([]float64, n)
	for i, a := range rows {
		job[i], task[i], worker[i], queue[i], share[i], submitter[i] = a.Job, a.Task, a.Worker, a.Queue, a.Share, a.Submitter
		attempt[i], gpus[i], mem[i], cpu[i] = int64(a.Attempt), int64(a.GPUs), a.PeakMemory, a.CPUSeconds
		started[i], ended[i] = timeValue(a.Started), timeValue(a.Ended)
		if a.ExitCode != nil {
			e := int64(*a.ExitCode)
			exit[i] = &e
		}
	}
	return part{"attempts", upsertAttemptsSQL, []any{job, task, attempt, worker, queue, share, submitter, started, ended, exit, gpus, cpu, mem}}, nil
}

// Attempts implements store.Store.
func (s *Store) Attempts(ctx context.Context, f store.AttemptFilter) ([]store.Attempt, error) {
	fail := func(err error) ([]store.Attempt, error) { return nil, fmt.Errorf("postgres: attempts: %w", err) }
	if err := s.checkOpen(); err != nil {
		return fail(err)
	}
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if !f.EndedAfter.IsZero() {
		add("ended > $%d", f.EndedAfter.UnixNano())
	}
	if !f.StartedBefore.IsZero() {
		add("started < $%d", f.StartedBefore.UnixNano())
	}
	if f.Job != "" {
		add("job = $%d", f.Job)
	}
	q := `SELECT ` + attemptCols + ` FROM attempts`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY ended, job, task, attempt`, args...)
	if err != nil {
		return fail(classify(err))
	}
	defer rows.Close()
	var out []store.Attempt
	for rows.Next() {
		var (
			a                    store.Attempt
			n, gpus              int64
			started, ended, exit *int64
		)
		if err := rows.Scan(&a.Job, &a.Task, &n, &a.Worker, &a.Queue, &a.Share, &a.Submitter, &started, &ended, &exit,
			&gpus, &a.CPUSeconds, &a.PeakMemory); err != nil {
			return fail(err)
		}
		a.Attempt, a.GPUs, a.Started, a.Ended = int(n), int(gpus), timeOf(started), timeOf(ended)
		if exit != nil {
			e := int(*exit)
			a.ExitCode = &e
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return fail(classify(err))
	}
	return out, nil
}

// AppendOutput implements store.Store. It writes behind the fence, as
// every write of a fenced store does.
func (s *Store) AppendOutput(ctx context.Context, c store.OutputChunk, limit int64) error {
	if err := store.CheckOutputChunk(c); err != nil {
		return fmt.Errorf("postgres: append output: %w", err)
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// The lock on the attempt's key serialises appends to one output.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, fmt.Sprintf("output %q %q %d", c.Job, c.Task, c.Attempt)); err != nil {
			return classify(err)
		}
		var end int64
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(off + length(data)), 0) FROM output_chunks
			WHERE job = $1 AND task = $2 AND attempt = $3`, c.Job, c.Task, int64(c.Attempt)).Scan(&end); err != nil {
			return classify(err)
		}
		data, off := c.Data, c.Offset
		if off < end {
			skip := min(end-off, int64(len(data)))
			data, off = data[skip:], off+skip
		}
		if len(data) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO output_chunks (job, task, attempt, off, data) VALUES ($1, $2, $3, $4, $5)`,
			c.Job, c.Task, int64(c.Attempt), off, data); err != nil {
			return classify(err)
		}
		if limit > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM output_chunks WHERE job = $1 AND task = $2 AND attempt = $3
				AND off + length(data) <= $4`, c.Job, c.Task, int64(c.Attempt), off+int64(len(data))-limit); err != nil {
				return classify(err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: append output of %s/%s attempt %d: %w", c.Job, c.Task, c.Attempt, err)
	}
	return nil
}

// Output implements store.Store.
func (s *Store) Output(ctx context.Context, job, task string, attempt int, limit, from int64) (store.Output, error) {
	fail := func(err error) (store.Output, error) {
		return store.Output{}, fmt.Errorf("postgres: output of %s/%s attempt %d: %w", job, task, attempt, err)
	}
	if err := s.checkOpen(); err != nil {
		return fail(err)
	}
	// The chunk that ends the output is always read: it gives the total
	// even when nothing after from is new.
	rows, err := s.pool.Query(ctx, `SELECT off, data FROM output_chunks WHERE job = $1 AND task = $2 AND attempt = $3
		AND (off + length(data) > $4 OR off = (SELECT MAX(off) FROM output_chunks WHERE job = $1 AND task = $2 AND attempt = $3))
		ORDER BY off`, job, task, int64(attempt), from)
	if err != nil {
		return fail(classify(err))
	}
	defer rows.Close()
	var chunks []store.OutputChunkRow
	for rows.Next() {
		var c store.OutputChunkRow
		if err := rows.Scan(&c.Offset, &c.Data); err != nil {
			return fail(err)
		}
		chunks = append(chunks, c)
	}
	if err := rows.Err(); err != nil {
		return fail(classify(err))
	}
	if len(chunks) == 0 {
		return fail(store.ErrNotFound)
	}
	return store.AssembleOutput(chunks, limit, from), nil
}
