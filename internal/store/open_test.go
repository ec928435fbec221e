package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/store"
)

func TestOpenRefusesABackendThisBinaryLacks(t *testing.T) {
	for _, tc := range []struct {
		url, says, hides string
	}{
		// This test binary links no backend: PostgreSQL's URLs are
		// unknown to it, as to a binary built without store/postgres.
		{"postgres://allot:s3cret@db.example/allot", `unknown scheme "postgres"`, "s3cret"},
		{"postgresql://db.example/allot", `unknown scheme "postgresql"`, ""},
		{"mysql://root:hunter2@db/allot", `unknown scheme "mysql"`, "hunter2"},
	} {
		_, err := store.Open(context.Background(), tc.url)
		if !errors.Is(err, store.ErrNotBuiltIn) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Open(%q): err = %v, want ErrNotBuiltIn saying %q", tc.url, err, tc.says)
		}
		if tc.hides != "" && err != nil && strings.Contains(err.Error(), tc.hides) {
			t.Errorf("Open(%q): the error quotes the password: %v", tc.url, err)
		}
	}
}

func TestOpenGoesToTheRegisteredBackend(t *testing.T) {
	var got string
	store.Register("fake-for-test", func(_ context.Context, location string) (store.Store, error) {
		got = location
		return nil, errors.New("fake")
	})
	if _, err := store.Open(context.Background(), "FAKE-FOR-TEST://host/db"); err == nil || got != "host/db" {
		t.Errorf("Open: err = %v, location %q; want the backend's answer for host/db", err, got)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second registration of a scheme did not panic")
		}
	}()
	store.Register("fake-for-test", nil)
}
