package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/allot-sched/allot/internal/store"
)

func TestStoreThatCannotBeOpenedOnAFullDiskSaysSo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", path, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mounting a small tmpfs is not permitted here (%v): the test is skipped", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(path, syscall.MNT_DETACH) })
	d := open(t, path)
	st, err := d.OpenStore(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	st.Close() // checkpoints and removes the log: opening again needs room
	d.Close()
	filler, err := os.Create(filepath.Join(path, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for _, err = filler.Write(make([]byte, 4096)); err == nil; _, err = filler.Write(make([]byte, 4096)) {
	}
	filler.Close()

	d = open(t, path) // the lock and the checks need no room
	defer d.Close()
	st, err = d.OpenStore(t.Context())
	if err == nil {
		st.Close()
		t.Skip("SQLite opened the database on a full file system: nothing to check here")
	}
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "Free space") {
		t.Errorf("OpenStore on a full disk: %v; want store.ErrUnavailable saying the disk is full and what to do", err)
	}
}
