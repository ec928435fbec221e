package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/allot-sched/allot/internal/store"
)

// smallFileSystem mounts a tmpfs of size bytes, or skips the test where
// mounting is not permitted (it needs root).
func smallFileSystem(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("mounting a small tmpfs is not permitted here (%v): the full-disk test is skipped", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

func TestFullDiskIsUnavailableAndTheSameWriteSucceedsOnceThereIsRoom(t *testing.T) {
	dir := smallFileSystem(t, 1<<20)
	s := openFile(t, filepath.Join(dir, "allot.db"))
	defer s.Close()
	pad := strings.Repeat("y", 20_000)
	batch := func(i int) store.Batch {
		return store.Batch{Events: []store.Event{{Kind: "k", Message: fmt.Sprint(i, pad)}}}
	}
	var err error
	stored := 0
	for ; stored < 1000; stored++ {
		if err = s.Commit(t.Context(), batch(stored)); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("1000 commits of 20 kB fit in a 1 MiB file system")
	}
	var ue *store.UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, store.ErrUnavailable) || ue.Cause != "disk full" {
		t.Fatalf("commit on a full disk: %v; want a store.UnavailableError with cause \"disk full\"", err)
	}
	// Reads go on; nothing of the refused batch is there.
	evs, err := s.Events(t.Context(), store.EventFilter{})
	if err != nil || len(evs) != stored {
		t.Fatalf("reading a full store: %d events, %v; want the %d stored", len(evs), err, stored)
	}
	// Room again: the same batch goes through on the same store.
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, "size=8m"); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(t.Context(), batch(stored)); err != nil {
		t.Fatalf("commit once there is room: %v", err)
	}
	if evs, _ := s.Events(t.Context(), store.EventFilter{}); len(evs) != stored+1 {
		t.Errorf("%d events after the retried commit, want %d", len(evs), stored+1)
	}
}
