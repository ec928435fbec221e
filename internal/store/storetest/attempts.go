package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/store"
)

// testJobsFilterBySubmitter: JobFilter.Submitter keeps the jobs that
// token name submitted, with the other filters.
func testJobsFilterBySubmitter(t *testing.T, o opener) {
	s := o.store(t)
	for i, who := range []string{"ann", "bob", "ann", "", "ann"} {
		j := newJob(fmt.Sprintf("j%d", i), "q", "")
		j.Submitter = who
		mustCreate(t, s, j, nil)
	}
	for _, tc := range []struct {
		f    store.JobFilter
		want []string
	}{
		{store.JobFilter{Submitter: "ann"}, []string{"j0", "j2", "j4"}},
		{store.JobFilter{Submitter: "ann", Newest: true, Limit: 2}, []string{"j4", "j2"}},
		{store.JobFilter{Submitter: "bob"}, []string{"j1"}},
		{store.JobFilter{Submitter: "carl"}, nil},
	} {
		jobs, err := s.Jobs(t.Context(), tc.f)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, j := range jobs {
			got = append(got, j.ID)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Jobs(%+v) = %v, want %v", tc.f, got, tc.want)
		}
	}
}

// testAttemptsRoundTripAndFilter: attempt records are upserted by job,
// task and attempt, read back exactly, ordered by end, and selected by
// the period they overlap.
func testAttemptsRoundTripAndFilter(t *testing.T, o opener) {
	s := o.store(t)
	exit0, exit1 := 0, 1
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	recs := []store.Attempt{
		{Job: "j1", Task: "a", Attempt: 1, Worker: "w1", Queue: "q", Share: "x", Submitter: "ann",
			Started: at(0), Ended: at(2), ExitCode: &exit1, GPUs: 2, CPUSeconds: 1.25, PeakMemory: 1 << 30},
		{Job: "j1", Task: "a", Attempt: 2, Worker: "w2", Queue: "q", Share: "x", Submitter: "ann",
			Started: at(2), Ended: at(3)},
		{Job: "j2", Task: "b", Attempt: 1, Worker: "w1", Queue: "q2", Share: "y", Submitter: "bob",
			Started: at(5), Ended: at(6), ExitCode: &exit0, CPUSeconds: 0.5},
	}
	// The job of an attempt need not be stored; a record written twice
	// keeps the later values.
	early := recs[0]
	early.Ended, early.ExitCode = time.Time{}, nil
	mustCommit(t, s, store.Batch{Attempts: []store.Attempt{early, recs[2]}})
	mustCommit(t, s, store.Batch{Attempts: recs[:2]})

	for _, tc := range []struct {
		name string
		f    store.AttemptFilter
		want []store.Attempt
	}{
		{"All", store.AttemptFilter{}, recs},
		{"OneJob", store.AttemptFilter{Job: "j2"}, recs[2:]},
		{"Overlapping", store.AttemptFilter{EndedAfter: at(2), StartedBefore: at(5)}, recs[1:2]},
		{"EndedAfter", store.AttemptFilter{EndedAfter: at(3)}, recs[2:]},
		{"StartedBefore", store.AttemptFilter{StartedBefore: at(1)}, recs[:1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Attempts(t.Context(), tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Attempts(%+v) =\n%+v\nwant\n%+v", tc.f, got, tc.want)
			}
		})
	}
	err := s.Commit(t.Context(), store.Batch{Attempts: []store.Attempt{{Job: "j", Task: "t"}}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("an attempt numbered 0: %v, want ErrInvalid", err)
	}

	// A large batch, with a record named twice: the later wins.
	var many []store.Attempt
	for i := range 75 {
		many = append(many, store.Attempt{Job: "big", Task: fmt.Sprintf("t%02d", i), Attempt: 1, Queue: "q",
			Started: at(10), Ended: at(11), CPUSeconds: float64(i)})
	}
	again := many[3]
	again.CPUSeconds = 99
	mustCommit(t, s, store.Batch{Attempts: append(many, again)})
	got, err := s.Attempts(t.Context(), store.AttemptFilter{Job: "big"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 75 || got[3].Task != "t03" || got[3].CPUSeconds != 99 || got[74].CPUSeconds != 74 {
		t.Errorf("a batch of 76 records (one twice): %d read back, t03 %+v", len(got), got[3])
	}
}

// testOutputAppendKeepsTheTail: chunks append in order, a chunk sent again
// is stored once, the oldest whole chunks go past the limit, and a read
// from an offset returns only what follows it.
func testOutputAppendKeepsTheTail(t *testing.T, o opener) {
	s := o.store(t)
	ctx := t.Context()
	if _, err := s.Output(ctx, "j", "t", 1, 0, 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("output of an attempt with none: %v, want ErrNotFound", err)
	}
	app := func(off int64, data string, limit int64) {
		t.Helper()
		if err := s.AppendOutput(ctx, store.OutputChunk{Job: "j", Task: "t", Attempt: 1, Offset: off, Data: []byte(data)}, limit); err != nil {
			t.Fatal(err)
		}
	}
	read := func(limit, from int64) store.Output {
		t.Helper()
		out, err := s.Output(ctx, "j", "t", 1, limit, from)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	app(0, "hello ", 0)
	app(6, "world\n", 0)
	app(0, "hello world\n", 0) // sent again: nothing new
	app(6, "world\nbye\n", 0)  // partly new
	if out := read(0, 0); string(out.Data) != "hello world\nbye\n" || out.Total != 16 || out.Start != 0 || out.Dropped() != 0 {
		t.Fatalf("output = %+v (%q)", out, out.Data)
	}
	if out := read(0, 12); string(out.Data) != "bye\n" || out.Start != 12 || out.Total != 16 {
		t.Errorf("from 12: %+v (%q)", out, out.Data)
	}
	if out := read(0, 16); len(out.Data) != 0 || out.Total != 16 {
		t.Errorf("from the end: %+v (%q)", out, out.Data)
	}
	if out := read(5, 0); string(out.Data) != "\nbye\n" || out.Start != 11 || out.Dropped() != 11 {
		t.Errorf("last 5 bytes: %+v (%q)", out, out.Data)
	}
	// Another attempt is another output.
	if err := s.AppendOutput(ctx, store.OutputChunk{Job: "j", Task: "t", Attempt: 2, Data: []byte("two")}, 0); err != nil {
		t.Fatal(err)
	}
	// Over the limit: whole old chunks go, the tail stays.
	big := strings.Repeat("x", 100)
	for i := range 10 {
		app(16+int64(i*100), big, 250)
	}
	out := read(250, 0)
	if out.Total != 1016 || len(out.Data) != 250 || out.Start != 766 || !bytes.Equal(out.Data, []byte(strings.Repeat("x", 250))) {
		t.Errorf("over the limit: total %d start %d len %d", out.Total, out.Start, len(out.Data))
	}
	if two, err := s.Output(ctx, "j", "t", 2, 0, 0); err != nil || string(two.Data) != "two" {
		t.Errorf("attempt 2: %+v %v", two, err)
	}
	// A gap (output the worker dropped) counts as dropped.
	app(2000, "end", 0)
	if out := read(0, 0); string(out.Data) != "end" || out.Total != 2003 || out.Start != 2000 {
		t.Errorf("after a gap: %+v (%q)", out, out.Data)
	}
	err := s.AppendOutput(ctx, store.OutputChunk{Job: "j", Task: "t", Attempt: 0}, 0)
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("attempt 0: %v, want ErrInvalid", err)
	}
}

// testOutputOffsetsOutOfRangeAreRefused: a chunk whose offset is negative
// or whose end lies past store.MaxOutputEnd (so close to the largest int64
// that offset plus length overflows, at worst) is refused with ErrInvalid,
// and what is stored of the output stays as it was.
func testOutputOffsetsOutOfRangeAreRefused(t *testing.T, o opener) {
	s := o.store(t)
	ctx := t.Context()
	if err := s.AppendOutput(ctx, store.OutputChunk{Job: "j", Task: "t", Attempt: 1, Data: []byte("hello\n")}, 1<<20); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{-5, math.MaxInt64 - 1, math.MaxInt64 - 5, store.MaxOutputEnd - 5, store.MaxOutputEnd} {
		err := s.AppendOutput(ctx, store.OutputChunk{Job: "j", Task: "t", Attempt: 1, Offset: off, Data: []byte("hello\n")}, 1<<20)
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("a chunk at offset %d: %v, want ErrInvalid", off, err)
		}
	}
	out, err := s.Output(ctx, "j", "t", 1, 1<<20, 0)
	if err != nil || string(out.Data) != "hello\n" || out.Total != 6 || out.Start != 0 {
		t.Errorf("after the refused chunks: %+v (%q) %v, want hello\\n of 6 bytes", out, out.Data, err)
	}
	// The last byte an output may have is stored.
	if err := s.AppendOutput(ctx, store.OutputChunk{Job: "j", Task: "t", Attempt: 2, Offset: store.MaxOutputEnd - 6, Data: []byte("hello\n")}, 1<<20); err != nil {
		t.Errorf("a chunk that ends at MaxOutputEnd: %v", err)
	}
}
