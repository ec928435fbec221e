package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/allot-sched/allot/internal/store"
)

// ErrLeaderElsewhere means another server holds the database's leader
// lock: two servers scheduling from one database would run every job
// twice.
var ErrLeaderElsewhere = errors.New("another allot server leads this database")

// leaderLock is the first key of the session-level advisory lock a
// leading server holds; the second is the schema's, so that schemas of one
// database are led apart.
const leaderLock int32 = 0x616c6c6f // "allo"

// Lead makes this server the one that writes to the database, until
// Close: it takes the leader lock, a session-level advisory lock on a
// connection of its own, and starts a new fencing epoch in the leader row
// (holder names this server in it), which every later write of this store
// checks (Fence). If the lock's session is lost (its connection cut) and
// another server takes the lock, that server starts the next epoch and
// this store's writes fail with store.ErrFenced from then on: it never
// writes beside a newer leader. Lead fails with ErrLeaderElsewhere,
// naming the holder, while another server holds the lock; it does not
// wait for it: servers stand by and take the lead through Candidate.
func (s *Store) Lead(ctx context.Context, holder string) error {
	fail := func(err error) error { return fmt.Errorf("postgres: lead %s: %w", s.name, err) }
	if err := s.checkOpen(); err != nil {
		return fail(err)
	}
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return fail(classify(err))
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext(current_schema()))`, leaderLock).Scan(&got); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return fail(classify(err))
	}
	if !got {
		var (
			other string
			since int64
		)
		_ = conn.QueryRow(ctx, `SELECT holder, since FROM leader WHERE id = 1`).Scan(&other, &since)
		conn.Close(context.WithoutCancel(ctx))
		if other == "" {
			return fail(ErrLeaderElsewhere)
		}
		return fail(fmt.Errorf("%w: %s, since %s",
			ErrLeaderElsewhere, other, time.Unix(0, since).UTC().Format(time.RFC3339)))
	}
	var epoch int64
	err = conn.QueryRow(ctx, `INSERT INTO leader (epoch, holder, url, since) VALUES (1, $1, '', $2)
		ON CONFLICT (id) DO UPDATE SET epoch = leader.epoch + 1, holder = excluded.holder, url = excluded.url, since = excluded.since
		RETURNING epoch`, holder, time.Now().UnixNano()).Scan(&epoch)
	if err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return fail(classify(err))
	}
	s.leadMu.Lock()
	s.lead = conn
	s.leadMu.Unlock()
	s.Fence(epoch)
	return nil
}

// Epoch is the fencing epoch this store writes for; 0 when it does not
// lead.
func (s *Store) Epoch() int64 { return s.epoch.Load() }

// releaseLead closes the leader lock's session, which releases the lock.
func (s *Store) releaseLead() {
	s.leadMu.Lock()
	defer s.leadMu.Unlock()
	if s.lead != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.lead.Close(ctx)
		s.lead = nil
	}
}

var _ interface {
	store.Store
	Lead(context.Context, string) error
} = (*Store)(nil)
