package sqlite

import (
	"errors"
	"fmt"
	"path/filepath"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/allot-sched/allot/internal/store"
)

// classify gives SQLite's errors about the file itself the store's
// meaning: a full disk, a read-only or failing file system, a lock another
// process holds are *store.UnavailableError (the write was not applied and
// may succeed later), a damaged file is store.ErrDamaged. Other errors
// (refused rows, a cancelled context) are returned unchanged.
func (s *Store) classify(err error) error {
	var se *msqlite.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	cause := ""
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_FULL:
		cause = "disk full"
	case sqlite3.SQLITE_IOERR:
		// SQLite reports some writes that found no space (growing the
		// shared-memory file) as I/O errors: ask the file system.
		cause = "I/O error"
		if full, ok := noSpace(filepath.Dir(s.path)); ok {
			cause = full
		}
	case sqlite3.SQLITE_READONLY:
		cause = "read-only database or file system"
	case sqlite3.SQLITE_CANTOPEN:
		cause = "cannot open the database file"
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		cause = "database locked by another process"
	case sqlite3.SQLITE_NOMEM:
		cause = "out of memory"
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("%w: %w", store.ErrDamaged, err)
	default:
		return err
	}
	return &store.UnavailableError{Cause: cause, Err: err}
}
