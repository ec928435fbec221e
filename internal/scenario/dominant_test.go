package scenario

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/engine/policy"
)

// examples/fairshare-dominant.yaml: under usage: dominant a GPU-heavy and a
// CPU-heavy team end at the same dominant share, up to one task; under
// usage: slots (the seeds' rule) the same file takes turns task for task.
func TestDominantUsageEqualisesAGPUAndACPUTeam(t *testing.T) {
	cases := []struct {
		usage      policy.Usage
		train, etl int
	}{
		{policy.UsageDominant, 7, 57},
		{policy.UsageSlots, 8, 56},
	}
	for _, tc := range cases {
		t.Run(string(tc.usage), func(t *testing.T) {
			s, err := Load(filepath.Join("..", "..", "examples", "fairshare-dominant.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			s.Config.Queues[0].Policy.Usage = string(tc.usage)
			e, err := s.Engine()
			if err != nil {
				t.Fatal(err)
			}
			d := e.Cycle(s.Start)
			got := map[string]int{}
			for _, g := range d.Groups {
				got[g.Group] = g.Starts
			}
			if got["train"] != tc.train || got["etl"] != tc.etl {
				t.Fatalf("starts %v, want train %d, etl %d", got, tc.train, tc.etl)
			}
			// The pool: 32 GPUs, 256 CPUs. A training task holds 4 GPUs
			// (1/8), an ETL task 4 CPUs (1/64).
			train, etl := float64(got["train"])*4/32, float64(got["etl"])*4/256
			if tc.usage == policy.UsageDominant && (train-etl > 1.0/8 || etl-train > 1.0/64) {
				t.Errorf("dominant shares train %.4f, etl %.4f: further apart than one task", train, etl)
			}
		})
	}
}

// A policy that does not measure usage by dominant share (fifo, classload)
// refuses usage:
// dominant at the field, and an unknown usage is refused for every policy.
func TestUsageDominantIsRefusedWhereThePolicyCannotMeasureIt(t *testing.T) {
	cases := []struct{ name, policy, want string }{
		{"fifo", `{kind: fifo, usage: dominant}`, "queues[0].policy.usage"},
		{"classload", `{kind: classload, usage: dominant, classload: {classes: [{name: a, percent: 100}]}}`, "queues[0].policy.usage"},
		{"unknown usage", `{kind: fairshare, usage: cores}`, "queues[0].policy.usage"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := "queues:\n  - name: q\n    policy: " + tc.policy + "\nworkers: [{name: w}]\njobs: [{id: j, tasks: [{name: t}]}]\n"
			_, err := Parse([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error at %s", err, tc.want)
			}
		})
	}
	for _, pol := range []string{`{kind: fairshare, usage: slots}`, `{kind: fairshare, usage: dominant}`, `{kind: priority, usage: dominant}`,
		`{kind: sla, usage: dominant, sla: {groups: [{name: a, value: 1}]}}`} {
		doc := "queues:\n  - name: q\n    policy: " + pol + "\nworkers: [{name: w}]\njobs: [{id: j, slaGroup: a, tasks: [{name: t}]}]\n"
		if _, err := Parse([]byte(doc)); err != nil {
			t.Errorf("%s: %v", pol, err)
		}
	}
}
