package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/allot-sched/allot/internal/store"
)

// tokenCols are the columns of the tokens table in the order scanToken
// reads them.
const tokenCols = `id, hash, name, role, queues, shares, workers, limits, created, expires, revoked`

// PutToken implements store.Store. Tokens are written in their own small
// transaction, behind the fence, queued behind the control loop's commits.
func (s *Store) PutToken(ctx context.Context, t store.Token) error {
	fail := func(err error) error { return fmt.Errorf("postgres: put token %q: %w", t.ID, err) }
	args, err := tokenRow(t)
	if err != nil {
		return fail(err)
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		// DO NOTHING on either unique key (id, hash): no row changed means
		// a duplicate.
		tag, err := tx.Exec(ctx, `INSERT INTO tokens (`+tokenCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT DO NOTHING`, args...)
		if err != nil {
			return classify(err)
		}
		if tag.RowsAffected() == 0 {
			return store.ErrDuplicate
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return nil
}

// PutFirstToken stores t only if no token is stored yet, and reports
// whether it did: of several servers starting together on a new database,
// exactly one stores the first admin token (package auth, Bootstrap).
func (s *Store) PutFirstToken(ctx context.Context, t store.Token) (bool, error) {
	fail := func(err error) (bool, error) { return false, fmt.Errorf("postgres: put first token %q: %w", t.ID, err) }
	args, err := tokenRow(t)
	if err != nil {
		return fail(err)
	}
	stored := false
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		// The lock conflicts with itself and with every write of the
		// table, so two servers cannot both find it empty.
		if _, err := tx.Exec(ctx, `LOCK TABLE tokens IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return classify(err)
		}
		tag, err := tx.Exec(ctx, `INSERT INTO tokens (`+tokenCols+`) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11
			WHERE NOT EXISTS (SELECT 1 FROM tokens)`, args...)
		if err != nil {
			return classify(err)
		}
		stored = tag.RowsAffected() == 1
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return stored, nil
}

// TokenByHash implements store.Store.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (store.Token, error) {
	fail := func(err error) (store.Token, error) {
		return store.Token{}, fmt.Errorf("postgres: token by hash: %w", err)
	}
	if err := s.checkOpen(); err != nil {
		return fail(err)
	}
	t, err := scanToken(s.pool.QueryRow(ctx, `SELECT `+tokenCols+` FROM tokens WHERE hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(store.ErrNotFound)
	}
	if err != nil {
		return fail(classify(err))
	}
	return t, nil
}

// Tokens implements store.Store.
func (s *Store) Tokens(ctx context.Context) ([]store.Token, error) {
	fail := func(err error) ([]store.Token, error) { return nil, fmt.Errorf("postgres: tokens: %w", err) }
	if err := s.checkOpen(); err != nil {
		return fail(err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+tokenCols+` FROM tokens ORDER BY created, id`)
	if err != nil {
		return fail(classify(err))
	}
	defer rows.Close()
	var out []store.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return fail(err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return fail(classify(err))
	}
	return out, nil
}

// RevokeToken implements store.Store. The update and the read back happen
// in one write transaction, so the answer is what was committed.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) (store.Token, error) {
	fail := func(err error) (store.Token, error) {
		return store.Token{}, fmt.Errorf("postgres: revoke token %q: %w", id, err)
	}
	if err := store.CheckRevoke(at); err != nil {
		return fail(err)
	}
	var t store.Token
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		t, err = scanToken(tx.QueryRow(ctx, `UPDATE tokens SET revoked = COALESCE(revoked, $1) WHERE id = $2 RETURNING `+tokenCols,
			timeValue(at), id))
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		return classify(err)
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
	lists := make([][]byte, 3)
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
	var limits []byte // NULL: the defaults
	if !t.Limits.IsZero() {
		b, err := json.Marshal(t.Limits)
		if err != nil {
			return nil, err
		}
		limits = b
	}
	return []any{t.ID, t.Hash, t.Name, t.Role, lists[0], lists[1], lists[2], limits,
		timeValue(t.Created), timeValue(t.Expires), timeValue(t.Revoked)}, nil
}

func scanToken(r pgx.Row) (store.Token, error) {
	var (
		t                         store.Token
		queues, shares, workers   []byte
		limits                    []byte
		created, expires, revoked *int64
	)
	if err := r.Scan(&t.ID, &t.Hash, &t.Name, &t.Role, &queues, &shares, &workers, &limits, &created, &expires, &revoked); err != nil {
		return store.Token{}, err
	}
	store.ReadTokenLists(&t, queues, shares, workers, limits)
	t.Created, t.Expires, t.Revoked = timeOf(created), timeOf(expires), timeOf(revoked)
	return t, nil
}
