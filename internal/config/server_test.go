package config

import (
	"strings"
	"testing"
	"time"

	"os"
	"path/filepath"

	"github.com/allot-sched/allot/internal/spec"
)

func TestServerConfigChecksItsSettingsNamingTheField(t *testing.T) {
	cases := []struct {
		name, yaml, want string // want: "" for a valid file, else a field path in the error
	}{
		{"allowed inputs", "server:\n  inputs:\n    allow: [/data, \"file:///srv/x\", \"https://tiles.example.com/pub\"]\n", ""},
		{"a relative directory", "server:\n  inputs:\n    allow: [/data, data]\n", "line 3: server.inputs.allow[1]"},
		{"a URL without a host", "server:\n  inputs:\n    allow: [\"https:///x\"]\n", "server.inputs.allow[0]"},
		{"an unsupported scheme", "server:\n  inputs:\n    allow: [\"s3://bucket\"]\n", "server.inputs.allow[0]"},
		{"a negative duration", "server:\n  stopGrace: -1s\n", "server.stopGrace"},
		{"a body limit that overflows", "server:\n  maxBody: 1e30\n", "line 2: server.maxBody"},
		{"a cycle that overflows", "server:\n  cycleEvery: 1e300\n", "line 2: server.cycleEvery"},
		{"an endpoint capacity that overflows", "endpoints: [{name: e, type: serverless, maxConcurrency: 1e30}]\n", "endpoints[0].maxConcurrency"},
		{"an endpoint capacity past the maximum", "endpoints: [{name: e, type: serverless, maxConcurrency: 9223372036854775807}]\n", "endpoints[0].maxConcurrency"},
		{"a NaN weight", "endpoints: [{name: e, type: serverless, variants: [{name: a, maxConcurrency: 1, weight: .nan}]}]\n", "endpoints[0].variants[0].weight"},
		{"a fractional queue priority", "queues: [{name: q, priority: 1.5}]\n", "queues[0].priority"},
		{"a NaN target percentage", "throttling: {capacityTargetPercentage: .nan}\n", "throttling.capacityTargetPercentage"},
		{"a negative connection limit", "server:\n  limits:\n    maxConnectionsPerAddress: -1\n", "line 3: server.limits.maxConnectionsPerAddress"},
		{"a negative body rate", "server:\n  limits:\n    minBodyRate: -5\n", "server.limits.minBodyRate"},
		{"a reserve as large as the limit", "server:\n  limits:\n    maxConnections: 10\n    reservedConnections: 10\n", "server.limits.reservedConnections"},
		{"an unknown limit", "server:\n  limits:\n    maxConns: 10\n", "server.limits.maxConns"},
		{"a store that is not PostgreSQL", "server:\n  store: mysql://db/allot\n", "line 2: server.store"},
		{"a store path", "server:\n  store: /var/lib/allot/allot.db\n", "server.store"},
		{"a limit that is not a number", "server:\n  limits:\n    maxConnections: many\n", "server.limits.maxConnections"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "allot.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadServer(path)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("valid file refused: %v", err)
			case tc.want == "" && len(cfg.Server.Inputs.Allow) != 3:
				t.Fatalf("allow = %v", cfg.Server.Inputs.Allow)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}

// The example server configuration loads, with what its comments say.
func TestExampleServerConfigLoads(t *testing.T) {
	cfg, err := LoadServer(filepath.Join("..", "..", "examples", "server", "allot.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ec, err := Engine(cfg.Scheduling)
	if err != nil {
		t.Fatal(err)
	}
	if len(ec.Queues) != 2 || len(cfg.Endpoints) != 2 || len(cfg.Server.Inputs.Allow) != 2 || !cfg.Placement.Elastic.Enabled {
		t.Errorf("queues %d endpoints %d inputs %v elastic %v", len(ec.Queues), len(cfg.Endpoints), cfg.Server.Inputs.Allow, cfg.Placement.Elastic.Enabled)
	}
	want := spec.LimitSettings{MaxConnections: 4000, ReservedConnections: 200, MaxConnectionsPerAddress: 400,
		IdleTimeout: spec.Duration(time.Minute), HeaderTimeout: spec.Duration(10 * time.Second), BodyTimeout: spec.Duration(30 * time.Second),
		MinBodyRate: 4096, WriteTimeout: spec.Duration(30 * time.Second), MaxLiveTasks: 5_000_000, MaxLiveTasksPerSubmitter: 1_000_000}
	if cfg.Server.Limits != want {
		t.Errorf("limits %+v, want %+v", cfg.Server.Limits, want)
	}
}
