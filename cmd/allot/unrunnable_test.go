package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/spec"
)

// A job that no registered worker can ever run is accepted with a warning,
// refused with --strict, and explain says what would help.
func TestSubmitWarnsOfAJobNoWorkerCanEverRun(t *testing.T) {
	cfg := spec.ServerConfig{}
	cfg.Server.DataDir, cfg.Server.Listen = t.TempDir(), "127.0.0.1:0"
	srv, err := startServer(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(t.Context(), api.Register{Name: "cpu-1", Resources: spec.Resources{CPU: 4000, Memory: 8192}, Slots: 1}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gpu := write("gpu.yaml", "id: gpu\ntasks:\n  - name: train\n    run: 'true'\n    resources: {gpus: 1}\n")
	cpu := write("cpu.yaml", "id: cpu\ntasks:\n  - name: t\n    run: 'true'\n")

	out, errOut, err := runCLIErr(t, srv.URL, "submit", gpu)
	if err != nil || !strings.Contains(out, "submitted gpu") {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	for _, w := range []string{"warning", "no registered worker can ever run", "train", "1 GPU", "1 lack gpus"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("the warning on stderr %q does not say %q", errOut, w)
		}
	}
	j, err := c.Job(t.Context(), "gpu")
	if err != nil || j.State != "pending" {
		t.Fatalf("the job without --strict: %+v %v, want stored and pending", j, err)
	}

	_, errOut, err = runCLIErr(t, srv.URL, "submit", cpu)
	if err != nil || strings.Contains(errOut, "warning") {
		t.Errorf("a job the fleet can run: %v, stderr %q", err, errOut)
	}

	gpu2 := write("gpu2.yaml", "id: gpu2\ntasks:\n  - name: train\n    run: 'true'\n    resources: {gpus: 1}\n")
	_, _, err = runCLIErr(t, srv.URL, "submit", "--strict", gpu2)
	wantAdvice(t, "--strict", err, "no registered worker can ever run", "train")
	if _, err := c.Job(t.Context(), "gpu2"); !client.IsNotFound(err) {
		t.Errorf("--strict stored the job: %v", err)
	}

	out, _, err = runCLIErr(t, srv.URL, "explain", "gpu")
	if err != nil || !strings.Contains(out, "no registered worker can ever run the task") || !strings.Contains(out, "must register") {
		t.Errorf("explain: %v\n%s", err, out)
	}
}

func TestBulkSubmitLinesCarryTheWarnings(t *testing.T) {
	cfg := spec.ServerConfig{}
	cfg.Server.DataDir, cfg.Server.Listen = t.TempDir(), "127.0.0.1:0"
	srv, err := startServer(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(t.Context(), api.Register{Name: "cpu-1", Resources: spec.Resources{CPU: 4000, Memory: 8192}, Slots: 1}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "two.yaml")
	body := "id: a\ntasks: [{name: t, run: 'true'}]\n---\nid: b\ntasks: [{name: train, run: 'true', resources: {gpus: 1}}]\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLIErr(t, srv.URL, "submit", file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Contains(lines[0], "warning") || !strings.Contains(lines[1], "created b; warning: no registered worker can ever run task(s) train") {
		t.Errorf("bulk lines:\n%s", out)
	}
}
