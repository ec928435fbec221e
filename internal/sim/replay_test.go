package sim

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/sim/trace"
)

// smallSWF is the loader's test trace (see trace/swf_test.go): five
// records, three of which replay.
func smallSWF(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("trace", "testdata", "small.swf"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSWFReplayConservesWork(t *testing.T) {
	jobs, info, err := trace.LoadSWF(strings.NewReader(smallSWF(t)), trace.SWFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, Input{Workers: workers(4), Jobs: jobs, Start: info.Start}, Options{GroupBy: GroupByShare})
	// 2×30 + 4×20 + 1×5 slot-seconds; job 2 (4 tasks) waits for job 1's
	// two slots until 30s and ends at 50s.
	if res.SlotSeconds != 145 || res.MakespanSeconds != 50 || res.Counts.JobsSucceeded != 3 {
		t.Errorf("slot-s %g, makespan %g, succeeded %d; want 145, 50, 3", res.SlotSeconds, res.MakespanSeconds, res.Counts.JobsSucceeded)
	}
}

// traceFile finds a file of the shared traces: ../shared/traces beside the
// module root, which the test locates from its working directory.
func traceFile(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("module root not found")
		}
		dir = parent
	}
	path := filepath.Join(dir, "..", "shared", "traces", name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("trace %s not available: %v", name, err)
	}
	return path
}

// countRecords counts the non-comment lines of a gzip SWF file and the
// work they describe (Σ processors × run time), independently of LoadSWF.
func countRecords(t testing.TB, path string) (records int, work float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		var n, submit, wait, run, procs float64
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == ';' {
			continue
		}
		records++
		if _, err := fmt.Sscan(line, &n, &submit, &wait, &run, &procs); err != nil {
			t.Fatal(err)
		}
		if run >= 0 && procs > 0 {
			work += run * procs
		}
	}
	return records, work
}

func TestNASATraceReplaysUnderFIFO(t *testing.T) {
	path := traceFile(t, "NASA-iPSC-1993-3.1-cln.swf.gz")
	if testing.Short() {
		t.Skip("replays a three-month trace (about a second)")
	}
	jobs, info, err := trace.LoadSWFFile(path, trace.SWFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	records, work := countRecords(t, path)
	if info.Records != records || info.MaxNodes != 128 || info.MaxProcs != 128 || info.UnixStartTime != 749458803 ||
		info.Jobs+info.Skipped != records || len(jobs) != info.Jobs {
		t.Fatalf("info = %+v; the file has %d records", info, records)
	}
	began := time.Now()
	res, err := Run(Input{Config: fifo(), Workers: workers(128), Jobs: jobs, Start: info.Start}, Options{GroupBy: GroupByShare})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(began)
	t.Logf("NASA: %d jobs, %d tasks, fifo on 128 workers: simulated in %s (%d cycles); makespan %s, utilisation %.1f%%, wait p99 %gs",
		len(jobs), info.Tasks, elapsed, res.Counts.Cycles, time.Duration(res.MakespanSeconds*1e9), 100*res.Utilisation, res.Wait.P99)
	if res.Outcome != "completed" || res.Counts.JobsSucceeded != len(jobs) || res.Counts.Starts != info.Tasks {
		t.Errorf("outcome %s, counts %+v; want every job and task done once", res.Outcome, res.Counts)
	}
	if res.SlotSeconds != work {
		t.Errorf("slot-seconds %f, want the trace's work %f", res.SlotSeconds, work)
	}
	if res.Utilisation <= 0 || res.Utilisation > 1 {
		t.Errorf("utilisation %g out of (0, 1]", res.Utilisation)
	}
	if elapsed > 30*time.Second {
		t.Errorf("replay took %s; it should take a few seconds", elapsed)
	}
}

func BenchmarkNASAFIFO128(b *testing.B) {
	jobs, info, err := trace.LoadSWFFile(traceFile(b, "NASA-iPSC-1993-3.1-cln.swf.gz"), trace.SWFOptions{})
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Config: fifo(), Workers: workers(128), Jobs: jobs, Start: info.Start}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Run(in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestAzureTraceReplays(t *testing.T) {
	path := traceFile(t, "AzureLLMInferenceTrace_code.csv")
	jobs, info, err := trace.LoadAzureLLMFile(path, trace.AzureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		lines++
	}
	if info.Requests != lines-1 || len(jobs) != lines-1 {
		t.Fatalf("%d requests from %d lines", info.Requests, lines)
	}
	res := mustRun(t, Input{Workers: workers(16), Jobs: jobs, Start: info.Start}, Options{})
	if res.Outcome != "completed" || res.Counts.JobsSucceeded != len(jobs) || absDiff(res.SlotSeconds, info.WorkSeconds) > 1e-6 {
		t.Errorf("outcome %s, %d succeeded, slot-s %f; want all %d, slot-s %f",
			res.Outcome, res.Counts.JobsSucceeded, res.SlotSeconds, len(jobs), info.WorkSeconds)
	}
}

func absDiff(a, b float64) float64 {
	if a > b {
		return a - b
	}
	return b - a
}
