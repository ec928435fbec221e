package sim

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// smallSWF has a header with continuation lines and five records: a normal
// one, one with an unknown allocation (falls back to requested processors),
// one with a negative run time and one with no processor count (both
// skipped), and one in the other queue.
const smallSWF = `; Version: 2.2
; Computer: Test Machine
; MaxJobs: 5
; MaxNodes: 8
; MaxProcs: 16
; UnixStartTime: 1000000000
; Note: submit times are
;       actually start times
; Queue:  0  interactive
; Queue:  1  batch
; Acknowledge: someone
;
    1    0  -1  30   2  -1 -1   2  -1 -1  1  3  1  7  0 -1 -1 -1
    2   10  -1  20  -1  -1 -1   4  -1 -1  1  5  2  7  1 -1 -1 -1
    3   12  -1  -1   2  -1 -1   2  -1 -1  0  3  1  7  1 -1 -1 -1
    4   15  -1  10  -1  -1 -1  -1  -1 -1  5  3  1  7  1 -1 -1 -1
    5   20  -1   5   1  -1 -1   1  -1 -1  1  -1 1  8  -1 -1 -1 -1
`

func TestLoadSWFReadsHeaderAndRecords(t *testing.T) {
	jobs, info, err := LoadSWF(strings.NewReader(smallSWF), SWFOptions{QueueField: "queue", ClassField: "executable"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1000000000, 0).UTC()
	wantInfo := SWFInfo{Version: "2.2", Computer: "Test Machine", MaxJobs: 5, MaxNodes: 8, MaxProcs: 16,
		UnixStartTime: 1000000000, Queues: []string{"0 interactive", "1 batch"},
		Notes: []string{"submit times are actually start times"}, Other: map[string]string{"Acknowledge": "someone"},
		Start: start, Records: 5, Jobs: 3, Tasks: 7, Skipped: 2}
	if !reflect.DeepEqual(info, wantInfo) {
		t.Errorf("info = %+v\nwant   %+v", info, wantInfo)
	}
	type row struct {
		ID, Queue, Share, Requestor string
		At                          time.Duration
		Tasks                       int
		Dur                         time.Duration
	}
	var got []row
	for _, j := range jobs {
		got = append(got, row{j.ID, j.Queue, j.Share, j.Requestor, j.Submitted.Sub(start), len(j.Tasks), j.Tasks[0].Duration})
	}
	want := []row{
		{"1", "q0", "u3", "e7", 0, 2, 30 * time.Second},
		{"2", "q1", "u5", "e7", 10 * time.Second, 4, 20 * time.Second}, // requested processors
		{"5", "default", "u?", "e8", 20 * time.Second, 1, 5 * time.Second},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("jobs = %+v\nwant   %+v", got, want)
	}
	if names := []string{jobs[1].Tasks[0].Name, jobs[1].Tasks[3].Name}; names[0] != "p0" || names[1] != "p3" {
		t.Errorf("task names = %v, want p0 … p3", names)
	}
}

func TestLoadSWFOptions(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		opt   SWFOptions
		check func(t *testing.T, jobs []model.Job, info SWFInfo)
	}{
		{"default: share by user, one queue", SWFOptions{}, func(t *testing.T, jobs []model.Job, _ SWFInfo) {
			if j := jobs[1]; j.Share != "u5" || j.Requestor != "" || j.Queue != "default" {
				t.Errorf("job = %+v", j)
			}
		}},
		{"share by group, named queue", SWFOptions{ShareField: "group", Queue: "batch"}, func(t *testing.T, jobs []model.Job, _ SWFInfo) {
			if j := jobs[1]; j.Share != "g2" || j.Queue != "batch" {
				t.Errorf("job = %+v", j)
			}
		}},
		{"no share", SWFOptions{ShareField: "none"}, func(t *testing.T, jobs []model.Job, _ SWFInfo) {
			if jobs[0].Share != "" {
				t.Errorf("share = %q", jobs[0].Share)
			}
		}},
		{"limit counts kept jobs", SWFOptions{Limit: 2}, func(t *testing.T, jobs []model.Job, info SWFInfo) {
			if len(jobs) != 2 || info.Jobs != 2 || jobs[1].ID != "2" {
				t.Errorf("%d jobs, info %+v", len(jobs), info)
			}
		}},
		{"start overrides the header", SWFOptions{Start: at}, func(t *testing.T, jobs []model.Job, info SWFInfo) {
			if !info.Start.Equal(at) || !jobs[1].Submitted.Equal(at.Add(10*time.Second)) {
				t.Errorf("start %s, job 2 at %s", info.Start, jobs[1].Submitted)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jobs, info, err := LoadSWF(strings.NewReader(smallSWF), tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, jobs, info)
		})
	}
}

func TestLoadSWFDetectsGzipByContent(t *testing.T) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(smallSWF))
	zw.Close()
	plain, pinfo, err := LoadSWF(strings.NewReader(smallSWF), SWFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zipped, zinfo, err := LoadSWF(&z, SWFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plain, zipped) || !reflect.DeepEqual(pinfo, zinfo) {
		t.Error("gzip input loads differently from the same text")
	}
}

func TestLoadSWFErrors(t *testing.T) {
	tests := []struct {
		name, text string
		opt        SWFOptions
		want       string
	}{
		{"short record", "1 0 -1 30 2\n", SWFOptions{}, "line 1: 5 fields"},
		{"not a number", "; c\n1 0 -1 thirty 2 -1 -1 2 -1 -1 1 3 1 7 0 -1 -1 -1\n", SWFOptions{}, `line 2 field 4: "thirty"`},
		{"unknown field name", "", SWFOptions{ShareField: "colour"}, `shareField: unknown field "colour"`},
		{"negative limit", "", SWFOptions{Limit: -1}, "limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := LoadSWF(strings.NewReader(tc.text), tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestSWFReplayConservesWork(t *testing.T) {
	jobs, info, err := LoadSWF(strings.NewReader(smallSWF), SWFOptions{})
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
	jobs, info, err := LoadSWFFile(path, SWFOptions{})
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
	jobs, info, err := LoadSWFFile(traceFile(b, "NASA-iPSC-1993-3.1-cln.swf.gz"), SWFOptions{})
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
