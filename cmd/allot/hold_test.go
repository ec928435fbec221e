package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/spec"
)

func TestHoldReleaseAndUpdateFromTheCommandLine(t *testing.T) {
	dir := t.TempDir()
	cfg := spec.ServerConfig{Server: spec.ServerSettings{Listen: "127.0.0.1:0", DataDir: dir},
		Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}}
	srv, _ := serve(t, cfg, serverOptions{auth: true})
	raw, err := os.ReadFile(filepath.Join(dir, auth.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(string(raw))
	cli := func(token string, args ...string) (string, error) {
		t.Helper()
		return runCLI(t, srv.URL, append(args, "--token", token)...)
	}
	secret, err := cli(admin, "tokens", "create", "--role", "submitter", "--queue", "*", "--share", "*", "--name", "alice", "--max-priority", "5", "-q")
	if err != nil {
		t.Fatal(err)
	}
	alice := strings.TrimSpace(secret)
	job := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(job, []byte("id: nightly\ntasks: [{name: t, run: 'sleep 60'}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cli(alice, "submit", job); err != nil {
		t.Fatal(err)
	}
	if out, err := cli(alice, "hold", "nightly"); err != nil || strings.TrimSpace(out) != "held nightly" {
		t.Fatalf("allot hold: %v\n%s", err, out)
	}
	if out, err := cli(alice, "get", "nightly"); err != nil || !strings.Contains(out, "held by alice") {
		t.Fatalf("allot get of a held job: %v\n%s\nwant held by alice", err, out)
	}
	if out, err := cli(alice, "explain", "nightly"); err != nil || !strings.Contains(out, "held by alice") {
		t.Fatalf("allot explain of a held job: %v\n%s\nwant held by alice", err, out)
	}
	if out, err := cli(alice, "update", "nightly", "--priority", "3"); err != nil || !strings.Contains(out, "priority 3") {
		t.Fatalf("allot update --priority: %v\n%s", err, out)
	}
	if _, err := cli(alice, "update", "nightly"); err == nil || !strings.Contains(err.Error(), "--priority") {
		t.Fatalf("allot update without a change: %v, want an error naming --priority", err)
	}
	if out, err := cli(alice, "update", "nightly", "--cpu", "500m", "--memory", "2Gi"); err != nil || !strings.Contains(out, "each task asks for 0.5 CPU, 2048 MB") {
		t.Fatalf("allot update --cpu --memory: %v\n%s", err, out)
	}
	if _, err := cli(alice, "update", "nightly", "--cpu", "lots"); err == nil || !strings.Contains(err.Error(), "--cpu") {
		t.Fatalf("allot update --cpu lots: %v, want an error naming --cpu", err)
	}
	out, err := cli(alice, "release", "nightly", "nope")
	if err == nil || !strings.Contains(out, "released nightly") || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("allot release of a job and a missing one: %v\n%s", err, out)
	}
	if out, err := cli(alice, "get", "nightly"); err != nil || strings.Contains(out, "held by") {
		t.Fatalf("allot get after release: %v\n%s", err, out)
	}
}
