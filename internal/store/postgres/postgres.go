// Package postgres is the store for servers that share one database: a
// store.Store on PostgreSQL, written through pgx.
//
// It keeps store.Store's semantics exactly (storetest runs on it as on
// SQLite) and SQLite's layout (the same tables and indexes, in
// PostgreSQL's types: schema.go). A Commit that returned nil is durable:
// Open refuses a database whose fsync or synchronous_commit is off. Writes
// are serialised inside the process, and each Commit is one pipelined
// round trip: its statements (one per kind of row, the rows passed as
// arrays and spread by unnest) go to the server at once and run as one
// implicit transaction. Reads use a pool of connections; those that read
// more than one table read one snapshot (REPEATABLE READ).
//
// Several servers may open one database; only the leader writes. Fence
// makes every write transaction first check the leader's fencing epoch,
// and fail with store.ErrFenced once another server has taken over.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/allot-sched/allot/internal/store"
)

// Store is a store.Store on a PostgreSQL database (one schema of it).
type Store struct {
	pool *pgxpool.Pool
	name string // the URL without its password, for errors

	wmu     sync.Mutex // serialises writes: one writer, events in ID order
	epoch   atomic.Int64
	created bool

	leadMu sync.Mutex
	lead   *pgx.Conn // the session that holds the leader lock (Lead)

	closeOnce sync.Once
	closed    atomic.Bool
}

var _ store.Store = (*Store)(nil)

// connectTimeout bounds the first connection at Open, so that a server
// pointed at an address where nothing answers says so instead of hanging.
const connectTimeout = 10 * time.Second

// Open connects to the database rawURL names (postgres://user:pass@host/db
// ?sslmode=…, or any connection string pgx takes; pool_max_conns sizes the
// pool, by default max(4, CPUs)), checks that commits
// there are durable, and brings the schema up to date (the first schema
// of the search_path, which a search_path parameter of the URL may set).
// It fails if the schema was written by a newer allot, if the database
// does not make commits durable (fsync or synchronous_commit off), or if
// it cannot be reached; the error never quotes the password.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	name := Redact(rawURL)
	fail := func(err error) (*Store, error) { return nil, fmt.Errorf("postgres: open %s: %w", name, err) }
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return fail(fmt.Errorf("store URL: %s", redactIn(err.Error(), rawURL)))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > connectTimeout {
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fail(classify(err))
	}
	s := &Store{pool: pool, name: name}
	err = pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		if err := checkDurability(ctx, c.Conn()); err != nil {
			return err
		}
		created, err := migrate(ctx, c.Conn(), time.Now())
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		s.created = created
		return nil
	})
	if err != nil {
		pool.Close()
		return fail(classify(err))
	}
	return s, nil
}

// CreatedSchema reports whether this Open made the schema from nothing; of
// servers opening a new database together, exactly one did.
func (s *Store) CreatedSchema() bool { return s.created }

// Fence makes every later write transaction check first that the leader
// row holds epoch, and fail with store.ErrFenced otherwise: a server that
// lost its leadership must not write one row more. 0 turns the check off
// (a server that runs alone).
func (s *Store) Fence(epoch int64) { s.epoch.Store(epoch) }

// checkDurability refuses a database on which an acknowledged commit could
// be lost: fsync off (a crash of the machine loses committed data) or
// synchronous_commit off (a crash of PostgreSQL loses the last commits).
func checkDurability(ctx context.Context, c *pgx.Conn) error {
	for _, p := range []struct{ name, bad string }{{"fsync", "off"}, {"synchronous_commit", "off"}} {
		var v string
		if err := c.QueryRow(ctx, "SELECT current_setting($1)", p.name).Scan(&v); err != nil {
			return fmt.Errorf("read %s: %w", p.name, err)
		}
		if strings.EqualFold(v, p.bad) {
			return fmt.Errorf("%s is %s: a commit the server acknowledged could be lost in a crash; "+
				"set %s = on in postgresql.conf (or remove it from the store URL)", p.name, v, p.name)
		}
	}
	return nil
}

// Close closes the pool, then the leader lock's session, so that another
// server takes the lead only once this one wrote its last. Calling it
// again returns nil.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.pool.Close()
		s.releaseLead()
	})
	return nil
}

// errClosed is what every call after Close returns.
var errClosed = errors.New("store closed")

