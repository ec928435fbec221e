package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/allot-sched/allot/internal/store"
)

// tokenCols are the columns of the tokens table in the order scanToken
// reads them.
const tokenCols = `id, hash, name, role, queues, shares, workers, limits, created, expires, revoked`

// PutToken implements store.Store. Tokens are written in their own small
// transaction on the writer connection, so they queue behind (and never
// interleave with) the control loop's commits.
func (s *Store) PutToken(ctx context.Context, t store.Token) error {
	fail := func(err error) error { return fmt.Errorf("sqlite: put token %q: %w", t.ID, err) }
	args, err := tokenRow(t)
	if err != nil {
		return fail(err)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		// DO NOTHING on either unique key (id, hash): no row changed means
		// a duplicate, told apart from other failures without parsing
		// SQLite's message.
		res, err := tx.ExecContext(ctx, `INSERT INTO tokens (`+tokenCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING`, args...)
		if err != nil {
			return constraint(err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return store.ErrDuplicate
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return nil
}

// TokenByHash implements store.Store.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (store.Token, error) {
	t, err := scanToken(s.readers.QueryRowContext(ctx, `SELECT `+tokenCols+` FROM tokens WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Token{}, fmt.Errorf("sqlite: token by hash: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Token{}, fmt.Errorf("sqlite: token by hash: %w", err)
	}
	return t, nil
}

// Tokens implements store.Store.
func (s *Store) Tokens(ctx context.Context) ([]store.Token, error) {
	rows, err := s.readers.QueryContext(ctx, `SELECT `+tokenCols+` FROM tokens ORDER BY created, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: tokens: %w", err)
	}
	defer rows.Close()
	var out []store.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: tokens: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: tokens: %w", err)
	}
	return out, nil
}

// RevokeToken implements store.Store. The update and the read back happen
// in one write transaction, so the answer is what was committed.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) (store.Token, error) {
	fail := func(err error) (store.Token, error) {
		return store.Token{}, fmt.Errorf("sqlite: revoke token %q: %w", id, err)
	}
	if err := store.CheckRevoke(at); err != nil {
		return fail(err)
	}
	when := timeValue(at)
	var t store.Token
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked = COALESCE(revoked, ?) WHERE id = ?`, when, id); err != nil {
			return err
		}
		var err error
		t, err = scanToken(tx.QueryRowContext(ctx, `SELECT `+tokenCols+` FROM tokens WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fail(err)
	}
	return t, nil
}

// tokenRow validates t (store.CheckToken) and returns its column values
// in tokenCols order.
func tokenRow(t store.Token) ([]any, error) {
	if err := store.CheckToken(t); err != nil {
		return nil, err
	}
	times := []any{timeValue(t.Created), timeValue(t.Expires), timeValue(t.Revoked)}
	lists := make([]any, 3)
	for i, l := range [][]string{t.Queues, t.Shares, t.Workers} {
		if len(l) == 0 {
			continue
		}
		b, err := json.Marshal(l)
		if err != nil {
			return nil, err
		}
		lists[i] = b
	}
	var limits any // NULL: the defaults
	if !t.Limits.IsZero() {
		b, err := json.Marshal(t.Limits)
		if err != nil {
			return nil, err
		}
		limits = b
	}
	return []any{t.ID, t.Hash, t.Name, t.Role, lists[0], lists[1], lists[2], limits, times[0], times[1], times[2]}, nil
}

func scanToken(r scanner) (store.Token, error) {
	var (
		t                         store.Token
		queues, shares, workers   []byte
		limits                    []byte
		created, expires, revoked sql.NullInt64
	)
	if err := r.Scan(&t.ID, &t.Hash, &t.Name, &t.Role, &queues, &shares, &workers, &limits, &created, &expires, &revoked); err != nil {
		return store.Token{}, err
	}
	store.ReadTokenLists(&t, queues, shares, workers, limits)
	t.Created, t.Expires, t.Revoked = timeOf(created), timeOf(expires), timeOf(revoked)
	return t, nil
}
