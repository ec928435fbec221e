package postgres

import (
	"context"

	"github.com/allot-sched/allot/internal/store"
)

// Schemes are the schemes of PostgreSQL store URLs, as libpq takes them:
// "postgres://user:password@host:5432/allot?sslmode=verify-full".
var Schemes = []string{"postgres", "postgresql"}

func init() {
	for _, scheme := range Schemes {
		store.Register(scheme, func(ctx context.Context, location string) (store.Store, error) {
			st, err := Open(ctx, scheme+"://"+location)
			if err != nil {
				return nil, err // not a nil *Store in a non-nil store.Store
			}
			return st, nil
		})
	}
}
