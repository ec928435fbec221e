package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/agent"
	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/datadir"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// syncBuffer is a buffer a command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fleet is a server on a fresh data directory with one real worker.
type fleet struct {
	url string
	c   *client.Client
	dir string
}

// startFleet starts a server (server.maxOutput 1Mi) and a worker with two
// slots that streams output every 100 ms; before starts the server, it
// may write to the data directory's store.
func startFleet(t *testing.T, before func(st store.Store)) fleet {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg := spec.ServerConfig{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}}
	cfg.Server.DataDir, cfg.Server.Listen = t.TempDir(), "127.0.0.1:0"
	cfg.Server.MaxOutput = 1 // MiB
	if before != nil {
		st, err := sqlite.Open(filepath.Join(cfg.Server.DataDir, datadir.DatabaseFile))
		if err != nil {
			t.Fatal(err)
		}
		before(st)
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := startServer(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Server: srv.URL, Name: "w1", Slots: 2, StreamEvery: 100 * time.Millisecond,
		Resources: spec.Resources{CPU: 2000, Memory: 2048}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = a.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done; _ = srv.Wait() })
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return fleet{url: srv.URL, c: c, dir: t.TempDir()}
}

func (f fleet) submit(t *testing.T, id, run string) {
	t.Helper()
	doc, _ := json.Marshal(map[string]any{"id": id, "queue": "batch", "tasks": []any{map[string]any{"name": "t", "run": run}}})
	if _, err := f.c.SubmitJob(context.Background(), doc, "application/json"); err != nil {
		t.Fatal(err)
	}
}

func (f fleet) waitEnded(t *testing.T, id string) api.Job {
	t.Helper()
	var j api.Job
	waitFor(t, func() bool {
		var err error
		j, err = f.c.Job(context.Background(), id)
		return err == nil && terminal(j.State)
	})
	return j
}

// allot logs -f prints a running task's output before the task ends, and
// returns once it has.
func TestLogsFollowShowsOutputWhileTheTaskRuns(t *testing.T) {
	f := startFleet(t, nil)
	gate := filepath.Join(f.dir, "go")
	f.submit(t, "live", fmt.Sprintf(`echo first line; while [ ! -e %s ]; do sleep 0.05; done; echo second line`, gate))

	root := newRoot()
	var out syncBuffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"logs", "live", "-f", "--server", f.url})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ended := make(chan error, 1)
	go func() { ended <- root.ExecuteContext(ctx) }()

	waitFor(t, func() bool { return strings.Contains(out.String(), "first line") })
	// The task waits for the gate: it is still running.
	if j, err := f.c.Job(ctx, "live"); err != nil || j.Tasks[0].State != "running" {
		t.Fatalf("the task is not running while -f showed its first line: %v %+v", err, j.Tasks)
	}
	if strings.Contains(out.String(), "second line") {
		t.Fatal("second line before the gate opened")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("allot logs -f did not return after the task ended")
	}
	got := out.String()
	if !strings.HasPrefix(got, "==> t (attempt 1") || !strings.HasSuffix(got, "first line\nsecond line\n") {
		t.Errorf("allot logs -f printed:\n%s", got)
	}
}

