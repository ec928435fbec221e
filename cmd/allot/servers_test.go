package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/spec"
)

// The client commands take several servers in --server and ALLOT_SERVER:
// a server that is down is passed over. `allot submit` names the jobs it
// sends, and a refused document still names the line of its file though
// the documents before it gained one.
func TestClientCommandsTakeSeveralServersAndSubmitNamesTheJobs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := spec.ServerConfig{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}}
	cfg.Server.DataDir, cfg.Server.Listen = t.TempDir(), "127.0.0.1:0"
	cfg.Server.CycleEvery = spec.Duration(time.Hour)
	srv, err := startServer(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // nothing listens there: connections are refused
	servers := gone.URL + "," + srv.URL

	dir := t.TempDir()
	one := filepath.Join(dir, "one.yaml")
	if err := os.WriteFile(one, []byte("tasks: [{name: x, run: 'true'}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, servers, "submit", one)
	if err != nil {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`^submitted job-\d{8}-\d{6}-[0-9a-z]{10} to queue batch`).MatchString(out) {
		t.Errorf("submit printed %q, want a job ID the client made", out)
	}

	multi := filepath.Join(dir, "multi.yaml")
	if err := os.WriteFile(multi, []byte("tasks: [{name: x, run: 'true'}]\n---\ntasks: [{name: x, run: 'true'}]\nbogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runCLI(t, servers, "submit", multi)
	if err == nil || !strings.Contains(out, multi+":1: created job-") || !strings.Contains(out, multi+":2: refused: invalid: line 4: ") {
		t.Errorf("bulk submit: %v\n%s\nwant the first created and the second refused on line 4", err, out)
	}

	t.Setenv("ALLOT_SERVER", servers)
	root := newRoot()
	var buf strings.Builder
	root.SetOut(&buf)
	root.SetArgs([]string{"list"})
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("list with ALLOT_SERVER=%s: %v", servers, err)
	}
	if strings.Count(buf.String(), "job-") != 2 {
		t.Errorf("list printed:\n%s\nwant the two jobs created", buf.String())
	}
}
