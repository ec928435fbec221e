package main

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/spec"
)

// wantAdvice checks that err exists and says each of words.
func wantAdvice(t *testing.T, what string, err error, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
}

// Errors a new user meets first say what to do, not what Go saw.
func TestClientErrorsSayWhatToDo(t *testing.T) {
	t.Setenv("ALLOT_TOKEN", "")
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}()
	_, _, err := runCLIErr(t, "http://"+closed, "list")
	wantAdvice(t, "nothing listening", err, "no Allot server answers at http://"+closed, "allot dev", "--server", "ALLOT_SERVER")

	_, _, err = runCLIErr(t, closed, "list")
	wantAdvice(t, "a server without scheme", err, "--server", `"http://`+closed+`"`)
	_, _, err = runCLIErr(t, "localhost:7070", "list")
	wantAdvice(t, "a host:port without scheme", err, "--server", `"http://localhost:7070"`)

	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/v1/queues" {
			_, _ = w.Write([]byte("<html>welcome</html>"))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("<!DOCTYPE html><html><body>Not found</body></html>"))
	}))
	defer page.Close()
	_, _, err = runCLIErr(t, page.URL, "get", "j")
	wantAdvice(t, "a web server's 404 page", err, "not an Allot server", page.URL, "--server")
	if strings.Contains(err.Error(), "<html") {
		t.Errorf("the page is printed: %v", err)
	}
	_, _, err = runCLIErr(t, page.URL, "queues")
	wantAdvice(t, "a web server's page with 200", err, "not an Allot server", page.URL, "--server")

	cfg := spec.ServerConfig{}
	cfg.Server.DataDir, cfg.Server.Listen = t.TempDir(), "127.0.0.1:0"
	srv, _ := serve(t, cfg, serverOptions{auth: true})
	_, _, err = runCLIErr(t, srv.URL, "list")
	wantAdvice(t, "no token", err, "needs a token", "unauthorized", "--token", "ALLOT_TOKEN", "admin.token")
	_, _, err = runCLIErr(t, srv.URL, "list", "--token", "wrong")
	wantAdvice(t, "a wrong token", err, "refused the token", "--token", "ALLOT_TOKEN")
}

func TestABusyPortNamesListen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := spec.ServerConfig{}
	cfg.Server.DataDir, cfg.Server.Listen = t.TempDir(), ln.Addr().String()
	_, err = startServer(t.Context(), cfg, slog.New(slog.DiscardHandler))
	wantAdvice(t, "a busy port", err, ln.Addr().String(), "in use", "--listen")
}

func TestTokensCreateNamesFlags(t *testing.T) {
	cfg := spec.ServerConfig{}
	cfg.Server.DataDir, cfg.Server.Listen = t.TempDir(), "127.0.0.1:0"
	srv, _ := serve(t, cfg, serverOptions{auth: true})
	admin := readAdminToken(t, cfg.Server.DataDir)
	_, _, err := runCLIErr(t, srv.URL, "tokens", "create", "--role", "submitter", "--token", admin)
	wantAdvice(t, "a submitter token without scope", err, "--queue", "--share")
	if strings.Contains(err.Error(), "queues:") || strings.Contains(err.Error(), "shares:") {
		t.Errorf("names the API's fields: %v", err)
	}
	_, _, err = runCLIErr(t, srv.URL, "tokens", "create", "--role", "worker", "--token", admin)
	wantAdvice(t, "a worker token without names", err, "--worker")
}

func TestExpiresTakesDays(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"720h", 720 * time.Hour},
		{"1d", 24 * time.Hour},
		{"30d", 30 * 24 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"90m", 90 * time.Minute},
	} {
		var d daysDuration
		if err := d.Set(tc.in); err != nil || time.Duration(d) != tc.want {
			t.Errorf("--expires %s = %v, %v; want %v", tc.in, time.Duration(d), err, tc.want)
		}
	}
	for _, bad := range []string{"1w", "d", "1.5d", "-1d", "soon"} {
		var d daysDuration
		err := d.Set(bad)
		wantAdvice(t, "--expires "+bad, err, "30d", "12h")
	}
}

func readAdminToken(t *testing.T, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, auth.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(raw))
}
