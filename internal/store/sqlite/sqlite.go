// Package sqlite is the embedded store: one SQLite file, written through
// modernc.org/sqlite (pure Go, so the allot binary needs no C toolchain).
//
// The file is in WAL mode with synchronous=FULL: a Commit that returned nil
// has been fsynced to the write-ahead log, so it survives kill -9 and power
// loss. Writes go through exactly one connection, so they are serialised in
// the process and never fight over SQLite's write lock; reads use a separate
// pool, and WAL lets them read a consistent snapshot while the writer
// commits, without blocking it or being blocked by it.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/allot-sched/allot/internal/store"
)

// Memory is the path that opens a private in-memory database, for tests
// and throwaway runs: nothing is durable and there is one connection for
// reads and writes.
const Memory = ":memory:"

// busyTimeout is how long a connection waits for a lock another process
// holds (another allot opening the same file) before it fails.
const busyTimeout = 10 * time.Second

// Store is a store.Store on one SQLite file.
type Store struct {
	path    string
	writer  *sql.DB // exactly one connection: all writes, serialised
	readers *sql.DB // a pool of query-only connections
	stmts   stmts   // prepared on the writer, reused by every write
	// jobHeader reads one job's row (JobHeader, which every submission
	// calls to refuse a taken ID): prepared once on the readers, not
	// parsed and planned per call.
	jobHeader *sql.Stmt

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// Open opens the database file at path, creating it if needed, and brings
// its schema up to date. It fails if the file was written by a newer allot
// (its schema version is unknown here), if the file system cannot give the
// durability settings (WAL, synchronous=FULL), or if SQLite's quick
// integrity check finds the file damaged (store.ErrDamaged): a server must
// not schedule from, and write more into, a file it cannot trust. A full
// disk or a read-only file is a *store.UnavailableError that says so. path
// is a file path, or Memory.
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: open: empty path")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlite: open %q: path must not contain '?' or '#'", path)
	}
	ctx := context.Background()
	s := &Store{path: path}
	memory := path == Memory

	var err error
	s.writer, err = sql.Open("sqlite", dsn(path, writerPragmas, "&_txlock=immediate"))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// One connection that never closes: writes are serialised by
	// database/sql's pool, statements stay prepared, and a :memory:
	// database (private to its connection) lives as long as the store.
	s.writer.SetMaxOpenConns(1)
	s.writer.SetMaxIdleConns(1)
	s.writer.SetConnMaxLifetime(0)
	s.writer.SetConnMaxIdleTime(0)

	if err := s.checkDurability(ctx, memory); err != nil {
		s.writer.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, s.classify(err))
	}
	if err := s.checkIntegrity(ctx); err != nil {
		s.writer.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, s.classify(err))
	}
	if err := migrate(ctx, s.writer, time.Now()); err != nil {
		s.writer.Close()
		return nil, fmt.Errorf("sqlite: open %s: migrate: %w", path, s.classify(err))
	}
	if err := s.stmts.prepare(ctx, s.writer); err != nil {
		s.writer.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, s.classify(err))
	}

	if memory {
		s.readers = s.writer
	} else {
		s.readers, err = sql.Open("sqlite", dsn(path, readerPragmas, ""))
		if err != nil {
			s.stmts.close()
			s.writer.Close()
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
		n := max(4, runtime.GOMAXPROCS(0))
		s.readers.SetMaxOpenConns(n)
		s.readers.SetMaxIdleConns(n)
	}
	if s.jobHeader, err = s.readers.PrepareContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = ?`); err != nil {
		if s.readers != s.writer {
			s.readers.Close()
		}
		s.stmts.close()
		s.writer.Close()
		return nil, fmt.Errorf("sqlite: open %s: prepare: %w", path, s.classify(err))
	}
	return s, nil
}

// writerPragmas make acknowledged commits durable: WAL with a full fsync of
// the log at every commit. foreign_keys makes SQLite check that a task's job
// exists. temp_store keeps statement journals in memory: a multi-row
// statement inside a commit journals the pages it changes, and past 64 KiB
// SQLite spilled them to a temporary file, two writes a page, which was
// half of a small-jobs commit's writes. Nothing durable lives there: the
// journal only undoes a failed statement within its transaction.
var writerPragmas = []string{
	fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()),
	"journal_mode(WAL)",
	"synchronous(FULL)",
	"foreign_keys(1)",
	"cache_size(-65536)",           // KiB: keep a large job's tasks and the indexes in memory
	"journal_size_limit(67108864)", // bytes: after a checkpoint, shrink a WAL a huge batch grew
	"temp_store(memory)",
}

// readerPragmas: readers never write, and SQLite enforces it.
var readerPragmas = []string{
	fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()),
	"query_only(1)",
}

func dsn(path string, pragmas []string, extra string) string {
	var b strings.Builder
	b.WriteString(path)
	for i, p := range pragmas {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString("_pragma=")
		b.WriteString(p)
	}
	b.WriteString(extra)
	return b.String()
}

// checkDurability reads back the pragmas the writer asked for. SQLite does
// not fail when it cannot switch to WAL (some file systems have no shared
// memory); it keeps the old journal mode, and the store would silently lose
// its guarantees, so Open fails instead.
func (s *Store) checkDurability(ctx context.Context, memory bool) error {
	if memory {
		return nil
	}
	var mode string
	if err := s.writer.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal_mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal_mode is %q, want wal (does the file system support shared memory?)", mode)
	}
	var sync int
	if err := s.writer.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return fmt.Errorf("read synchronous: %w", err)
	}
	if sync != 2 {
		return fmt.Errorf("synchronous is %d, want 2 (FULL)", sync)
	}
	return nil
}

// maxProblems bounds the problems of a failed integrity check that an
// error quotes: the first few say enough, and a badly damaged file has
// thousands.
const maxProblems = 5

// checkIntegrity runs PRAGMA quick_check, which reads every page of the file
// and checks the b-trees' structure (not that indexes match their tables,
// which integrity_check also does, at many times the cost): O(size of the
// file), a fraction of a second for a database of a few hundred MB.
func (s *Store) checkIntegrity(ctx context.Context) error {
	rows, err := s.writer.QueryContext(ctx, fmt.Sprintf("PRAGMA quick_check(%d)", maxProblems))
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("integrity check: %w", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: the integrity check found: %s", store.ErrDamaged, strings.Join(problems, "; "))
	}
	return nil
}

// Close closes the readers, then the writer: the last connection to close
// checkpoints the write-ahead log into the main file. Calling it again
// returns the first result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		errs := []error{s.jobHeader.Close()}
		if s.readers != s.writer {
			errs = append(errs, s.readers.Close())
		}
		errs = append(errs, s.stmts.close(), s.writer.Close())
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("sqlite: close %s: %w", s.path, err)
		}
	})
	return s.closeErr
}
