package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/spec"
)

// The first-run path of the docs against the example server's queues
// (batch and inference, no "default"), and the errors of a submission
// whose document the flags re-encoded.

// startQueuesCluster is a server without workers whose queues are the
// example server's: two, neither named "default".
func startQueuesCluster(t *testing.T) *cluster {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg := spec.ServerConfig{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}, {Name: "inference"}}}}
	cfg.Server.DataDir, cfg.Server.Listen = t.TempDir(), "127.0.0.1:0"
	srv, err := startServer(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{url: srv.URL, c: c, srv: srv}
}

func writeJobFile(t *testing.T, name, text string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// badAtLine8 is a job whose error is on line 8 (tasks[0].count).
const badAtLine8 = `# a job
# with comments
# before it
id: bad-count
tasks:
  - name: a
    run: echo a
    count: -1
`

func TestSubmitErrorsCiteOnlyTheUsersLines(t *testing.T) {
	k := startQueuesCluster(t)
	file := writeJobFile(t, "bad.yaml", badAtLine8)
	bulk := writeJobFile(t, "jobs.yaml", "id: fine-1\ntasks:\n  - {name: a, run: echo a}\n---\n"+badAtLine8)
	noQueue := writeJobFile(t, "pipeline.yaml", "# no queue\nid: pipeline\ntasks:\n  - {name: a, run: echo a}\n")
	cases := []struct {
		name    string
		args    []string
		want    []string
		wantNot []string
	}{
		{name: "a job naming no queue on a server without a default queue",
			args:    []string{"submit", noQueue},
			want:    []string{`queue: the job names no queue and this server has no queue "default": give queue: (batch, inference)`},
			wantNot: []string{"line "}},
		{name: "--wrap with an unknown --queue",
			args:    []string{"submit", "--wrap", "x", "--queue", "nope"},
			want:    []string{`no queue "nope"`},
			wantNot: []string{"line "}},
		{name: "--dependency on a job that does not exist",
			args:    []string{"submit", "--wrap", "x", "--queue", "batch", "--dependency", "afterok:self1"},
			want:    []string{"dependsOn[0].job"},
			wantNot: []string{"line "}},
		{name: "a file with --queue keeps its own lines",
			args: []string{"submit", file, "--queue", "batch", "--id-prefix", "q"},
			want: []string{"line 8: tasks[0].count"}},
		{name: "a file with --dependency keeps its own lines",
			args: []string{"submit", file, "--queue", "batch", "--dependency", "afterany:other"},
			want: []string{"line 8: tasks[0].count"}},
		{name: "a bulk file with --queue and --id-prefix keeps the file's lines",
			args: []string{"submit", bulk, "--queue", "batch", "--id-prefix", "q"},
			want: []string{"jobs.yaml:4: refused: invalid: line 12: tasks[0].count"}},
		{name: "a file with --queue only",
			args: []string{"submit", file, "--queue", "batch"},
			want: []string{"line 8: tasks[0].count"}},
		{name: "a file without flags",
			args: []string{"submit", file},
			want: []string{"line 8: tasks[0].count"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := runCLIErr(t, k.url, tc.args...)
			if err == nil {
				t.Fatalf("allot %s succeeded:\n%s%s", strings.Join(tc.args, " "), out, errOut)
			}
			got := out + errOut + err.Error()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("got %q, want it to contain %q", got, w)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("got %q, want no %q", got, w)
				}
			}
		})
	}
}

func TestDevSuggestsASubmissionItsServerTakes(t *testing.T) {
	cases := []struct {
		name   string
		config string // a server configuration file; "" for none
	}{
		{"no configuration", ""},
		{"the example server", "../../examples/server/allot.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg, err := loadServerConfig(tc.config)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Server.DataDir, cfg.Server.Listen = t.TempDir(), "127.0.0.1:0"
			srv, err := startServer(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			args := strings.Fields(devTrySubmit(cfg.Scheduling.Queues))[1:] // without "allot"
			for i, a := range args {
				if a == "examples/jobs/pipeline.yaml" {
					args[i] = "../../" + a
				}
			}
			// Without --wait: this server has no workers.
			args = slices.DeleteFunc(args, func(a string) bool { return a == "--wait" })
			if out, errOut, err := runCLIErr(t, srv.URL, args...); err != nil {
				t.Fatalf("allot %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
			}
		})
	}
}

func TestSubmitFlagsRefuseWhatTheDocumentRefuses(t *testing.T) {
	const nowhere = "http://127.0.0.1:1" // refused before anything is sent
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"--count 0", []string{"submit", "--wrap", "x", "--count", "0"}, "--count 0: must be at least 1"},
		{"--count 0 with --cpu 0", []string{"submit", "--wrap", "x", "--count", "0", "--cpu", "0"}, "--count 0: must be at least 1"},
		{"--count -1", []string{"submit", "--wrap", "x", "--count", "-1"}, "--count -1: must be at least 1"},
		{"--gpus -1", []string{"submit", "--wrap", "x", "--gpus", "-1"}, "--gpus -1: must not be negative"},
		{"--dependency with ?", []string{"submit", "--wrap", "x", "--dependency", "afterok:a?afterok:b"},
			"`?` (any of) is not supported: a job waits for all its dependencies; write afterok:a:b, or afterok:a,afterok:b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCLIErr(t, nowhere, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("allot %s: %v, want an error containing %q", strings.Join(tc.args, " "), err, tc.want)
			}
		})
	}
}

