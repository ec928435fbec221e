package main

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/spec"
)

// A token whose stored row cannot be read back (here its scope, damaged by
// hand) does not stop the server's start, nor make it take the store for a
// new one: the server starts, keeps admin.token, logs the token and counts
// it, and the token authorises nothing.
func TestServerStartsOverAnUnreadableTokenRow(t *testing.T) {
	dir := t.TempDir()
	cfg := spec.ServerConfig{Server: spec.ServerSettings{Listen: "127.0.0.1:0", DataDir: dir}}
	file := filepath.Join(dir, auth.AdminTokenFile)
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := startServerWith(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), serverOptions{auth: true})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(file)
	admin, _ := client.New(srv.URL, client.WithToken(strings.TrimSpace(string(first))))
	ops, err := admin.CreateToken(t.Context(), api.CreateToken{Name: "ops", Role: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := srv.Wait(); err != nil {
		t.Fatal(err)
	}

	db, err := sql.Open("sqlite", filepath.Join(dir, "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE tokens SET queues = ? WHERE name = 'bootstrap admin'`, []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	db.Close()

	srv, logs := serve(t, cfg, serverOptions{auth: true})
	if again, _ := os.ReadFile(file); string(again) != string(first) {
		t.Error("the start replaced admin.token over an unreadable token row")
	}
	if !strings.Contains(logs.String(), "cannot be read back") {
		t.Errorf("the unreadable token was not logged:\n%s", logs)
	}
	admin, _ = client.New(srv.URL, client.WithToken(strings.TrimSpace(string(first))))
	var ce *client.Error
	if _, err := admin.Tokens(t.Context()); !errors.As(err, &ce) || ce.Status != http.StatusUnauthorized {
		t.Errorf("the damaged token's secret: %v, want 401", err)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+ops.Secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `allot_store_rows_quarantined_total{kind="token"} 1`) {
		t.Errorf("metrics do not count the unreadable token:\n%s", grepLines(string(body), "quarantined"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