// Output over the server's limit keeps its tail, and the header says how
// much was dropped.
func TestLogsOverTheLimitKeepTheTail(t *testing.T) {
	f := startFleet(t, nil)
	// 3,000,000 x's, then a newline and END: 3,000,005 bytes.
	f.submit(t, "big", `head -c 3000000 /dev/zero | tr '\0' x; echo; echo END`)
	f.waitEnded(t, "big")
	out, err := runCLI(t, f.url, "logs", "big", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var logs api.Logs
	if err := json.Unmarshal([]byte(out), &logs); err != nil || len(logs.Tasks) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	tl := logs.Tasks[0]
	const total, limit = 3000005, 1 << 20
	if tl.Total != total || len(tl.Output) != limit || tl.Offset != total-limit || tl.Dropped != total-limit ||
		!strings.HasSuffix(tl.Output, strings.Repeat("x", 100)+"\nEND\n") {
		t.Errorf("total %d offset %d dropped %d, %d bytes ending %q", tl.Total, tl.Offset, tl.Dropped, len(tl.Output), tl.Output[max(0, len(tl.Output)-20):])
	}
	out, err = runCLI(t, f.url, "logs", "big")
	if err != nil {
		t.Fatal(err)
	}
	header, _, _ := strings.Cut(out, "\n")
	if header != "==> t (attempt 1, exit 0; first 1.9Mi of 2.9Mi dropped: over the server's output limit (server.maxOutput)) <==" {
		t.Errorf("header %q", header)
	}
}

// The worker measures each attempt's CPU time and peak memory from its
// rusage, and allot get shows them with the durations.
func TestGetShowsTheCPUTimeAndMemoryOfABusyTask(t *testing.T) {
	f := startFleet(t, nil)
	f.submit(t, "busy", `i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done`)
	f.waitEnded(t, "busy")
	out, err := runCLI(t, f.url, "get", "busy", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var j api.Job
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatal(err)
	}
	tk := j.Tasks[0]
	if tk.CPUSeconds <= 0 || tk.PeakMemory <= 0 || len(tk.Attempts) != 1 || tk.Attempts[0].CPUSeconds != tk.CPUSeconds ||
		tk.Attempts[0].WallSeconds <= 0 || tk.Attempts[0].Worker != "w1" {
		t.Fatalf("task %+v", tk)
	}
	t.Logf("busy loop: %.3fs CPU, %d bytes peak, %.3fs wall", tk.CPUSeconds, tk.PeakMemory, tk.Attempts[0].WallSeconds)
	out, err = runCLI(t, f.url, "get", "busy")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	if !strings.Contains(lines[0], "duration ") || strings.Join(strings.Fields(lines[2]), " ") != "TASK STATE ATTEMPT WORKER EXIT DURATION CPU MAXRSS REASON" {
		t.Fatalf("allot get:\n%s", out)
	}
	if row := strings.Fields(lines[3]); len(row) < 8 || row[5] == "" || row[6] != cpuText(tk.CPUSeconds) || row[7] != bytesText(tk.PeakMemory) {
		t.Errorf("task row %q", lines[3])
	}
	out, err = runCLI(t, f.url, "get", "busy", "-o", "wide")
	if err != nil || !strings.Contains(out, "STARTED") || !strings.Contains(out, "WALL") {
		t.Errorf("-o wide: %v\n%s", err, out)
	}
}

// allot usage sums a known history per share and per submitter: each
// attempt counts for its part inside the period.
func TestUsageSumsAKnownHistory(t *testing.T) {
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	at := func(h float64) time.Time { return day.Add(time.Duration(h * float64(time.Hour))) }
	f := startFleet(t, func(st store.Store) {
		err := st.Commit(context.Background(), store.Batch{Attempts: []store.Attempt{
			// Inside the period: 2 h, 2 GPUs, 1.5 CPU-hours.
			{Job: "a", Task: "t", Attempt: 1, Share: "vision", Submitter: "ann", Started: at(1), Ended: at(3), GPUs: 2, CPUSeconds: 5400},
			// Half inside (the period starts at 0): 1 h of 2, 1 CPU-hour of 2.
			{Job: "b", Task: "t", Attempt: 1, Share: "vision", Submitter: "bob", Started: at(-1), Ended: at(1), CPUSeconds: 7200},
			// 3 h, all inside.
			{Job: "c", Task: "t", Attempt: 2, Share: "nlp", Submitter: "ann", Started: at(4), Ended: at(7), GPUs: 1},
			// Outside: ends before the period.
			{Job: "d", Task: "t", Attempt: 1, Share: "nlp", Submitter: "bob", Started: at(-5), Ended: at(-2), GPUs: 4},
			// Cut at the end of the period (24 h): 2 h of 4.
			{Job: "e", Task: "t", Attempt: 1, Share: "nlp", Submitter: "bob", Started: at(22), Ended: at(26), CPUSeconds: 3600},
		}})
		if err != nil {
			t.Fatal(err)
		}
	})
	out, err := runCLI(t, f.url, "usage", "--since", "2026-03-02T00:00:00Z", "--until", "2026-03-03T00:00:00Z", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var u api.Usage
	if err := json.Unmarshal([]byte(out), &u); err != nil {
		t.Fatal(err)
	}
	want := map[string][4]float64{ // attempts, slot-hours, CPU-hours, GPU-hours
		"share vision":  {2, 2 + 1, 1.5 + 1, 4},
		"share nlp":     {2, 3 + 2, 0 + 0.5, 3},
		"submitter ann": {2, 2 + 3, 1.5, 4 + 3},
		"submitter bob": {2, 1 + 2, 1 + 0.5, 0},
		"total ":        {4, 8, 3, 7},
	}
	got := map[string][4]float64{}
	for _, p := range []struct {
		kind string
		rows []api.UsageRow
	}{{"share", u.Shares}, {"submitter", u.Submitters}, {"total", []api.UsageRow{u.Total}}} {
		for _, r := range p.rows {
			got[p.kind+" "+r.Name] = [4]float64{float64(r.Attempts), r.SlotHours, r.CPUHours, r.GPUHours}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for k, w := range want {
		for i := range w {
			if math.Abs(got[k][i]-w[i]) > 1e-9 {
				t.Errorf("%s: %v, want %v", k, got[k], w)
				break
			}
		}
	}
	out, err = runCLI(t, f.url, "usage", "--since", "2026-03-02T00:00:00Z", "--until", "2026-03-03T00:00:00Z", "--by", "share", "--no-headers")
	if err != nil {
		t.Fatal(err)
	}
	if want := "nlp     5.00  0.50  3.00\nvision  3.00  2.50  4.00\nTOTAL   8.00  3.00  7.00\n"; out != want {
		t.Errorf("usage table:\n%s\nwant\n%s", out, want)
	}
}

// The output controls: jsonpath, go-template, --no-headers, -o wide, and
// the completion of job IDs, tasks, queues and worker names.
func TestOutputControlsAndCompletion(t *testing.T) {
	f := startFleet(t, nil)
	f.submit(t, "one", "true")
	f.submit(t, "two", "true")
	f.waitEnded(t, "one")
	f.waitEnded(t, "two")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "-o", "jsonpath={.jobs[*].id}"}, "two one"},
		{[]string{"list", "-o", "jsonpath=.jobs[0].state"}, "succeeded"},
		{[]string{"list", "-o", `go-template={{range .jobs}}{{.id}}:{{.state}} {{end}}`}, "two:succeeded one:succeeded "},
		{[]string{"get", "one", "-o", "jsonpath={.tasks[0].worker}"}, "w1"},
		{[]string{"workers", "-o", "jsonpath={[0].name}"}, "w1"},
		{[]string{"queues", "-o", "go-template={{range .}}{{.name}}{{end}}"}, "batch"},
		{[]string{"__complete", "logs", ""}, "two\tsucceeded in batch\none\tsucceeded in batch\n:4\n"},
		{[]string{"__complete", "logs", "one", ""}, "t\tsucceeded\n:4\n"},
		{[]string{"__complete", "workers", "drain", ""}, "w1\tready\n:4\n"},
		{[]string{"__complete", "list", "--queue", "b"}, "batch\t0 running, 0 waiting\n:4\n"},
	} {
		var out string
		var err error
		if tc.args[0] == "__complete" {
			out, err = complete(f.url, tc.args[1:]...)
		} else {
			out, err = runCLI(t, f.url, tc.args...)
		}
		if err != nil || out != tc.want {
			t.Errorf("allot %s: %v\n%q\nwant %q", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
	out, err := runCLI(t, f.url, "list", "--no-headers")
	if err != nil || !strings.HasPrefix(out, "two ") || strings.Count(out, "\n") != 2 {
		t.Errorf("list --no-headers: %v\n%s", err, out)
	}
	out, err = runCLI(t, f.url, "list", "-o", "wide")
	if header, _, _ := strings.Cut(out, "\n"); err != nil || !strings.HasSuffix(header, "DURATION  REQUESTOR  URGENT  ENDED") {
		t.Errorf("list -o wide: %v\n%s", err, out)
	}
	out, err = runCLI(t, f.url, "workers", "--no-headers", "-o", "wide")
	if err != nil || !strings.HasPrefix(out, "w1 ") || strings.Count(out, "\n") != 1 {
		t.Errorf("workers --no-headers -o wide: %v\n%s", err, out)
	}
	if _, err := runCLI(t, f.url, "list", "-o", "jsonpath={.jobs[}"); err == nil || !strings.HasPrefix(err.Error(), "-o jsonpath:") {
		t.Errorf("a bad jsonpath: %v", err)
	}
	if _, err := runCLI(t, f.url, "list", "-o", "xml"); err == nil || !strings.Contains(err.Error(), "jsonpath=") {
		t.Errorf("-o xml: %v", err)
	}
}

// complete runs cobra's completion of args (the last is the word being
// completed) against the server at url.
func complete(url string, args ...string) (string, error) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(append([]string{"__complete", "--server", url}, args...))
	err := root.Execute()
	return out.String(), err
}

// Each attempt's output is kept: after a retry, --attempt 1 shows the
// failed attempt's, and the default the current one's.
func TestLogsKeepEachAttempt(t *testing.T) {
	f := startFleet(t, nil)
	marker := filepath.Join(f.dir, "tried")
	doc, _ := json.Marshal(map[string]any{"id": "retry", "queue": "batch", "tasks": []any{map[string]any{"name": "t", "maxAttempts": 2,
		"run": fmt.Sprintf(`if [ ! -e %s ]; then touch %s; echo attempt one failed; exit 3; fi; echo attempt two`, marker, marker)}}})
	if _, err := f.c.SubmitJob(context.Background(), doc, "application/json"); err != nil {
		t.Fatal(err)
	}
	if j := f.waitEnded(t, "retry"); j.State != "succeeded" || j.Tasks[0].Attempt != 2 {
		t.Fatalf("job %s, task %+v", j.State, j.Tasks[0])
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"logs", "retry"}, "==> t (attempt 2, exit 0) <==\nattempt two\n"},
		{[]string{"logs", "retry", "t", "--attempt", "1"}, "==> t (attempt 1, exit 3) <==\nattempt one failed\n"},
		{[]string{"logs", "retry", "--task", "t", "--attempt", "1", "--no-headers"}, "attempt one failed\n"},
	} {
		if out, err := runCLI(t, f.url, tc.args...); err != nil || out != tc.want {
			t.Errorf("allot %s: %v\n%q, want %q", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
	if _, err := runCLI(t, f.url, "logs", "retry", "--attempt", "3"); err == nil || !strings.Contains(err.Error(), "not 3") {
		t.Errorf("attempt 3: %v", err)
	}
	out, err := runCLI(t, f.url, "get", "retry", "-o", "wide")
	if err != nil || strings.Count(out, "\nt ") != 3 { // the task's row and its two attempts
		t.Errorf("get -o wide: %v\n%s", err, out)
	}
}
func TestLogHeaderShowsTheExitCodeOnceReported(t *testing.T) {
	exit := 143
	for _, tc := range []struct {
		log  api.TaskLog
		want string
	}{
		{api.TaskLog{Task: "s", Attempt: 1}, "==> s (attempt 1) <=="},
		{api.TaskLog{Task: "s", Attempt: 2, ExitCode: &exit}, "==> s (attempt 2, exit 143) <=="},
	} {
		if got := logHeader(tc.log); got != tc.want {
			t.Errorf("logHeader(%+v) = %q, want %q", tc.log, got, tc.want)
		}
	}
}
