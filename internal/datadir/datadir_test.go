package datadir

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func open(t *testing.T, path string) *Dir {
	t.Helper()
	d, err := Open(path, quiet())
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return d
}

func TestSecondOpenIsRefusedNamingTheHolderUntilTheFirstCloses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data")
	first := open(t, path)
	_, err := Open(path, quiet())
	var inUse *InUseError
	if !errors.As(err, &inUse) || inUse.PID != os.Getpid() {
		t.Fatalf("second Open: %v; want an InUseError naming PID %d", err, os.Getpid())
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("PID %d", os.Getpid())) || !strings.Contains(msg, path) {
		t.Errorf("the refusal names neither the holder's PID nor the directory: %s", msg)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, path).Close()
}

func TestLostDatabaseBesideAnAdminTokenIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		database []byte // nil: no file
		token    bool
		refused  string // what the refusal says; "" for none
	}{
		{name: "empty database beside a token", database: []byte{}, token: true, refused: "is empty"},
		{name: "no database beside a token", token: true, refused: "is missing"},
		{name: "a new directory"},
		{name: "an empty database without a token (a server without authentication that never started)", database: []byte{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := t.TempDir()
			if tc.database != nil {
				if err := os.WriteFile(filepath.Join(path, DatabaseFile), tc.database, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			token := filepath.Join(path, "admin.token")
			if tc.token {
				if err := os.WriteFile(token, []byte("secret\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			d, err := Open(path, quiet())
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				d.Close()
				return
			}
			if err == nil {
				d.Close()
				t.Fatal("Open took a lost database for a new install")
			}
			for _, want := range []string{tc.refused, "admin.token", "backup", "remove admin.token"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal does not say %q: %v", want, err)
				}
			}
			if b, _ := os.ReadFile(token); string(b) != "secret\n" {
				t.Errorf("admin.token changed: %q", b)
			}
			// The refusal released the lock: fixing the directory is
			// enough for the next start.
			if err := os.Remove(token); err != nil {
				t.Fatal(err)
			}
			open(t, path).Close()
		})
	}
}

func TestNewDirectoryIsOwnerOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data")
	open(t, path).Close()
	for name, want := range map[string]os.FileMode{".": 0o700, LockFile: 0o600, DatabaseFile: 0o600} {
		fi, err := os.Stat(filepath.Join(path, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %04o, want %04o", name, got, want)
		}
	}
}

func TestLooseModesAreTightenedAndLogged(t *testing.T) {
	var log bytes.Buffer
	path := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"admin.token": 0o644, DatabaseFile: 0o644, DatabaseFile + "-wal": 0o640, "unrelated.txt": 0o644} {
		if err := os.WriteFile(filepath.Join(path, name), []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(path, name), mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	d, err := Open(path, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for name, want := range map[string]os.FileMode{
		".": 0o700, LockFile: 0o600, // created
		"admin.token": 0o600, DatabaseFile: 0o600, DatabaseFile + "-wal": 0o600, // tightened
		"unrelated.txt": 0o644, // not the server's
	} {
		fi, err := os.Stat(filepath.Join(path, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %04o, want %04o", name, got, want)
		}
	}
	for _, want := range []string{"admin.token was=0644 now=0600", "allot.db was=0644 now=0600", "allot.db-wal was=0640 now=0600", "data was=0755 now=0700"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, log.String())
		}
	}
}

// With a store outside the directory (PostgreSQL), the directory holds
// only the lock and the admin token: no database file is made, none is
// missed beside a token, and the directory is still locked and owner-only.
func TestLocalDirectoryOfAnOutsideStoreHasNoDatabaseFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "admin.token"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const url = "postgres://allot@db.example/allot"
	d, err := OpenLocal(path, url, quiet())
	if err != nil {
		t.Fatalf("OpenLocal beside an admin token without a database file: %v", err)
	}
	defer d.Close()
	if _, err := os.Stat(d.Database()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenLocal made %s (%v)", DatabaseFile, err)
	}
	if d.StoreURL() != url {
		t.Errorf("StoreURL = %q, want %q", d.StoreURL(), url)
	}
	for _, p := range []string{path, filepath.Join(path, "admin.token")} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v (%v), want owner-only", p, fi.Mode().Perm(), err)
		}
	}
	var inUse *InUseError
	if _, err := OpenLocal(path, url, quiet()); !errors.As(err, &inUse) {
		t.Errorf("a second OpenLocal: %v, want the directory in use", err)
	}
}
