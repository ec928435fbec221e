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
	for name, p := range map[string]benchPercentiles{"wait": r.Throughput.Wait, "submit": r.Throughput.Submit, "submit to start": r.Latency.SubmitToStart} {
		if !(0 < p.P50 && p.P50 <= p.P95 && p.P95 <= p.P99 && p.P99 <= p.Max) {
			t.Errorf("%s percentiles out of order: %+v", name, p)
		}
	}
	if !strings.Contains(errb.String(), "310/") && !strings.Contains(errb.String(), "300/300") {
		t.Errorf("no progress on stderr:\n%s", errb.String())
	}
}

// Single-task jobs from many clients, against a backlog of jobs no worker
// runs: every throughput job completes, the backlog stays pending, and
// each submission's time is measured.
func TestBenchSmallJobsAgainstABacklog(t *testing.T) {
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs([]string{"bench", "--tasks", "200", "--job-size", "1", "--submitters", "16", "--backlog", "300", "--slots", "4",
		"--workers", "2", "--latency-jobs", "0", "--data-dir", t.TempDir(), "-o", "json"})
	if err := root.Execute(); err != nil {
		t.Fatalf("allot bench: %v\n%s", err, errb.String())
	}
	var r benchResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out.String())
	}
	if r.Totals["tasks"] != 200 || r.Totals["jobs"] != 200 || r.Totals["backlog"] != 300 {
		t.Errorf("totals %v, want 200 tasks in 200 jobs, and a backlog of 300", r.Totals)
	}
	if r.Throughput.JobsPerSec != r.Throughput.TasksPerSec {
		t.Errorf("jobs of one task: %v jobs/s but %v tasks/s", r.Throughput.JobsPerSec, r.Throughput.TasksPerSec)
	}
	if p := r.Throughput.Submit; !(0 < p.P50 && p.P50 <= p.P99 && p.P99 <= p.Max) {
		t.Errorf("submit percentiles out of order: %+v", p)
	}
	if !strings.Contains(errb.String(), "backlog    300 pending jobs") {
		t.Errorf("no word of the backlog on stderr:\n%s", errb.String())
	}
}

// Jobs sent many to a request: every job of the last, short request too
// completes, and the table says how they were sent.
func TestBenchSubmitsInBulk(t *testing.T) {
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs([]string{"bench", "--tasks", "250", "--job-size", "1", "--submitters", "4", "--bulk", "30", "--slots", "4",
		"--workers", "2", "--latency-jobs", "0", "--data-dir", t.TempDir()})
	if err := root.Execute(); err != nil {
		t.Fatalf("allot bench: %v\n%s", err, errb.String())
	}
	for _, want := range []string{"4 submitters, 30 jobs per bulk request", "totals      250 jobs, 250 tasks"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestBenchRefusesImpossibleSettings(t *testing.T) {
	for _, args := range [][]string{
		{"--tasks", "0"},
		{"--workers", "20", "--slots", "10"},
		{"--job-size", "100001"},
		{"--backlog", "-1"},
		{"--bulk", "0"},
		{"--bulk", "10001"},
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
