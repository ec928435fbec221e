package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/spec"
)

func TestEnvironmentOverridesTheThrottlingBlockAndBadValuesNameTheVariable(t *testing.T) {
	file := func() spec.ServerConfig {
		p, n := 0.8, true
		return spec.ServerConfig{Scheduling: spec.Scheduling{Throttling: spec.Throttling{CapacityTargetPercentage: &p, ThrottlingEnabled: &n, TileWorkersPerInstance: 2}}}
	}
	cases := []struct {
		name    string
		env     map[string]string
		wantErr string // the variable the error names; "" for none
		check   func(spec.Throttling) bool
	}{
		{"no variables: the file", nil, "", func(th spec.Throttling) bool {
			return *th.CapacityTargetPercentage == 0.8 && *th.ThrottlingEnabled && th.TileWorkersPerInstance == 2
		}},
		{"variables win over the file", map[string]string{"CAPACITY_TARGET_PERCENTAGE": "0.5", "SCHEDULER_THROTTLING_ENABLED": "False",
			"TILE_WORKERS_PER_INSTANCE": "8", "DEFAULT_INSTANCE_CONCURRENCY": "3", "DEFAULT_HTTP_ENDPOINT_CONCURRENCY": "20"}, "", func(th spec.Throttling) bool {
			return *th.CapacityTargetPercentage == 0.5 && !*th.ThrottlingEnabled && th.TileWorkersPerInstance == 8 &&
				th.DefaultInstanceConcurrency == 3 && th.DefaultHTTPEndpointConcurrency == 20
		}},
		{"target percentage out of range", map[string]string{"CAPACITY_TARGET_PERCENTAGE": "2"}, "CAPACITY_TARGET_PERCENTAGE", nil},
		{"not a boolean", map[string]string{"SCHEDULER_THROTTLING_ENABLED": "maybe"}, "SCHEDULER_THROTTLING_ENABLED", nil},
		{"zero concurrency", map[string]string{"DEFAULT_INSTANCE_CONCURRENCY": "0"}, "DEFAULT_INSTANCE_CONCURRENCY", nil},
		{"not a number", map[string]string{"TILE_WORKERS_PER_INSTANCE": "four"}, "TILE_WORKERS_PER_INSTANCE", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := file()
			err := applyServerEnv(&cfg, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(cfg.Throttling) {
				t.Errorf("throttling %+v, error %v", cfg.Throttling, err)
			}
		})
	}
}

func TestServerRefusesABadThrottlingVariableAtStart(t *testing.T) {
	t.Setenv("CAPACITY_TARGET_PERCENTAGE", "1.6")
	root := newRoot()
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"server", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--no-auth"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	if err == nil || !strings.Contains(err.Error(), "CAPACITY_TARGET_PERCENTAGE: must be between 0.0 and 1.5") {
		t.Fatalf("server with a bad CAPACITY_TARGET_PERCENTAGE: %v", err)
	}
}

