package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migration is one step of the schema. Migrations are append-only: a
// released step is never edited, because databases in the field have already
// applied it; a change is a new step at the end.
type migration struct {
	name  string
	stmts []string
}

// migrations is the schema history; step i brings a database from version i
// to version i+1. Times are INTEGER UTC unix nanoseconds (NULL = zero time)
// so they round-trip exactly; JSON documents and task output are BLOBs so
// they round-trip byte for byte. Tables are STRICT so a wrongly typed value
// is refused instead of silently converted.
var migrations = []migration{
	{
		name: "initial schema",
		stmts: []string{
			`CREATE TABLE jobs (
				seq       INTEGER PRIMARY KEY AUTOINCREMENT,
				id        TEXT    NOT NULL UNIQUE CHECK (id <> ''),
				queue     TEXT    NOT NULL,
				share     TEXT    NOT NULL,
				requestor TEXT    NOT NULL,
				state     TEXT    NOT NULL,
				priority  INTEGER NOT NULL,
				urgent    INTEGER NOT NULL,
				submitted INTEGER,
				ended     INTEGER,
				spec      BLOB
			) STRICT`,
			`CREATE INDEX jobs_state ON jobs (state, seq)`,
			`CREATE INDEX jobs_queue ON jobs (queue, seq)`,
			`CREATE INDEX jobs_share ON jobs (share, seq)`,
			// Unfinished reads only this index at start-up, however many
			// ended jobs the history holds. The WHERE clause must match
			// unfinishedWhere exactly for the planner to use it.
			`CREATE INDEX jobs_unfinished ON jobs (seq) WHERE ` + unfinishedWhere,
			`CREATE TABLE tasks (
				job       TEXT    NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
				name      TEXT    NOT NULL CHECK (name <> ''),
				idx       INTEGER NOT NULL,
				state     TEXT    NOT NULL,
				attempt   INTEGER NOT NULL,
				fails     INTEGER NOT NULL,
				worker    TEXT    NOT NULL,
				started   INTEGER,
				ended     INTEGER,
				exit_code INTEGER,
				output    BLOB,
				result    BLOB,
				reason    TEXT    NOT NULL,
				message   TEXT    NOT NULL,
				PRIMARY KEY (job, name)
			) STRICT`,
			`CREATE INDEX tasks_job ON tasks (job, idx)`,
			`CREATE TABLE workers (
				name       TEXT PRIMARY KEY CHECK (name <> ''),
				state      TEXT NOT NULL,
				registered INTEGER,
				last_seen  INTEGER,
				spec       BLOB
			) STRICT`,
			`CREATE TABLE events (
				id      INTEGER PRIMARY KEY AUTOINCREMENT,
				at      INTEGER,
				kind    TEXT NOT NULL CHECK (kind <> ''),
				job     TEXT NOT NULL,
				task    TEXT NOT NULL,
				worker  TEXT NOT NULL,
				reason  TEXT NOT NULL,
				message TEXT NOT NULL,
				data    BLOB
			) STRICT`,
			`CREATE INDEX events_job ON events (job, id)`,
			`CREATE TABLE kv (
				key   TEXT PRIMARY KEY CHECK (key <> ''),
				value BLOB NOT NULL
			) STRICT`,
		},
	},
	{
		name: "api tokens",
		stmts: []string{
			// Only the SHA-256 digest of a token's secret is stored (see
			// package auth). The scope lists are JSON arrays, NULL when
			// empty.
			`CREATE TABLE tokens (
				id      TEXT PRIMARY KEY CHECK (id <> ''),
				hash    BLOB NOT NULL UNIQUE CHECK (length(hash) > 0),
				name    TEXT NOT NULL,
				role    TEXT NOT NULL CHECK (role <> ''),
				queues  BLOB,
				shares  BLOB,
				workers BLOB,
				created INTEGER,
				expires INTEGER,
				revoked INTEGER
			) STRICT`,
		},
	},
	{
		name: "token limits",
		stmts: []string{
			// What a submitter's jobs may ask of the scheduler (maximum
			// priority, urgency, requestors, SLA groups, users), as one
			// JSON document; NULL is the defaults, so tokens made before
			// this step get the most restrictive limits.
			`ALTER TABLE tokens ADD COLUMN limits BLOB`,
			// Who submitted each job (the token's name); jobs stored
			// before this step have none.
			`ALTER TABLE jobs ADD COLUMN submitter TEXT NOT NULL DEFAULT ''`,
		},
	},
	{
		name: "attempt secrets",
		stmts: []string{
			// The SHA-256 digest of the running attempt's secret
			// (store.Task.SecretHash); NULL for none.
			`ALTER TABLE tasks ADD COLUMN secret_hash BLOB`,
		},
	},
	{
		name: "attempt usage",
		stmts: []string{
			// What the last ended attempt used (store.Task.CPUSeconds,
			// PeakMemory); 0 when not measured, as for tasks stored
			// before this step.
			`ALTER TABLE tasks ADD COLUMN cpu_seconds REAL NOT NULL DEFAULT 0`,
			`ALTER TABLE tasks ADD COLUMN peak_memory INTEGER NOT NULL DEFAULT 0`,
		},
	},
}

// unfinishedWhere selects jobs that have not ended (store.JobEnded). It is
// frozen into the jobs_unfinished index by the first migration; the query in
// Unfinished uses the same text so that the index applies.
const unfinishedWhere = `state NOT IN ('succeeded', 'failed', 'cancelled')`

// schemaVersion is the version this binary creates and understands.
var schemaVersion = len(migrations)

// migrate brings the database to schemaVersion in one transaction, so a
// crash half-way leaves the old schema intact. A database written by a newer
// binary is refused rather than guessed at.
func migrate(ctx context.Context, db *sql.DB, now time.Time) error {
	return migrateTo(ctx, db, schemaVersion, now)
}

// migrateTo applies the steps up to version; tests use it to make the
// database an older binary would have left.
func migrateTo(ctx context.Context, db *sql.DB, version int, now time.Time) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version INTEGER PRIMARY KEY,
		name    TEXT    NOT NULL,
		applied INTEGER NOT NULL
	) STRICT`); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&have); err != nil {
		return fmt.Errorf("read schema_version: %w", err)
	}
	if have > version {
		return fmt.Errorf("database schema version %d is newer than this binary supports (%d): run a newer allot", have, version)
	}
	for v := have; v < version; v++ {
		m := migrations[v]
		for i, stmt := range m.stmts {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migration %d (%s) statement %d: %w", v+1, m.name, i+1, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied) VALUES (?, ?, ?)`,
			v+1, m.name, now.UnixNano()); err != nil {
			return fmt.Errorf("record migration %d: %w", v+1, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
