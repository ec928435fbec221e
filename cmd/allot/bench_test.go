package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestBenchRunsBothPhasesAndReportsConsistentFigures(t *testing.T) {
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs([]string{"bench", "--tasks", "300", "--job-size", "70", "--slots", "6", "--workers", "3",
		"--latency-jobs", "10", "--latency-every", "2ms", "--data-dir", t.TempDir(), "-o", "json"})
	if err := root.Execute(); err != nil {
		t.Fatalf("allot bench: %v\n%s", err, errb.String())
	}
	var r benchResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out.String())
	}
	if r.Totals["tasks"] != 310 || r.Totals["jobs"] != 5+10 {
		t.Errorf("totals %v, want 310 tasks in 15 jobs (300 in jobs of 70, then 10)", r.Totals)
	}
	if r.Throughput.TasksPerSec <= 0 || r.Throughput.Seconds <= 0 || r.Throughput.SubmitSeconds > r.Throughput.Seconds {
		t.Errorf("throughput %+v", r.Throughput)
	}
	for name, p := range map[string]benchPercentiles{"wait": r.Throughput.Wait, "submit to start": r.Latency.SubmitToStart} {
		if !(0 < p.P50 && p.P50 <= p.P95 && p.P95 <= p.P99 && p.P99 <= p.Max) {
			t.Errorf("%s percentiles out of order: %+v", name, p)
		}
	}
	if !strings.Contains(errb.String(), "310/") && !strings.Contains(errb.String(), "300/300") {
		t.Errorf("no progress on stderr:\n%s", errb.String())
	}
}

func TestBenchRefusesImpossibleSettings(t *testing.T) {
	for _, args := range [][]string{
		{"--tasks", "0"},
		{"--workers", "20", "--slots", "10"},
		{"--job-size", "100001"},
		{"-o", "yaml"},
	} {
		root := newRoot()
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		root.SetArgs(append([]string{"bench"}, args...))
		if err := root.Execute(); err == nil {
			t.Errorf("allot bench %v succeeded", args)
		}
	}
}