func TestTokensCreateWarnsOfAQueueTheServerDoesNotHave(t *testing.T) {
	dir := t.TempDir()
	cfg := spec.ServerConfig{Server: spec.ServerSettings{Listen: "127.0.0.1:0", DataDir: dir}}
	srv, _ := serve(t, cfg, serverOptions{auth: true})
	raw, err := os.ReadFile(filepath.Join(dir, auth.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(string(raw))
	cases := []struct {
		queues []string
		want   string // on standard error; "" for nothing
	}{
		{[]string{"batch"}, `warning: this server has no queue "batch" (queues: default): the token's jobs there are refused until it has one`},
		{[]string{"default", "gpu", "batch"}, `warning: this server has no queues "gpu", "batch" (queues: default)`},
		{[]string{"default"}, ""},
		{[]string{"*"}, ""},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.queues, ","), func(t *testing.T) {
			args := []string{"tokens", "create", "--role", "submitter", "--share", "*", "--token", admin}
			for _, q := range tc.queues {
				args = append(args, "--queue", q)
			}
			out, errOut, err := runCLIErr(t, srv.URL, args...)
			if err != nil {
				t.Fatalf("tokens create: %v\n%s", err, errOut)
			}
			if !strings.Contains(out, "created ") {
				t.Errorf("standard output %q, want the token", out)
			}
			if tc.want == "" && errOut != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("standard error %q, want %q", errOut, tc.want)
			}
		})
	}
}

// startCLI runs the command line until it returns or the test cancels
// it: for the commands that wait.
func startCLI(t *testing.T, url string, args ...string) (stdout, stderr *syncBuffer, stop func() error) {
	t.Helper()
	root := newRoot()
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(append(args, "--server", url))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stdout, stderr, stop
}

// waitFor polls what a command wrote until it holds want, or the command
// has had ample time.
func waitForText(t *testing.T, what string, b *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(b.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s %q, want it to say %q", what, b.String(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCommandsThatWaitSayWhatFor(t *testing.T) {
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
	// A registered worker that never asks for work, and has no GPU.
	if _, err := c.Register(t.Context(), api.Register{Name: "cpu-1", Resources: spec.Resources{CPU: 4000, Memory: 8192}, Slots: 1}); err != nil {
		t.Fatal(err)
	}
	gpu := writeJobFile(t, "gpu.yaml", "id: gpu\ntasks:\n  - name: train\n    run: 'true'\n    resources: {gpus: 1}\n")

	t.Run("submit --wait on a job no worker can run", func(t *testing.T) {
		_, stderr, stop := startCLI(t, srv.URL, "submit", gpu, "--wait")
		waitForText(t, "submit --wait's standard error", stderr,
			"--wait waits for job gpu anyway: it starts once a worker that can run it registers; Ctrl-C stops waiting (the job stays; allot cancel gpu ends it)")
		_ = stop()
	})
	t.Run("logs -f on a task that has not started", func(t *testing.T) {
		stdout, stderr, stop := startCLI(t, srv.URL, "logs", "gpu", "-f")
		waitForText(t, "logs -f's standard error", stderr, "task train of job gpu has not started yet (unschedulable: ")
		waitForText(t, "logs -f's standard error", stderr, "; waiting for it to start (Ctrl-C stops)")
		_ = stop()
		if stdout.String() != "" {
			t.Errorf("logs -f printed %q before the task started", stdout.String())
		}
		if n := strings.Count(stderr.String(), "has not started"); n != 1 {
			t.Errorf("the note is printed %d times:\n%s", n, stderr.String())
		}
	})
}
