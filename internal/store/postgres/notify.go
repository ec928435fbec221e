package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// eventsChannel is the NOTIFY channel of every commit that appends events;
// the payload names the schema, so that the schemas of one database are
// told apart.
const eventsChannel = "allot_events"

// notifyEventsSQL is queued in every write transaction that appends events:
// PostgreSQL delivers the notification when, and only when, it commits.
const notifyEventsSQL = `SELECT pg_notify('` + eventsChannel + `', current_schema())`

// WatchEvents calls changed after every commit of any server that appended
// events to this store's schema, until ctx ends: replicas that do not lead
// wake their event streams by it (LISTEN/NOTIFY on a connection of its
// own). It also calls changed after each (re)connection, since
// notifications sent while it was away are lost.
func (s *Store) WatchEvents(ctx context.Context, changed func()) {
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		if err := s.listen(ctx, changed); err != nil && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			wait = min(wait*2, 5*time.Second)
			continue
		}
		wait = 100 * time.Millisecond
	}
}

func (s *Store) listen(ctx context.Context, changed func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+eventsChannel); err != nil {
		return err
	}
	changed()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Payload == schema {
			changed()
		}
	}
}
