package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/datadir"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/postgres/pgtest"
)

// The tests of this package that need PostgreSQL share one throwaway
// server; the others do not notice it.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// With PostgreSQL, the data directory keeps only the server's local
// files: the first server on a new database writes the first admin token
// there, and a server started later on the same database (another
// replica, another directory) finds the token stored and makes none.
func TestServerOnPostgresKeepsOnlyLocalFilesAndTheFirstToken(t *testing.T) {
	url := pgtest.URL(t)
	first, second := t.TempDir(), t.TempDir()
	cfg := spec.ServerConfig{Server: spec.ServerSettings{Listen: "127.0.0.1:0", DataDir: first, Store: url}}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := startServerWith(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), serverOptions{auth: true})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	secret, err := os.ReadFile(filepath.Join(first, auth.AdminTokenFile))
	if err != nil {
		cancel()
		t.Fatalf("the first server on the database wrote no admin token: %v", err)
	}
	c, _ := client.New(srv.URL, client.WithToken(strings.TrimSpace(string(secret))))
	if _, err := c.Queues(t.Context()); err != nil {
		t.Errorf("the first server refused its own admin token: %v", err)
	}
	cancel()
	if err := srv.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(first, datadir.DatabaseFile)); !os.IsNotExist(err) {
		t.Errorf("a server on PostgreSQL made %s in its data directory (%v)", datadir.DatabaseFile, err)
	}

	cfg.Server.DataDir = second
	srv, logs := serve(t, cfg, serverOptions{auth: true})
	if _, err := os.Stat(filepath.Join(second, auth.AdminTokenFile)); !os.IsNotExist(err) {
		t.Errorf("a second server on the same database wrote an admin token (%v)", err)
	}
	if strings.Contains(logs.String(), "created the first admin token") {
		t.Error("a second server on the same database created another admin token")
	}
	c, _ = client.New(srv.URL, client.WithToken(strings.TrimSpace(string(secret))))
	ts, err := c.Tokens(t.Context())
	if err != nil || len(ts) != 1 || ts[0].Role != "admin" {
		t.Fatalf("tokens seen by the second server: %+v, %v", ts, err)
	}
}

// A store setting that cannot work stops the server, naming the setting
// it came from, and never quoting a password.
func TestStoreSettingErrorsNameTheSetting(t *testing.T) {
	c := pgtest.Need(t)
	unreachable := strings.Replace(c.URL, "allot@", "allot:s3cret@", 1) + "&connect_timeout=2&port=1"
	for _, tc := range []struct {
		name string
		args []string
		env  string
		file string
		want string
	}{
		{"FlagNotPostgres", []string{"--store", "mysql://db/allot"}, "", "", "--store: want a postgres:// URL"},
		{"EnvNotPostgres", nil, "/var/lib/allot/allot.db", "", "ALLOT_STORE: want a postgres:// URL"},
		{"FileUnreachable", nil, "", unreachable, "server.store: "},
		{"FlagBadOption", []string{"--store", c.URL + "&sslmode=sometimes"}, "", "", "--store: postgres: open"},
		{"FlagWinsOverEnv", []string{"--store", "mysql://x"}, c.URL, "", "--store: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"server", "--listen", "127.0.0.1:0", "--data-dir", dir}
			if tc.file != "" {
				cfgFile := filepath.Join(dir, "allot.yaml")
				if err := os.WriteFile(cfgFile, []byte("server:\n  store: '"+tc.file+"'\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--config", cfgFile)
			}
			t.Setenv("ALLOT_STORE", tc.env)
			root := newRoot()
			root.SetOut(&bytes.Buffer{})
			root.SetErr(&bytes.Buffer{})
			root.SetArgs(append(args, tc.args...))
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("allot server: %v, want an error saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error quotes the password: %v", err)
			}
		})
	}
}

