package main

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/spec"
)

// eventJobs is the job= of each line allot events printed, in order.
func eventJobs(out string) string {
	var jobs []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		for _, f := range strings.Fields(line) {
			if j, ok := strings.CutPrefix(f, "job="); ok {
				jobs = append(jobs, j)
			}
		}
	}
	return strings.Join(jobs, " ")
}

func TestEventsShowsTheTailNewestLastWithFilters(t *testing.T) {
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
	for i := range 4 {
		if _, err := c.SubmitJob(t.Context(), fmt.Appendf(nil, `{"id":"j%d","tasks":[{"name":"t","run":"true"}]}`, i), ""); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want string, args ...string) {
		t.Helper()
		out, _, err := runCLIErr(t, srv.URL, append([]string{"events"}, args...)...)
		if err != nil {
			t.Fatalf("events %v: %v", args, err)
		}
		if got := eventJobs(out); got != want {
			t.Errorf("events %v: jobs %q, want %q\n%s", args, got, want, out)
		}
	}
	check("j0 j1 j2 j3")
	check("j2 j3", "--limit", "2")
	check("j1", "--job", "j1")
	check("j0 j1 j2 j3", "--since", "1h")
	check("", "--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	check("j3", "--since", "10m", "--limit", "1")
	check("j1 j2", "--after", "1", "--limit", "2")

	_, _, err = runCLIErr(t, srv.URL, "events", "--since", "yesterday")
	wantAdvice(t, "--since yesterday", err, "--since", "10m", "RFC 3339")
}
