package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// With --exec the tasks are real processes run by real agents: every one
// of them leaves its mark, and the agents say where the time went.
func TestBenchExecRunsEveryTaskAsAProcessOnRealAgents(t *testing.T) {
	dir := t.TempDir()
	marks := filepath.Join(dir, "marks")
	if err := os.Mkdir(marks, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "mark.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n: > \""+marks+"/$ALLOT_JOB.$ALLOT_TASK\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs([]string{"bench", "--exec", script, "--tasks", "200", "--job-size", "50", "--slots", "4", "--workers", "2",
		"--latency-jobs", "5", "--latency-every", "2ms", "--data-dir", filepath.Join(dir, "data"), "-o", "json"})
	if err := root.Execute(); err != nil {
		t.Fatalf("allot bench --exec: %v\n%s", err, errb.String())
	}
	var r benchResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out.String())
	}
	if r.Totals["tasks"] != 205 {
		t.Errorf("totals %v, want 205 tasks", r.Totals)
	}
	ran, err := os.ReadDir(marks)
	if err != nil {
		t.Fatal(err)
	}
	if len(ran) != 205 {
		t.Errorf("%d tasks left their mark, want 205", len(ran))
	}
	a := r.Agents
	if a == nil {
		t.Fatalf("no agent figures: %s", out.String())
	}
	if a.Agents != 2 || a.RunMs <= 0 || a.DeliverMs <= 0 || a.SlotBusy <= 0 || a.SlotBusy > 1 || a.SlotRunning > a.SlotBusy ||
		a.ReportsPerRequest < 1 || a.LeaseRequests < 1 {
		t.Errorf("agent figures %+v", *a)
	}
	if p := r.Latency.SubmitToStart; !(0 < p.P50 && p.P50 <= p.Max) {
		t.Errorf("submit to start %+v", p)
	}
}
