package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// migration is one step of the schema. Migrations are append-only: a
// released step is never edited, because databases in the field have
// already applied it; a change is a new step at the end.
type migration struct {
	name  string
	stmts []string
}

// migrations is the schema history, the same tables as SQLite's
// (internal/store/sqlite/schema.go) in PostgreSQL's types; step i brings a
// database from version i to version i+1. What store.Batch's rules force:
//   - times are bigint UTC Unix nanoseconds (NULL = the zero time):
//     timestamptz keeps only microseconds;
//   - JSON documents, task output and free-text messages are bytea, read
//     back byte for byte: jsonb re-encodes a document, and text refuses NUL
//     and bytes that are not UTF-8, which a worker's message may hold;
//   - seq and event IDs come from identity columns; with one writer (the
//     leader) they become visible in order.
//
// SQLite's first four steps are one here: the PostgreSQL backend started
// with all of them.
var migrations = []migration{
	{
		name: "initial schema",
		stmts: []string{
			`CREATE TABLE jobs (
				seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				id        text    NOT NULL UNIQUE CHECK (id <> ''),
				queue     text    NOT NULL,
				share     text    NOT NULL,
				requestor text    NOT NULL,
				submitter text    NOT NULL DEFAULT '',
				state     text    NOT NULL,
				priority  bigint  NOT NULL,
				urgent    boolean NOT NULL,
				submitted bigint,
				ended     bigint,
				spec      bytea
			)`,
			`CREATE INDEX jobs_state ON jobs (state, seq)`,
			`CREATE INDEX jobs_queue ON jobs (queue, seq)`,
			`CREATE INDEX jobs_share ON jobs (share, seq)`,
			// Unfinished reads only this index at start-up, however many
			// ended jobs the history holds; its WHERE clause is the one
			// Unfinished uses.
			`CREATE INDEX jobs_unfinished ON jobs (seq) WHERE ` + unfinishedWhere,
			`CREATE TABLE tasks (
				job         text   NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
				name        text   NOT NULL CHECK (name <> ''),
				idx         bigint NOT NULL,
				state       text   NOT NULL,
				attempt     bigint NOT NULL,
				fails       bigint NOT NULL,
				worker      text   NOT NULL,
				started     bigint,
				ended       bigint,
				exit_code   bigint,
				output      bytea,
				result      bytea,
				reason      text   NOT NULL,
				message     bytea  NOT NULL,
				secret_hash bytea,
				PRIMARY KEY (job, name)
			) WITH (fillfactor = 70)`,
			`CREATE INDEX tasks_job ON tasks (job, idx)`,
			`CREATE TABLE workers (
				name       text PRIMARY KEY CHECK (name <> ''),
				state      text NOT NULL,
				registered bigint,
				last_seen  bigint,
				spec       bytea
			)`,
			`CREATE TABLE events (
				id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				at      bigint,
				kind    text  NOT NULL CHECK (kind <> ''),
				job     text  NOT NULL,
				task    text  NOT NULL,
				worker  text  NOT NULL,
				reason  text  NOT NULL,
				message bytea NOT NULL,
				data    bytea
			)`,
			`CREATE INDEX events_job ON events (job, id)`,
			`CREATE TABLE kv (
				key   text  PRIMARY KEY CHECK (key <> ''),
				value bytea NOT NULL
			)`,
			// Only the SHA-256 digest of a token's secret is stored (see
			// package auth). The scope lists and the limits are JSON, NULL
			// when empty (the defaults).
			`CREATE TABLE tokens (
				id      text  PRIMARY KEY CHECK (id <> ''),
				hash    bytea NOT NULL UNIQUE CHECK (length(hash) > 0),
				name    text  NOT NULL,
				role    text  NOT NULL CHECK (role <> ''),
				queues  bytea,
				shares  bytea,
				workers bytea,
				limits  bytea,
				created bigint,
				expires bigint,
				revoked bigint
			)`,
			// The fencing epoch of the servers sharing the database: one
			// row, written by the leader election; every write transaction
			// of a fenced store checks it first (fence).
			`CREATE TABLE leader (
				id     integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
				epoch  bigint  NOT NULL,
				holder text    NOT NULL,
				url    text    NOT NULL,
				since  bigint  NOT NULL
			)`,
			`CREATE FUNCTION allot_fence(want bigint) RETURNS void LANGUAGE plpgsql AS $$
			DECLARE
				have bigint;
			BEGIN
				SELECT epoch INTO have FROM leader WHERE id = 1 FOR SHARE;
				IF have IS DISTINCT FROM want THEN
					RAISE EXCEPTION 'the leader epoch is %, this server writes for epoch %', have, want
						USING ERRCODE = '` + fencedCode + `';
				END IF;
			END
			$$`,
		},
	},
	{
		name: "attempt usage",
		stmts: []string{
			// What the last ended attempt used (store.Task.CPUSeconds,
			// PeakMemory); 0 when not measured, as for tasks stored
			// before this step.
			`ALTER TABLE tasks ADD COLUMN cpu_seconds double precision NOT NULL DEFAULT 0`,
			`ALTER TABLE tasks ADD COLUMN peak_memory bigint NOT NULL DEFAULT 0`,
		},
	},
}

// fencedCode is the SQLSTATE allot_fence raises: a class of its own, so
// that no PostgreSQL error is mistaken for it.
const fencedCode = "AL001"

// unfinishedWhere selects jobs that have not ended (store.JobEnded). It is
// frozen into the jobs_unfinished index by the first migration; the query in
// Unfinished uses the same text so that the index applies.
const unfinishedWhere = `state NOT IN ('succeeded', 'failed', 'cancelled')`

// schemaVersion is the version this binary creates and understands.
var schemaVersion = len(migrations)

// migrationLock is the key of the transaction-level advisory lock that
// migrations take, so that servers starting together on an empty database
// create the schema once: the others wait, then find it there.
const migrationLock = 0x616c6c6f74 // "allot"

// migrate brings the schema (the first schema of the connection's
// search_path) to schemaVersion in one transaction, so a crash half-way
// leaves the old schema intact. A schema written by a newer binary is
// refused rather than guessed at. created reports whether this call made
// the schema from nothing.
func migrate(ctx context.Context, conn *pgx.Conn, now time.Time) (created bool, err error) {
	return migrateTo(ctx, conn, schemaVersion, now)
}

// migrateTo applies the steps up to version; tests use it to make the
// schema an older binary would have left.
func migrateTo(ctx context.Context, conn *pgx.Conn, version int, now time.Time) (created bool, err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))`, int32(migrationLock&0x7fffffff)); err != nil {
		return false, fmt.Errorf("lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version integer PRIMARY KEY,
		name    text    NOT NULL,
		applied bigint  NOT NULL
	)`); err != nil {
		return false, fmt.Errorf("create schema_version: %w", err)
	}
	var have int
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&have); err != nil {
		return false, fmt.Errorf("read schema_version: %w", err)
	}
	if have > version {
		return false, fmt.Errorf("database schema version %d is newer than this binary supports (%d): run a newer allot", have, version)
	}
	for v := have; v < version; v++ {
		m := migrations[v]
		for i, stmt := range m.stmts {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return false, fmt.Errorf("migration %d (%s) statement %d: %w", v+1, m.name, i+1, err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_version (version, name, applied) VALUES ($1, $2, $3)`,
			v+1, m.name, now.UnixNano()); err != nil {
			return false, fmt.Errorf("record migration %d: %w", v+1, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("commit: %w", err)
	}
	return have == 0 && version > 0, nil
}
