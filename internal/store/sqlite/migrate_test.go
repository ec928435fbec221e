package sqlite

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/store"
)

// createAtVersion makes a database as a binary that knew only the first
// version migrations would have left it.
func createAtVersion(t *testing.T, path string, version int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := migrateTo(context.Background(), db, version, t0); err != nil {
		t.Fatalf("migrating to version %d: %v", version, err)
	}
	return db
}

func TestTokensAndJobsOfAnOlderSchemaGetTheDefaults(t *testing.T) {
	path := tempPath(t)
	db := createAtVersion(t, path, 2) // before token limits and job submitters
	for _, stmt := range []string{
		`INSERT INTO tokens (id, hash, name, role, queues, shares, created) VALUES ('tok-old', x'0102', 'alice', 'submitter', CAST('["*"]' AS BLOB), CAST('["*"]' AS BLOB), 1)`,
		`INSERT INTO jobs (id, queue, share, requestor, state, priority, urgent, submitted, spec) VALUES ('old', 'q', '', '', 'pending', 0, 0, 1, CAST('{}' AS BLOB))`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	s := openFile(t, path)
	defer s.Close()
	tok, err := s.TokenByHash(t.Context(), []byte{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if !tok.Limits.IsZero() || tok.Name != "alice" {
		t.Errorf("a token made before limits existed: %+v, want the default (zero) limits", tok)
	}
	j, _ := mustJobOf(t, s, "old")
	if j.Submitter != "" || j.Queue != "q" {
		t.Errorf("a job stored before submitters were: %+v, want no submitter", j)
	}
	// The migrated tables take the new values.
	tok.ID, tok.Hash, tok.Limits = "tok-new", []byte{3}, store.TokenLimits{MaxPriority: 4, Users: []string{"svc"}}
	if err := s.PutToken(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	if got, err := s.TokenByHash(t.Context(), []byte{3}); err != nil || got.Limits.MaxPriority != 4 || got.Limits.Users[0] != "svc" {
		t.Errorf("a new token on the migrated table: %+v %v", got, err)
	}
	if _, err := s.CreateJob(t.Context(), store.Job{ID: "new", Queue: "q", State: "pending", Submitter: "alice", Submitted: time.Unix(2, 0)}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if j, _ := mustJobOf(t, s, "new"); j.Submitter != "alice" {
		t.Errorf("a new job on the migrated table: submitter %q, want alice", j.Submitter)
	}
}

func mustJobOf(t *testing.T, s *Store, id string) (store.Job, []store.Task) {
	t.Helper()
	j, tasks, err := s.Job(t.Context(), id)
	if err != nil {
		t.Fatalf("Job(%s): %v", id, err)
	}
	return j, tasks
}

func TestTasksOfAnOlderSchemaHaveNoGPUs(t *testing.T) {
	path := tempPath(t)
	db := createAtVersion(t, path, 4) // before task GPUs
	for _, stmt := range []string{
		`INSERT INTO jobs (id, queue, share, requestor, state, priority, urgent, submitted, spec) VALUES ('old', 'q', '', '', 'running', 0, 0, 1, CAST('{}' AS BLOB))`,
		`INSERT INTO tasks (job, name, idx, state, attempt, fails, worker, reason, message) VALUES ('old', 'a', 0, 'running', 1, 0, 'w1', '', '')`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	s := openFile(t, path)
	defer s.Close()
	if _, tasks := mustJobOf(t, s, "old"); len(tasks) != 1 || tasks[0].GPUs != nil || tasks[0].Worker != "w1" {
		t.Errorf("a task stored before GPUs were: %+v, want no GPUs", tasks)
	}
}
