package postgres

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/allot-sched/allot/internal/store/postgres/pgtest"
)

// TestQueriesUseIndexes asks PostgreSQL's planner that each read can use
// its index. The tables of a test are tiny, and a sequential scan would
// win on them, so the check is made with sequential scans priced out.
func TestQueriesUseIndexes(t *testing.T) {
	s := openURL(t, pgtest.URL(t))
	defer s.Close()
	ctx := t.Context()
	for _, tc := range []struct {
		query string
		args  []any
		index string
	}{
		{`SELECT ` + jobCols + ` FROM jobs WHERE ` + unfinishedWhere + ` ORDER BY seq`, nil, "jobs_unfinished"},
		{`SELECT ` + tTaskCols + ` FROM jobs j JOIN tasks t ON t.job = j.id WHERE j.` + unfinishedWhere + ` ORDER BY j.seq, t.idx, t.name`, nil, "jobs_unfinished"},
		{`SELECT ` + taskCols + ` FROM tasks WHERE job = $1 ORDER BY idx, name`, []any{"j"}, "tasks_job"},
		{`SELECT ` + jobCols + ` FROM jobs WHERE seq > $1 AND queue = $2 ORDER BY seq LIMIT $3`, []any{0, "q", 10}, "jobs_queue"},
		{`SELECT ` + jobCols + ` FROM jobs WHERE seq > $1 AND share = $2 ORDER BY seq LIMIT $3`, []any{0, "s", 10}, "jobs_share"},
		{`SELECT ` + jobCols + ` FROM jobs WHERE seq > $1 AND submitter = $2 ORDER BY seq LIMIT $3`, []any{0, "ann", 10}, "jobs_submitter"},
		{`SELECT ` + attemptCols + ` FROM attempts WHERE ended > $1 AND started < $2 ORDER BY ended, job, task, attempt`, []any{0, 10}, "attempts_ended"},
		{`SELECT off, data FROM output_chunks WHERE job = $1 AND task = $2 AND attempt = $3 ORDER BY off`, []any{"j", "t", 1}, "output_chunks_pkey"},
		{`SELECT ` + jobCols + ` FROM jobs WHERE seq > $1 AND state = ANY($2::text[]) ORDER BY seq LIMIT $3`, []any{0, []string{"running"}, 10}, "jobs_state"},
		{`SELECT ` + eventCols + ` FROM events WHERE id > $1 AND job = $2 ORDER BY id LIMIT $3`, []any{0, "j", 10}, "events_job"},
		{`SELECT ` + jobCols + ` FROM jobs WHERE id = $1`, []any{"j"}, "jobs_id_key"},
	} {
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `EXPLAIN `+tc.query, tc.args...)
			if err != nil {
				return err
			}
			plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			if !strings.Contains(strings.Join(plan, "\n"), tc.index) {
				t.Errorf("plan for %.60q… does not use %s:\n%s", tc.query, tc.index, strings.Join(plan, "\n"))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
