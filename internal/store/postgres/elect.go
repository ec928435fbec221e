package postgres

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// LeaderRow is the database's leader row: who led last, from when, and the
// fencing epoch every write of that leader checks.
type LeaderRow struct {
	Epoch  int64
	Holder string
	URL    string
	Since  time.Time
}

// Candidate is one server's place in the election of the database's
// leader. Any number of servers stand; the one whose session holds the
// leader lock (a session-level advisory lock) leads, and the others try
// to take the lock again every ~100 ms (Try). The candidate's session is
// its own connection, on which PostgreSQL ends the session after Timeout
// of silence (idle_session_timeout, idle_in_transaction_session_timeout):
// a leader frozen or cut from the database loses the lock within Timeout,
// and a standby takes it. The leader keeps its session alive with Confirm.
type Candidate struct {
	s       *Store
	holder  string
	url     string
	timeout time.Duration

	mu    sync.Mutex
	conn  *pgx.Conn // nil between sessions
	held  bool      // conn holds the leader lock
	epoch int64     // the epoch this candidate started, while held
}

// Candidate returns this store's candidate in the leader election, named
// holder, sending clients to url while it leads; timeout is how long the
// database keeps a silent session (and so its lock).
func (s *Store) Candidate(holder, url string, timeout time.Duration) *Candidate {
	return &Candidate{s: s, holder: holder, url: url, timeout: timeout}
}

// session returns the candidate's connection, making it if needed.
func (c *Candidate) session(ctx context.Context) (*pgx.Conn, error) {
	if c.conn != nil && !c.conn.IsClosed() {
		return c.conn, nil
	}
	cfg := c.s.pool.Config().ConnConfig.Copy()
	ms := strconv.FormatInt(max(c.timeout.Milliseconds(), 1), 10)
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["idle_session_timeout"] = ms
	cfg.RuntimeParams["idle_in_transaction_session_timeout"] = ms
	cfg.RuntimeParams["application_name"] = "allot leader election"
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > c.timeout {
		cfg.ConnectTimeout = c.timeout
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, classify(err)
	}
	c.conn, c.held = conn, false
	return conn, nil
}

// drop closes the session, releasing the lock if it held it.
func (c *Candidate) drop() {
	if c.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = c.conn.Close(ctx)
		cancel()
	}
	c.conn, c.held = nil, false
}

// Try makes one attempt to lead. When the lock was free, the candidate
// takes it, starts the next epoch in the leader row (naming itself there)
// and fences the store's writes to that epoch: lead is true and row is the
// new row. Otherwise row is the current leader's. An error leaves the
// candidate without a session; the next Try makes a new one.
func (c *Candidate) Try(ctx context.Context) (lead bool, row LeaderRow, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.s.checkOpen(); err != nil {
		return false, row, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	conn, err := c.session(ctx)
	if err != nil {
		return false, row, err
	}
	if !c.held {
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext(current_schema()))`, leaderLock).Scan(&got); err != nil {
			c.drop()
			return false, row, classify(err)
		}
		if !got {
			row, err = readLeader(ctx, conn)
			if err != nil {
				c.drop()
			}
			return false, row, err
		}
		c.held = true
	}
	var since int64
	now := time.Now()
	err = conn.QueryRow(ctx, `INSERT INTO leader (epoch, holder, url, since) VALUES (1, $1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET epoch = leader.epoch + 1, holder = excluded.holder, url = excluded.url, since = excluded.since
		RETURNING epoch, since`, c.holder, c.url, now.UnixNano()).Scan(&row.Epoch, &since)
	if err != nil {
		c.drop()
		return false, LeaderRow{}, classify(err)
	}
	row.Holder, row.URL, row.Since = c.holder, c.url, time.Unix(0, since)
	c.epoch = row.Epoch
	c.s.Fence(row.Epoch)
	return true, row, nil
}

// Confirm checks that the candidate's session, and so its lock, is still
// there: a round trip on it, which also keeps it from timing out. A
// leader calls it more often than the timeout; an error means the lock
// may be lost: the leader must stop (Resign) and stand again.
func (c *Candidate) Confirm(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil || !c.held {
		return fmt.Errorf("postgres: %s: this server does not hold the leader lock", c.s.name)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	// The lock is the session's until it ends: a live session holds it.
	if _, err := c.conn.Exec(ctx, `SELECT 1`); err != nil {
		c.drop()
		return fmt.Errorf("postgres: %s: confirming the leader lock: %w", c.s.name, classify(err))
	}
	return nil
}

// Resign gives the leadership up: the store's writes are fenced off for
// good (every later write fails with store.ErrFenced until a new Try
// wins), the leader row forgets this server's URL if it still holds its
// epoch (so that the standbys stop sending callers to it), the lock is
// released, and the session is closed.
func (c *Candidate) Resign() {
	c.s.Fence(-1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held && c.conn != nil && !c.conn.IsClosed() {
		ctx, cancel := context.WithTimeout(context.Background(), min(c.timeout, time.Second))
		_, _ = c.conn.Exec(ctx, `UPDATE leader SET url = '' WHERE id = 1 AND epoch = $1`, c.epoch)
		// Released here rather than when the server has ended the closed
		// session's backend, which it does some time after: a standby
		// trying at once gets the lock.
		_, _ = c.conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
		cancel()
	}
	c.drop()
}

// Leader reads the leader row ("" URL and a zero epoch while no server
// ever led).
func (s *Store) Leader(ctx context.Context) (LeaderRow, error) {
	var row LeaderRow
	err := s.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		var err error
		row, err = readLeader(ctx, c.Conn())
		return err
	})
	return row, err
}

func readLeader(ctx context.Context, conn *pgx.Conn) (LeaderRow, error) {
	var (
		row   LeaderRow
		since int64
	)
	err := conn.QueryRow(ctx, `SELECT epoch, holder, url, since FROM leader WHERE id = 1`).Scan(&row.Epoch, &row.Holder, &row.URL, &since)
	if err == pgx.ErrNoRows {
		return LeaderRow{}, nil
	}
	if err != nil {
		return LeaderRow{}, classify(err)
	}
	row.Since = time.Unix(0, since)
	return row, nil
}
