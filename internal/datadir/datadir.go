// Package datadir prepares the server's data directory before anything is
// read from it. It takes the directory's lock, so that two servers never
// share one (each would run every job); it refuses a directory whose
// database was lost, which would otherwise pass for a new install; it keeps
// the files readable by their owner only; and it opens the store, turning
// the store's refusals (a damaged, read-only or full file system) into
// messages that say what to do.
package datadir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// The files of a data directory.
const (
	// DatabaseFile is the SQLite database; SQLite keeps its write-ahead
	// log and shared-memory index beside it (DatabaseFile + "-wal",
	// "-shm").
	DatabaseFile = sqlite.DatabaseFile
	// LockFile is locked (flock) by the server that uses the directory,
	// and holds its PID.
	LockFile = "allot.lock"
)

// Owner-only modes: the database holds job specs (whose env may carry
// secrets) and token hashes, admin.token an admin's secret.
const (
	dirMode  fs.FileMode = 0o700
	fileMode fs.FileMode = 0o600
)

// Dir is an open data directory, locked for this process until Close.
type Dir struct {
	path string
	lock *os.File
	// store is the URL of a store outside the directory (PostgreSQL);
	// empty for the SQLite database in it.
	store string
}

// Open prepares the data directory at path for a server: it creates it
// (0700) if needed, checks that it is writable, locks it, refuses a
// database that was lost beside an admin token, and tightens the modes of
// files others may read. Close releases the lock.
func Open(path string, log *slog.Logger) (*Dir, error) {
	d, err := lockPath(path, log)
	if err != nil {
		return nil, err
	}
	if err := d.prepare(log); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// lockPath creates the directory at path (0700) if needed, checks that it is
// writable, and locks it.
func lockPath(path string, log *slog.Logger) (*Dir, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if err := os.MkdirAll(path, dirMode); err != nil {
		if why, ok := readOnly(err); ok {
			return nil, &ReadOnlyError{Path: path, Dir: true, Why: why, Err: err}
		}
		return nil, fmt.Errorf("data directory %s: %w", path, err)
	}
	if err := checkWritable(path); err != nil {
		return nil, err
	}
	lock, err := lockDir(path)
	if err != nil {
		return nil, err
	}
	if err := writePID(lock); err != nil {
		// The lock holds all the same; only the refusal another server
		// gets cannot name this one (a full disk, say).
		log.Warn("could not record this server's PID in the lock file", "path", lock.Name(), "err", err)
	}
	return &Dir{path: path, lock: lock}, nil
}

// OpenLocal prepares the data directory of a server whose store is the
// database storeURL names (PostgreSQL), not a file in the directory: the
// directory then keeps only the server's local files, its lock and the
// first admin token. It is created, checked and locked as by Open, and
// those files are kept owner-only; there is no database file to create or
// to miss.
func OpenLocal(path, storeURL string, log *slog.Logger) (*Dir, error) {
	if storeURL == "" {
		return nil, errors.New("datadir: OpenLocal without a store URL")
	}
	d, err := lockPath(path, log)
	if err != nil {
		return nil, err
	}
	d.store = storeURL
	d.tighten(log)
	return d, nil
}

// Path is the directory's absolute path.
func (d *Dir) Path() string { return d.path }

// Database is the path of the database file.
func (d *Dir) Database() string { return filepath.Join(d.path, DatabaseFile) }

// AdminToken is the path of the file that receives the first admin token.
func (d *Dir) AdminToken() string { return filepath.Join(d.path, auth.AdminTokenFile) }

// Close releases the directory's lock. The lock file stays: removing it
// would let a server starting at that moment lock a file the next one no
// longer sees.
func (d *Dir) Close() error {
	if d.lock == nil {
		return nil
	}
	err := d.lock.Close() // closing the descriptor releases the flock
	d.lock = nil
	return err
}

// prepare runs the checks that need the lock: nobody else is changing the
// directory meanwhile.
func (d *Dir) prepare(log *slog.Logger) error {
	if err := d.checkDatabaseKept(); err != nil {
		return err
	}
	d.tighten(log)
	return d.createDatabase()
}

// checkWritable writes and removes a file in dir: permissions alone do not
// tell (root ignores them; a read-only mount or an ACL refuses anyway).
func checkWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".allot-write-check-*")
	if err != nil {
		if why, ok := readOnly(err); ok {
			return &ReadOnlyError{Path: dir, Dir: true, Why: why, Err: err}
		}
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// readOnly tells whether err is a refusal to write, and why in a few words.
func readOnly(err error) (string, bool) {
	switch {
	case errors.Is(err, syscall.EROFS):
		return "read-only file system", true
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("permission denied to user %d", os.Geteuid()), true
	}
	return "", false
}

// ReadOnlyError is a data directory, or the database file in it, that the
// server cannot write.
type ReadOnlyError struct {
	Path string
	Dir  bool // the directory itself, not the database file
	Why  string
	Err  error
}

func (e *ReadOnlyError) Error() string {
	what := "the database file"
	if e.Dir {
		what = "the data directory"
	}
	return fmt.Sprintf("%s %s is read-only (%s): allot server keeps its state there and must write to it; "+
		"make it writable by the user the server runs as, or point --data-dir (server.dataDir) elsewhere", what, e.Path, e.Why)
}

func (e *ReadOnlyError) Unwrap() error { return e.Err }

// checkDatabaseKept refuses a directory that has an admin token but no
// database, or an empty one. SQLite takes an empty file for a new database,
// and the server would start afresh: every job, worker and token gone, and
// a new admin token written over the old one. A database SQLite created is
// never empty (it writes its header when it opens the file), and the admin
// token is written only after it, so this is a database that was lost.
func (d *Dir) checkDatabaseKept() error {
	if _, err := os.Stat(d.AdminToken()); err != nil {
		return nil // no token: a new directory, or a server without authentication
	}
	fi, err := os.Stat(d.Database())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return d.lostDatabase("is missing")
	case err != nil:
		return fmt.Errorf("data directory %s: %w", d.path, err)
	case fi.Size() == 0:
		return d.lostDatabase("is empty (0 bytes)")
	}
	return nil
}