func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return errClosed
	}
	return nil
}

// classify gives PostgreSQL's errors about the database itself the store's
// meaning: an unreachable server, a full disk, a read-only database or one
// shutting down are *store.UnavailableError (the write was not applied, or
// its fate is unknown, and the same write may succeed later); a fencing
// failure is store.ErrFenced; a refused row is store.ErrInvalid. Other
// errors are returned unchanged.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == fencedCode:
			return fmt.Errorf("%w: %s", store.ErrFenced, pe.Message)
		case pe.Code == "23503": // foreign_key_violation
			return fmt.Errorf("job is not stored: %w (%w)", store.ErrInvalid, err)
		case strings.HasPrefix(pe.Code, "23"), // integrity constraint violation
			pe.Code == "22021", pe.Code == "22P05", pe.Code == "54000": // bad encoding, value too large
			return fmt.Errorf("%w: %w", store.ErrInvalid, err)
		case pe.Code == "53100": // disk_full
			return &store.UnavailableError{Cause: "disk full", Err: err}
		case strings.HasPrefix(pe.Code, "53"): // insufficient resources
			return &store.UnavailableError{Cause: "database out of resources", Err: err}
		case pe.Code == "25006": // read_only_sql_transaction
			return &store.UnavailableError{Cause: "read-only database", Err: err}
		case strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "57P"): // connection, shutdown
			return &store.UnavailableError{Cause: "database unreachable", Err: err}
		case pe.Code == "58030": // io_error
			return &store.UnavailableError{Cause: "I/O error", Err: err}
		}
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.Timeout(err) || isNetError(err) {
		return &store.UnavailableError{Cause: "database unreachable", Err: err}
	}
	return err
}

// isNetError reports a connection that broke under a statement.
func isNetError(err error) bool {
	msg := err.Error()
	for _, s := range []string{"conn closed", "connection reset", "broken pipe", "unexpected EOF", "connection refused"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Redact returns a store URL without its password, for messages and logs.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" {
		if i := strings.Index(rawURL, "password="); i >= 0 {
			end := strings.IndexAny(rawURL[i:], " &")
			if end < 0 {
				return rawURL[:i] + "password=…"
			}
			return rawURL[:i] + "password=…" + rawURL[i+end:]
		}
		if at := strings.LastIndex(rawURL, "@"); at >= 0 {
			if scheme, _, ok := strings.Cut(rawURL, "://"); ok {
				return scheme + "://…@" + rawURL[at+1:]
			}
		}
		return rawURL
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "…")
		}
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "…")
		u.RawQuery = q.Encode()
	}
	return strings.Replace(u.String(), "%E2%80%A6", "…", -1)
}

// redactIn removes the password of rawURL from a message that may quote
// it (pgx's parse errors quote the connection string).
func redactIn(msg, rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil && u.User != nil {
		if pw, has := u.User.Password(); has && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "…")
		}
	}
	return msg
}

// TempSchema creates a new, empty schema named prefix plus a unique
// suffix in the database rawURL names, and returns the URL that selects it
// (its search_path) and a function that drops it with everything in it.
// allot bench measures on one, so that a run starts from an empty store
// and leaves the database as it found it.
func TempSchema(ctx context.Context, rawURL, prefix string) (string, func(context.Context) error, error) {
	name := fmt.Sprintf("%s_%d_%d", prefix, time.Now().UnixNano(), os.Getpid())
	withPath, err := WithSearchPath(rawURL, name)
	if err != nil {
		return "", nil, err
	}
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		return "", nil, fmt.Errorf("postgres: %s: %w", Redact(rawURL), classify(err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
		return "", nil, fmt.Errorf("postgres: %s: create schema %s: %w", Redact(rawURL), name, err)
	}
	drop := func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, rawURL)
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		_, err = conn.Exec(ctx, "DROP SCHEMA "+ident+" CASCADE")
		return err
	}
	return withPath, drop, nil
}

// WithSearchPath returns rawURL with its search_path set to schema, so
// that a store opened on it keeps its tables there.
func WithSearchPath(rawURL, schema string) (string, error) {
	if !strings.Contains(rawURL, "://") {
		return rawURL + " search_path=" + schema, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("postgres: store URL: %w", errors.New(redactIn(err.Error(), rawURL)))
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
