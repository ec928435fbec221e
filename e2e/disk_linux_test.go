package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The disk tests run the allot binary against data directories an unlucky
// operator meets: one another server already uses, one whose database was
// emptied or damaged, one that is read-only. fulldisk_test.go fills the
// file system under a running server.

// refusedStart runs args (a server or dev command) and expects it to exit
// with an error by itself; it returns what the process printed.
func refusedStart(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("allot %s did not exit within 20s; it should have refused to start:\n%s", strings.Join(args, " "), out)
	}
	if err == nil {
		t.Fatalf("allot %s exited 0; it should have refused to start:\n%s", strings.Join(args, " "), out)
	}
	t.Logf("allot %s refused to start:\n%s", args[0], out)
	return string(out)
}

func TestSecondServerOnOneDataDirIsRefusedNamingTheHolder(t *testing.T) {
	c := start(t)
	pid := fmt.Sprint(c.server.Process.Pid)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"server", []string{"server", "--listen", freePort(t), "--data-dir", c.dataDir}},
		{"dev", []string{"dev", "--listen", freePort(t), "--data-dir", c.dataDir, "--workers", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := refusedStart(t, tc.args...)
			if !strings.Contains(out, "PID "+pid) || !strings.Contains(out, c.dataDir) {
				t.Errorf("the refusal names neither the holder's PID %s nor the data directory:\n%s", pid, out)
			}
		})
	}
	// The first server still runs and answers.
	c.waitReady()
}

func TestDataFilesAreOwnerOnly(t *testing.T) {
	c := start(t)
	c.submit("id: perms\ntasks:\n  - name: t\n    run: \"true\"\n")
	want := map[string]os.FileMode{".": 0o700, "allot.db": 0o600, "allot.db-wal": 0o600, "allot.db-shm": 0o600,
		"admin.token": 0o600, "allot.lock": 0o600}
	for name, mode := range want {
		fi, err := os.Stat(filepath.Join(c.dataDir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := fi.Mode().Perm(); got != mode {
			t.Errorf("%s has mode %04o, want %04o", name, got, mode)
		}
	}
}

func TestWorldReadableDataFilesAreTightenedAtStart(t *testing.T) {
	c := start(t)
	c.killServer()
	for _, name := range []string{"allot.db", "admin.token"} {
		if err := os.Chmod(filepath.Join(c.dataDir, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(c.dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	c.restartServer()
	for name, mode := range map[string]os.FileMode{".": 0o700, "allot.db": 0o600, "admin.token": 0o600} {
		fi, err := os.Stat(filepath.Join(c.dataDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != mode {
			t.Errorf("%s still has mode %04o after a restart, want %04o", name, got, mode)
		}
	}
}

func TestEmptyDatabaseBesideAnAdminTokenIsRefused(t *testing.T) {
	c := start(t)
	c.killServer()
	token := filepath.Join(c.dataDir, "admin.token")
	before, err := os.ReadFile(token)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"allot.db", "allot.db-wal", "allot.db-shm"} {
		_ = os.Remove(filepath.Join(c.dataDir, name))
	}
	if err := os.WriteFile(filepath.Join(c.dataDir, "allot.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out := refusedStart(t, "server", "--listen", freePort(t), "--data-dir", c.dataDir)
	for _, want := range []string{"allot.db", "empty", "admin.token", "backup"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not mention %q:\n%s", want, out)
		}
	}
	after, err := os.ReadFile(token)
	if err != nil || string(after) != string(before) {
		t.Errorf("admin.token was replaced (err %v)", err)
	}
}

func TestDamagedDatabaseIsRefusedWithWhatToDo(t *testing.T) {
	c := start(t)
	for i := range 40 {
		c.submit(fmt.Sprintf("id: j%d\ntasks:\n  - name: t\n    run: \"true\"\n    env: {PAD: %q}\n", i, strings.Repeat("x", 2000)))
	}
	// A clean stop checkpoints the log into the database file.
	if err := c.server.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = c.server.Wait()
	db := filepath.Join(c.dataDir, "allot.db")
	fi, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < 20*4096 {
		t.Fatalf("allot.db is only %d bytes: the log was not checkpointed", fi.Size())
	}
	// Scribble over a page in the middle of the file, leaving the header.
	f, err := os.OpenFile(db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := []byte(strings.Repeat("\xff\x00junk", 4096/6))
	if _, err := f.WriteAt(junk, (fi.Size()/4096/2)*4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out := refusedStart(t, "server", "--listen", freePort(t), "--data-dir", c.dataDir)
	for _, want := range []string{"damaged", "backup"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not mention %q:\n%s", want, out)
		}
	}
}

// readOnly makes path read-only for this process: a read-only bind mount
// when it runs as root (which permissions do not stop), else chmod.
func readOnly(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(path, 0o700) })
		return
	}
	if err := syscall.Mount(path, path, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("running as root, and a read-only bind mount is not permitted here (%v): cannot make %s read-only", err, path)
	}
	t.Cleanup(func() { _ = syscall.Unmount(path, 0) })
	if err := syscall.Mount("", path, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("running as root, and a read-only remount is not permitted here (%v)", err)
	}
}

func TestReadOnlyDataDirectorySaysSo(t *testing.T) {
	t.Run("directory", func(t *testing.T) {
		c := start(t)
		c.killServer()
		readOnly(t, c.dataDir, 0o500)
		out := refusedStart(t, "server", "--listen", freePort(t), "--data-dir", c.dataDir)
		if !strings.Contains(out, "read-only") || !strings.Contains(out, c.dataDir) {
			t.Errorf("the refusal does not say that %s is read-only:\n%s", c.dataDir, out)
		}
	})
	t.Run("database file", func(t *testing.T) {
		c := start(t)
		if err := c.server.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		_ = c.server.Wait()
		db := filepath.Join(c.dataDir, "allot.db")
		readOnly(t, db, 0o400)
		out := refusedStart(t, "server", "--listen", freePort(t), "--data-dir", c.dataDir)
		if !strings.Contains(out, "read-only") || !strings.Contains(out, db) {
			t.Errorf("the refusal does not say that %s is read-only:\n%s", db, out)
		}
	})
}