func (d *Dir) lostDatabase(state string) error {
	return fmt.Errorf("%s %s, but %s exists: this data directory held a server's state, and its database was lost "+
		"(an interrupted copy or restore, a truncating command, a disk that filled during a move). "+
		"Starting would create an empty database and replace the admin token. "+
		"Restore %s from a backup (docs/store.md, \"Recovery\"); or, to really start afresh, remove %s as well",
		d.Database(), state, d.AdminToken(), DatabaseFile, auth.AdminTokenFile)
}

// tighten takes the permissions of group and others off the directory and
// the files in it that hold secrets, saying so in the log: they were made
// by an older allot, copied with a loose umask, or restored by hand. What
// cannot be tightened (another user owns it) is logged as a warning.
func (d *Dir) tighten(log *slog.Logger) {
	paths := []string{d.path, d.lock.Name(), d.AdminToken()}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		paths = append(paths, d.Database()+suffix)
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		mode := fi.Mode().Perm()
		if mode&0o077 == 0 {
			continue
		}
		owner := mode &^ 0o077
		if err := os.Chmod(p, owner); err != nil {
			log.Warn("the data directory or a file in it is readable by other users, and its permissions could not be tightened",
				"path", p, "mode", fmt.Sprintf("%04o", mode), "err", err)
			continue
		}
		log.Warn("tightened the permissions of the data directory or a file in it: they hold job specs, tokens and secrets",
			"path", p, "was", fmt.Sprintf("%04o", mode), "now", fmt.Sprintf("%04o", owner))
	}
}

// createDatabase creates the database file, owner-only, if it does not
// exist: SQLite gives the files it creates beside it (-wal, -shm) the
// database file's mode, and would create the database itself 0644. An
// existing file must be writable, or the server would start and fail at
// its first write.
func (d *Dir) createDatabase() error {
	f, err := os.OpenFile(d.Database(), os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		if why, ok := readOnly(err); ok {
			return &ReadOnlyError{Path: d.Database(), Why: why, Err: err}
		}
		return fmt.Errorf("data directory %s: %w", d.path, err)
	}
	return f.Close()
}

// StoreURL is the URL of the directory's store, for store.Open: the
// SQLite file in it, or the database OpenLocal was given.
func (d *Dir) StoreURL() string {
	if d.store != "" {
		return d.store
	}
	return sqlite.URL(d.Database())
}

// OpenStore opens the store of the directory (store.Open on StoreURL). A
// damaged file is refused with the steps that bring the state back; a file
// system too full to open it, or read-only, says so.
func (d *Dir) OpenStore(ctx context.Context) (store.Store, error) {
	st, err := store.Open(ctx, d.StoreURL())
	switch {
	case err == nil:
		return st, nil
	case d.store != "" && errors.Is(err, store.ErrUnavailable):
		return nil, fmt.Errorf("%w\n\nThe store cannot be reached: %s. Check that PostgreSQL runs and takes connections at the "+
			"address of the store URL (server.store, --store, ALLOT_STORE), and start again", err, store.Cause(err))
	case d.store != "":
		return nil, err
	case errors.Is(err, store.ErrDamaged):
		return nil, fmt.Errorf("%w\n\n%s", err, d.damagedSteps())
	case errors.Is(err, store.ErrUnavailable):
		return nil, fmt.Errorf("%w\n\nThe database in %s cannot be opened: %s. Free space on (or repair) its file system and start again; "+
			"nothing stored is lost", err, d.path, store.Cause(err))
	}
	return nil, err
}

// damagedSteps says what to do about a damaged database file.
func (d *Dir) damagedSteps() string {
	return fmt.Sprintf(`The database file %[1]s is damaged, and the server will not schedule from a file it cannot trust.
To recover (docs/store.md, "Recovery"), with the server stopped:
  1. Move %[2]s, %[2]s-wal and %[2]s-shm out of %[3]s, and keep them.
  2. Copy your latest backup to %[1]s (backups are made, while the server runs, with
     sqlite3 %[1]s ".backup /path/to/backup.db").
     Without a backup, salvage what SQLite can still read:
     sqlite3 /path/to/the/moved/%[2]s .recover | sqlite3 %[1]s
  3. Start the server: it checks the file again, and workers register again with what they still run.`,
		d.Database(), DatabaseFile, d.path)
}
