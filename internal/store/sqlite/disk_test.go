package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/store"
)

// damagedPage builds a database of a few dozen pages, closes it (which
// checkpoints the log into the file) and scribbles over a page in the
// middle, leaving the header intact: Open itself succeeds on such a file
// without the integrity check.
func damagedPage(t *testing.T) string {
	t.Helper()
	path := tempPath(t)
	s := openFile(t, path)
	pad := strings.Repeat("x", 1500)
	for i := range 60 {
		if err := s.Commit(t.Context(), store.Batch{Events: []store.Event{{Kind: "k", Message: fmt.Sprint(i, pad)}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	junk := []byte(strings.Repeat("\xff\x00junk", 4096/6))
	if _, err := f.WriteAt(junk, (fi.Size()/4096/2)*4096); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOpenRefusesADamagedFile(t *testing.T) {
	notADatabase := filepath.Join(t.TempDir(), "allot.db")
	if err := os.WriteFile(notADatabase, []byte(strings.Repeat("not a database ", 300)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		path string
		says string
	}{
		{"a page scribbled over", damagedPage(t), "integrity check"},
		{"not a database at all", notADatabase, "not a database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(tc.path)
			if err == nil {
				s.Close()
				t.Fatal("Open of a damaged file succeeded")
			}
			if !errors.Is(err, store.ErrDamaged) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("Open: %v; want store.ErrDamaged naming the file and saying %q", err, tc.says)
			}
		})
	}
}