func TestBenchRunsOnPostgres(t *testing.T) {
	c := pgtest.Need(t)
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs([]string{"bench", "--store", c.URL, "--tasks", "300", "--job-size", "70", "--slots", "6", "--workers", "3",
		"--latency-jobs", "10", "--latency-every", "2ms", "-o", "json"})
	if err := root.Execute(); err != nil {
		t.Fatalf("allot bench: %v\n%s", err, errb.String())
	}
	var r benchResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out.String())
	}
	if r.Totals["tasks"] != 310 || !strings.HasPrefix(r.Machine.Store, "PostgreSQL") {
		t.Errorf("totals %v on %q, want 310 tasks on PostgreSQL", r.Totals, r.Machine.Store)
	}
	// The run's schema is gone: the database is as it was.
	var left int
	conn, err := pgxConnect(t, c.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'allot_bench%'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d bench schemas left behind (%v)", left, err)
	}
}

func pgxConnect(t *testing.T, url string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(t.Context(), url)
	if err == nil {
		t.Cleanup(func() { conn.Close(context.Background()) })
	}
	return conn, err
}

// Two servers scheduling from one database would run every job twice:
// the second stands by, sending callers to the leader, and takes over
// with the engine rebuilt from the store once the leader stops.
func TestSecondServerStandsByAndTakesOverWhenTheLeaderStops(t *testing.T) {
	url := pgtest.URL(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := func() spec.ServerConfig {
		return spec.ServerConfig{Server: spec.ServerSettings{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Store: url,
			LeaderTimeout: spec.Duration(2 * time.Second)}}
	}
	ctx1, stop1 := context.WithCancel(t.Context())
	defer stop1()
	first, err := startServerWith(ctx1, cfg(), quiet, serverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx2, stop2 := context.WithCancel(t.Context())
	defer stop2()
	second, err := startServerWith(ctx2, cfg(), quiet, serverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { stop2(); _ = second.Wait() }()
	c1, err := client.New(first.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c1.SubmitJob(t.Context(), []byte(`{"id": "j-before", "tasks": [{"name": "a", "command": ["true"]}]}`), "application/json"); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Hold(t.Context(), "j-before"); err != nil {
		t.Fatal(err)
	}
	// The standby serves the job reads from the store, and sends the rest
	// to the leader.
	if j, err := client2(t, second.URL).Job(t.Context(), "j-before"); err != nil || j.ID != "j-before" || j.HeldBy == "" {
		t.Fatalf("a job read on the standby: %+v, %v (want it held)", j, err)
	}
	resp, err := http.Get(second.URL + "/v1/workers")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(api.LeaderHeader) != first.URL {
		t.Fatalf("the standby answered %d with leader %q, want 503 naming %s", resp.StatusCode, resp.Header.Get(api.LeaderHeader), first.URL)
	}
	if r, err := http.Get(second.URL + "/readyz"); err != nil || r.StatusCode != 200 {
		t.Fatalf("the standby's /readyz: %v %v, want 200 while a leader is known", r, err)
	}
	stop1()
	if err := first.Wait(); err != nil {
		t.Fatal(err)
	}
	c2 := client2(t, second.URL)
	deadline := time.Now().Add(10 * time.Second)
	for {
		// A change only the leader takes.
		j, err := c2.SetPriority(t.Context(), "j-before", 5, false)
		if err == nil {
			if j.ID != "j-before" || j.HeldBy == "" {
				t.Fatalf("job %+v: want it still held after the takeover", j)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby did not take over: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func client2(t *testing.T, url string) *client.Client {
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A database a newer allot migrated is refused at start, naming the
// setting and the versions, and left as it is.
func TestServerRefusesADatabaseWithANewerSchema(t *testing.T) {
	url := pgtest.URL(t)
	cfg := spec.ServerConfig{Server: spec.ServerSettings{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Store: url}}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := startServerWith(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), serverOptions{storeField: "--store"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cancel()
	if err := srv.Wait(); err != nil {
		t.Fatal(err)
	}
	conn, err := pgxConnect(t, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `INSERT INTO schema_version (version, name, applied) VALUES (1000, 'from the future', 0)`); err != nil {
		t.Fatal(err)
	}
	cfg.Server.DataDir = t.TempDir()
	_, err = startServerWith(t.Context(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), serverOptions{storeField: "--store"})
	if err == nil || !strings.Contains(err.Error(), "--store: ") || !strings.Contains(err.Error(), "schema version 1000 is newer than this binary supports") {
		t.Fatalf("start on a newer schema: %v, want a refusal naming --store and the versions", err)
	}
}
