package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/allot-sched/allot/internal/store"
)

// A SQLite store opens through store.Open by URL, by plain path, and by
// the directory that holds allot.db; all three are the same database.
func TestStoreOpenFindsSQLiteByURLPathOrDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, DatabaseFile)
	ctx := context.Background()
	for i, u := range []string{URL(path), path, dir, "sqlite://" + Memory} {
		st, err := store.Open(ctx, u)
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		if i == 0 {
			if err := st.Commit(ctx, store.Batch{KV: map[string][]byte{"k": []byte("v")}}); err != nil {
				t.Fatal(err)
			}
		} else if v, err := st.KV(ctx, "k"); u != "sqlite://"+Memory && (err != nil || string(v) != "v") {
			t.Errorf("Open(%q): KV = %q, %v; want the database written through %s", u, v, err, URL(path))
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
