package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/spec"
)

// `allot submit` of a multi-document file, an NDJSON file or a directory
// submits every job in bulk, prints one line per job (created, or refused
// with its error and its line in its file) and fails if any was refused.
func TestSubmitOfManyJobsPrintsOneLinePerJob(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := spec.ServerConfig{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}}
	cfg.Server.DataDir, cfg.Server.Listen = t.TempDir(), "127.0.0.1:0"
	cfg.Server.CycleEvery = spec.Duration(time.Hour)
	srv, err := startServer(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	multi := write("multi.yaml", "id: m1\ntasks: [{name: x, run: 'true'}]\n---\nid: m2\ntasks:\n  - name: x\n---\nid: m3\ntasks: [{name: x, run: 'true'}]\n")
	ndjson := write("jobs.ndjson", `{"id":"n1","tasks":[{"name":"x","run":"true"}]}`+"\n\n"+`{"id":"n2","tasks":[{"name":"x","run":"true"}]}`+"\n")
	write("d/b.yml", "id: d2\ntasks: [{name: x, run: 'true'}]\n")
	write("d/a.json", `{"id":"d1","tasks":[{"name":"x","run":"true"}]}`)
	write("d/c.yaml", "id: d1\ntasks: [{name: x, run: 'true'}]\n") // taken by a.json
	write("d/notes.txt", "not a job")
	cases := []struct {
		name, path string
		want       []string
		fails      bool
	}{
		{"multi-document file", multi, []string{
			multi + ":1: created m1",
			multi + ":3: refused: invalid: line 6: tasks[0]: ",
			multi + ":7: created m3",
		}, true},
		{"NDJSON file", ndjson, []string{ndjson + ":1: created n1", ndjson + ":3: created n2"}, false},
		{"directory", filepath.Join(dir, "d"), []string{
			filepath.Join(dir, "d", "a.json") + ":1: created d1",
			filepath.Join(dir, "d", "b.yml") + ":1: created d2",
			filepath.Join(dir, "d", "c.yaml") + `:1: refused: conflict: job ID "d1" is taken`,
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCLI(t, srv.URL, "submit", tc.path)
			if (err != nil) != tc.fails {
				t.Fatalf("error %v, want failure %v; output:\n%s", err, tc.fails, out)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("output:\n%s\nwant %d lines", out, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("line %d: %q, want it to start with %q", i+1, lines[i], w)
				}
			}
		})
	}
}

// `allot submit` sends no more tasks in one bulk call than the server
// creates from one (spec.MaxTasksPerJob, counts expanded): a list of big
// jobs goes in several calls, a job alone over it in a call of its own.
func TestBulkCallsKeepToTheServersTaskBudget(t *testing.T) {
	doc := func(count int) jobDocument {
		return jobDocument{body: []byte(fmt.Sprintf(`{"tasks":[{"name":"a","run":"true"},{"name":"b","run":"true","count":%d}]}`, count))}
	}
	max := spec.MaxTasksPerJob
	for _, tc := range []struct {
		name string
		docs []jobDocument
		want int // documents in the first call
	}{
		{"all fit", []jobDocument{doc(10), doc(20), doc(30)}, 3},
		{"the budget exactly", []jobDocument{doc(max/2 - 1), doc(max/2 - 1)}, 2},
		{"one past it", []jobDocument{doc(max/2 - 1), doc(max / 2), doc(1)}, 1},
		{"a job over it alone", []jobDocument{doc(2 * max), doc(1)}, 1},
		{"an unreadable document counts one", []jobDocument{doc(max - 3), {body: []byte("{not json")}, doc(1)}, 2},
	} {
		if got := bulkCallDocs(tc.docs); got != tc.want {
			t.Errorf("%s: %d documents in the first call, want %d", tc.name, got, tc.want)
		}
	}
}
