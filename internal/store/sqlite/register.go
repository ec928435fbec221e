package sqlite

import (
	"context"
	"os"
	"path/filepath"

	"github.com/allot-sched/allot/internal/store"
)

// Scheme is the scheme of SQLite store URLs: "sqlite:///path/allot.db",
// "sqlite://:memory:". store.Open takes a plain path for SQLite too.
const Scheme = "sqlite"

// DatabaseFile is the database's name in a data directory: a store URL or
// path that names a directory opens this file in it.
const DatabaseFile = "allot.db"

// URL is the store URL of the SQLite database at path.
func URL(path string) string { return Scheme + "://" + path }

func init() {
	store.Register(Scheme, func(_ context.Context, path string) (store.Store, error) {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			path = filepath.Join(path, DatabaseFile)
		}
		st, err := Open(path)
		if err != nil {
			return nil, err // not a nil *Store in a non-nil store.Store
		}
		return st, nil
	})
}
