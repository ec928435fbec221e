package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/spec"
)

// runCLIErr runs the allot command line against a server and returns
// stdout and stderr.
func runCLIErr(t *testing.T, url string, args ...string) (string, string, error) {
	t.Helper()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append(args, "--server", url))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// listedIDs is the JOB column of allot list's table.
func listedIDs(out string) []string {
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		ids = append(ids, strings.Fields(line)[0])
	}
	return ids
}

func TestListShowsNewestFirstSaysWhatItCutAndListsAllOnRequest(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := spec.ServerConfig{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}}
	cfg.Server.DataDir, cfg.Server.Listen = t.TempDir(), "127.0.0.1:0"
	srv, err := startServer(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := c.SubmitJob(ctx, fmt.Appendf(nil, `{"id":"j%d","queue":"batch","tasks":[{"name":"t","run":"true"}]}`, i), ""); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want, wantHint string, args ...string) {
		t.Helper()
		out, errOut, err := runCLIErr(t, srv.URL, append([]string{"list"}, args...)...)
		if err != nil {
			t.Fatalf("list %v: %v", args, err)
		}
		if got := strings.Join(listedIDs(out), " "); got != want {
			t.Errorf("list %v = %s, want %s", args, got, want)
		}
		if wantHint == "" && errOut != "" || !strings.Contains(errOut, wantHint) {
			t.Errorf("list %v: stderr %q, want %q", args, errOut, wantHint)
		}
	}
	check("j4 j3 j2 j1 j0", "")
	check("j4 j3", "3 more: --limit / --all", "--limit", "2")
	check("j0 j1 j2", "2 more: --limit / --all", "--limit", "3", "--sort", "submitted")
	check("j4 j3 j2 j1 j0", "", "--limit", "2", "--all")
	check("j0 j1 j2 j3 j4", "", "--limit", "1", "--all", "--sort", "submitted")
}

func TestListRefusesFiltersThatMatchNothingByConstruction(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := spec.ServerConfig{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}, {Name: "gpu"}}}}
	cfg.Server.DataDir, cfg.Server.Listen = t.TempDir(), "127.0.0.1:0"
	srv, err := startServer(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--state", "bogus"}, []string{"state", `"bogus"`, "pending", "dead_lettered"}},
		{[]string{"--queue", "btach"}, []string{"queue", `"btach"`, "batch", "gpu"}},
		{[]string{"--sort", "newest"}, []string{"sort", `"newest"`, "-submitted"}},
	} {
		_, _, err := runCLIErr(t, srv.URL, append([]string{"list"}, tc.args...)...)
		if err == nil {
			t.Errorf("list %v: no error", tc.args)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("list %v: error %q does not say %s", tc.args, err, w)
			}
		}
	}
}

// TestListHonoursALimitAboveThePageSize runs list against a server that
// pages as GET /v1/jobs does (at most 1000 a page, 100 for a larger limit).
func TestListHonoursALimitAboveThePageSize(t *testing.T) {
	const total = 2600
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		after, _ := strconv.Atoi(r.URL.Query().Get("after"))
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		if limit <= 0 || limit > 1000 {
			limit = 100
		}
		var l api.JobList
		for seq := after + 1; seq <= total && len(l.Jobs) < limit; seq++ {
			l.Jobs = append(l.Jobs, api.Job{ID: fmt.Sprintf("j%d", seq)})
		}
		if len(l.Jobs) == limit {
			l.Next = int64(after + limit)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(l)
	}))
	defer srv.Close()
	out, errOut, err := runCLIErr(t, srv.URL, "list", "--limit", "1500", "--sort", "submitted")
	if err != nil {
		t.Fatal(err)
	}
	if ids := listedIDs(out); len(ids) != 1500 || ids[1499] != "j1500" {
		t.Errorf("list --limit 1500 listed %d jobs", len(ids))
	}
	if !strings.Contains(errOut, "over 1000 more: --limit / --all (next page: --after 1500)") {
		t.Errorf("stderr %q, want the over-1000 hint", errOut)
	}
	out, errOut, err = runCLIErr(t, srv.URL, "list", "--all")
	if err != nil {
		t.Fatal(err)
	}
	if ids := listedIDs(out); len(ids) != total || errOut != "" {
		t.Errorf("list --all listed %d jobs, stderr %q", len(ids), errOut)
	}
}