// runCLI runs the allot command line against a server and returns stdout.
func runCLI(t *testing.T, url string, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(append(args, "--server", url))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

func TestEndpointCommandsShowAndChangeEndpoints(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	one, three := 1.0, 3.0
	cfg := spec.ServerConfig{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}, Endpoints: []spec.Endpoint{
		{Name: "det", Type: "instance-backed", Instances: 1, InstanceConcurrency: 2},
		{Name: "ab", Type: "serverless", Variants: []spec.Variant{{Name: "cur", Weight: &three, MaxConcurrency: 8}, {Name: "cand", Weight: &one, MaxConcurrency: 4}}},
	}}}
	cfg.Server.DataDir, cfg.Server.Listen = t.TempDir(), "127.0.0.1:0"
	// Cycles only on events, so the counters do not grow while the test reads them.
	cfg.Server.CycleEvery = spec.Duration(time.Hour)
	srv, err := startServer(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := c.SubmitJob(ctx, []byte(`{"id":"`+id+`","endpoint":"det","load":2,"tasks":[{"name":"t","run":"true"}]}`), ""); err != nil {
			t.Fatal(err)
		}
	}
	// Both jobs have been through a pass: a admitted, b throttled.
	waitFor(t, func() bool {
		l, err := c.Endpoints(ctx)
		return err == nil && len(l.Endpoints) == 2 && l.Endpoints[1].Stats != nil && l.Endpoints[1].Stats.Variants[0].Throttles == 1
	})
	out, err := runCLI(t, srv.URL, "endpoints")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
		rows[f[0]] = f
	}
	want := map[string]string{
		"ENDPOINT": "ENDPOINT VARIANT TYPE MAX TARGET LOAD AVAILABLE UTIL% RUNNING VISIBLE BUFFERED THROTTLES INVOCATIONS ERRORS",
		"det":      "det instance-backed 2 2 2 0 100 1 1 2 1 2 0",
		"ab":       "ab * serverless 12 12 0 12 0 0 0 0 0 0 0",
		"cur":      "cur 8 8 0 8 0 0 0 0 0 0 0",
		"cand":     "cand 4 4 0 4 0 0 0 0 0 0 0",
	}
	for k, w := range want {
		if got := strings.Join(rows[k], " "); got != w {
			t.Errorf("row %s:\n got %q\nwant %q\n%s", k, got, w, out)
		}
	}
	if !strings.HasPrefix(out, "throttling on, capacity target 1 (100% of max),") {
		t.Errorf("no throttling line:\n%s", out)
	}
	out, err = runCLI(t, srv.URL, "endpoints", "-o", "json")
	var l api.EndpointList
	if err != nil || json.Unmarshal([]byte(out), &l) != nil || len(l.Endpoints) != 2 {
		t.Fatalf("endpoints -o json: %v\n%s", err, out)
	}

	// An autoscaler adds two instances: the waiting job starts.
	if out, err = runCLI(t, srv.URL, "endpoints", "set", "det", "--instances", "3"); err != nil || !strings.Contains(out, "max capacity 6, target 6") {
		t.Fatalf("endpoints set --instances: %v\n%s", err, out)
	}
	waitFor(t, func() bool {
		l, err := c.Endpoints(ctx)
		return err == nil && l.Endpoints[1].Stats != nil && l.Endpoints[1].Stats.RunningJobs == 2
	})
	if _, err = runCLI(t, srv.URL, "endpoints", "set", "ab", "--instances", "3"); err == nil || !strings.Contains(err.Error(), "--variant") {
		t.Errorf("--instances on an endpoint with variants and no --variant: %v", err)
	}
	file := filepath.Join(t.TempDir(), "geo.yaml")
	if err := os.WriteFile(file, []byte("type: http\nmaxConcurrency: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err = runCLI(t, srv.URL, "endpoints", "set", "geo", "-f", file); err != nil || !strings.Contains(out, "endpoint geo set") {
		t.Fatalf("endpoints set -f: %v\n%s", err, out)
	}
	if out, err = runCLI(t, srv.URL, "throttling", "set", "--target-percentage", "0.5"); err != nil || !strings.Contains(out, "capacity target 0.5") {
		t.Fatalf("throttling set: %v\n%s", err, out)
	}
	if _, err = runCLI(t, srv.URL, "throttling", "set", "--target-percentage", "2"); err == nil || !strings.Contains(err.Error(), "capacityTargetPercentage") {
		t.Errorf("throttling set 2: %v", err)
	}
	if out, err = runCLI(t, srv.URL, "endpoints", "delete", "geo"); err != nil || !strings.Contains(out, "endpoint geo removed") {
		t.Fatalf("endpoints delete: %v\n%s", err, out)
	}

	missing := filepath.Join(t.TempDir(), "x.tif")
	if _, err := c.SubmitJob(ctx, []byte(`{"id":"img","inputs":["`+missing+`"],"tasks":[{"name":"t","run":"true"}]}`), ""); err != nil {
		t.Fatal(err)
	}
	if out, err = runCLI(t, srv.URL, "deadletters"); err != nil || !strings.Contains(out, "img") || !strings.Contains(out, "no such file") {
		t.Fatalf("deadletters: %v\n%s", err, out)
	}
	if _, err = runCLI(t, srv.URL, "redrive", "img"); err == nil || !strings.Contains(err.Error(), "still dead-lettered") {
		t.Errorf("redrive of a missing input: %v", err)
	}
	if err := os.WriteFile(missing, []byte("MM\x00*tiff"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err = runCLI(t, srv.URL, "redrive", "img"); err != nil || !strings.Contains(out, "submitted again") {
		t.Errorf("redrive: %v\n%s", err, out)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
