package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/spec"
)

func TestTokenLimitsFromTheCommandLineBindSubmitAndPriority(t *testing.T) {
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

	secret, err := cli(admin, "tokens", "create", "--role", "submitter", "--queue", "*", "--share", "*", "--name", "grid",
		"--max-priority", "5", "--urgent", "--requestor", "team-a-*", "--requestor", "ci", "--sla-group", "gold", "--user", "svc-*", "-q")
	if err != nil {
		t.Fatalf("tokens create: %v", err)
	}
	grid := strings.TrimSpace(secret)
	plainOut, err := cli(admin, "tokens", "create", "--role", "submitter", "--queue", "*", "--share", "*", "--name", "plain")
	if err != nil {
		t.Fatalf("tokens create: %v", err)
	}
	if !strings.Contains(plainOut, "maxPriority=0") {
		t.Errorf("tokens create without limits says:\n%s\nwant the default maxPriority=0 shown", plainOut)
	}
	if _, err := cli(admin, "tokens", "create", "--role", "worker", "--worker", "w", "--user", "build"); err == nil ||
		!strings.Contains(err.Error(), "--user") {
		t.Errorf("a worker token with --user: %v, want an error naming --user", err)
	}
	if _, err := cli(admin, "tokens", "create", "--role", "submitter", "--queue", "*", "--share", "*", "--max-priority", "-1"); err == nil ||
		!strings.Contains(err.Error(), "--max-priority") {
		t.Errorf("--max-priority -1: %v, want an error naming --max-priority", err)
	}
	list, err := cli(admin, "tokens", "list")
	if err != nil {
		t.Fatal(err)
	}
	wantRow := regexp.MustCompile(`submitter\s+grid\s+queues=\* shares=\* maxPriority=5 urgent requestors=ci,team-a-\* slaGroups=gold users=svc-\*\s`)
	if !wantRow.MatchString(list) || !regexp.MustCompile(`submitter\s+plain\s+queues=\* shares=\* maxPriority=0\s`).MatchString(list) {
		t.Errorf("tokens list:\n%s\nwant the limits in the scope column", list)
	}

	job := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(job, []byte("id: nightly\nqueue: batch\npriority: 5\nrequestor: team-a-etl\ntasks: [{name: t, run: 'sleep 60'}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cli(grid, "submit", job); err != nil {
		t.Fatalf("submit within the limits: %v", err)
	}
	_, err = cli(grid, "priority", "nightly", "6")
	if err == nil || !strings.Contains(err.Error(), "priority 6 is above this token's maximum priority 5") {
		t.Errorf("allot priority above the limit: %v", err)
	}
	if _, err := cli(grid, "priority", "nightly", "5", "--urgent"); err != nil {
		t.Errorf("allot priority within the limits: %v", err)
	}
	got, err := cli(grid, "get", "nightly")
	if err != nil || !strings.Contains(got, "submitter grid") {
		t.Errorf("allot get: %v\n%s\nwant the submitter", err, got)
	}
	jobs, err := cli(admin, "list")
	if err != nil || !regexp.MustCompile(`(?m)^JOB\s+QUEUE\s+SHARE\s+PRIORITY\s+STATE\s+SUBMITTER\s+SUBMITTED\s+DURATION$`).MatchString(jobs) ||
		!regexp.MustCompile(`(?m)^nightly\s+batch\s+5\s+\S+\s+grid\s`).MatchString(jobs) {
		t.Errorf("allot list: %v\n%s\nwant a SUBMITTER column with grid", err, jobs)
	}
}

// --expires 0s (or 0d) is a written lifetime of nothing: refused naming
// --expires, not taken as "never expires", which is --expires left out.
func TestTokensCreateRefusesAnExpiryOfZero(t *testing.T) {
	dir := t.TempDir()
	cfg := spec.ServerConfig{Server: spec.ServerSettings{Listen: "127.0.0.1:0", DataDir: dir},
		Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}}
	srv, _ := serve(t, cfg, serverOptions{auth: true})
	raw, err := os.ReadFile(filepath.Join(dir, auth.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(string(raw))
	for _, v := range []string{"0s", "0d", "0", "0d0h"} {
		out, err := runCLI(t, srv.URL, "tokens", "create", "--role", "admin", "--expires", v, "--token", admin)
		if err == nil || !strings.Contains(err.Error(), "--expires") {
			t.Errorf("--expires %s: %v\n%s\nwant an error naming --expires", v, err, out)
		}
	}
	if _, err := runCLI(t, srv.URL, "tokens", "create", "--role", "admin", "--name", "forever", "--token", admin); err != nil {
		t.Fatalf("tokens create without --expires: %v", err)
	}
	list, err := runCLI(t, srv.URL, "tokens", "list", "--token", admin)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(list, "\n"); n != 3 || !regexp.MustCompile(`admin\s+forever\s+.*never\s+active`).MatchString(list) {
		t.Errorf("tokens list:\n%s\nwant the header, the bootstrap token and forever, which never expires", list)
	}
}
