package trace

import (
	"bytes"
	"compress/gzip"
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
var smallSWF = func() string {
	b, err := os.ReadFile(filepath.Join("testdata", "small.swf"))
	if err != nil {
		panic(err)
	}
	return string(b)
}()

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
