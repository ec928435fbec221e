package control

import (
	"errors"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// A cancelled attempt keeps what it printed and how it exited, as a
// timed-out one does: the worker's report of the stopped process arrives
// after the job ended, and is its output all the same.
func TestCancelledAttemptKeepsItsOutputAndExitCode(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 2)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "long", Run: "sleep 100"}, {Name: "other", Run: "sleep 100"}}})
	l := p.leaseUntil("w1", "two assignments", func(l api.Lease) bool { return len(l.Assignments) == 2 })
	long, _ := attemptOf(l.Assignments, "long")
	other, _ := attemptOf(l.Assignments, "other")
	if _, err := p.c.Cancel(p.ctx(), "j"); err != nil {
		t.Fatal(err)
	}
	p.leaseUntil("w1", "two stop orders", func(l api.Lease) bool { return len(l.Stops) == 2 })

	// A report without the attempt's secret is refused and changes nothing.
	forged := api.Report{Attempt: other, ExitCode: 0, Stopped: true, Output: "forged\n", Secret: "not-the-secret"}
	if err := p.report("w1", forged); !errors.Is(err, ErrForbidden) {
		t.Fatalf("report without the secret: %v, want forbidden", err)
	}
	if err := p.report("w1", api.Report{Attempt: long, ExitCode: 143, Stopped: true, Error: "stopped by the server", Output: "step 1\nstep 2\n"}); err != nil {
		t.Fatal(err)
	}
	// A second report of the same attempt (a resend) changes nothing.
	if err := p.report("w1", api.Report{Attempt: long, ExitCode: 0, Stopped: true, Output: "again\n"}); err != nil {
		t.Fatal(err)
	}
	logs, err := p.c.Logs(p.ctx(), "j", api.LogQuery{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]api.TaskLog{}
	for _, tl := range logs.Tasks {
		got[tl.Task] = tl
	}
	if tl := got["long"]; tl.Output != "step 1\nstep 2\n" || tl.ExitCode == nil || *tl.ExitCode != 143 {
		t.Errorf("logs of the cancelled attempt: %+v, want its output and exit code 143", tl)
	}
	if tl := got["other"]; tl.Output != "" || tl.ExitCode != nil {
		t.Errorf("logs of the attempt not reported yet: %+v, want none", tl)
	}
	if tk := p.task("j", "long"); tk.State != "cancelled" || tk.ExitCode == nil || *tk.ExitCode != 143 {
		t.Errorf("task %+v, want cancelled with exit code 143", tk)
	}
}

// The output a cancelled attempt streams after the cancel (what it prints
// on SIGTERM, the rest of its buffer) is kept with what it streamed
// before, though its job ended and the loop forgot it: allot logs shows
// the whole output, not the chunks up to the cancel.
func TestCancelledAttemptKeepsTheOutputItStreamsAfterTheCancel(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "long", Run: "sleep 100"}}})
	l := p.leaseUntil("w1", "the assignment", func(l api.Lease) bool { return len(l.Assignments) == 1 })
	a := l.Assignments[0]
	chunk := func(off int64, data string) api.OutputChunk {
		return api.OutputChunk{Attempt: a.Attempt, Secret: a.Secret, Offset: off, Data: []byte(data)}
	}
	if err := p.c.AppendOutput(p.ctx(), "w1", []api.OutputChunk{chunk(0, "step 1\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.Cancel(p.ctx(), "j"); err != nil {
		t.Fatal(err)
	}
	p.leaseUntil("w1", "the stop order", func(l api.Lease) bool { return len(l.Stops) == 1 })

	// A chunk without the attempt's secret is still refused.
	forged := chunk(7, "forged\n")
	forged.Secret = "not-the-secret"
	if err := p.c.AppendOutput(p.ctx(), "w1", []api.OutputChunk{forged}); !errors.Is(err, ErrForbidden) {
		t.Fatalf("chunk without the secret after the cancel: %v, want forbidden", err)
	}
	if err := p.c.AppendOutput(p.ctx(), "w1", []api.OutputChunk{chunk(7, "terminated\n")}); err != nil {
		t.Fatal(err)
	}
	if err := p.report("w1", api.Report{Attempt: a.Attempt, ExitCode: 143, Stopped: true, Output: "step 1\nterminated\n"}); err != nil {
		t.Fatal(err)
	}
	// Once the report is in, the attempt owes nothing more: a late chunk
	// is dropped.
	if err := p.c.AppendOutput(p.ctx(), "w1", []api.OutputChunk{chunk(18, "late\n")}); err != nil {
		t.Fatal(err)
	}
	logs, err := p.c.Logs(p.ctx(), "j", api.LogQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(logs.Tasks) != 1 {
		t.Fatalf("logs %+v, want one task", logs)
	}
	if tl := logs.Tasks[0]; tl.Output != "step 1\nterminated\n" || tl.ExitCode == nil || *tl.ExitCode != 143 || tl.Running {
		t.Errorf("logs of the cancelled attempt: %+v, want both chunks and exit code 143", tl)
	}
}

// The accounting record of a cancelled attempt, written when the cancel
// ended it, gets the exit code and the usage its worker's report brings
// later: allot get, allot usage and allot logs --attempt of an earlier
// attempt (once the task was requeued) read them there.
func TestCancelledAttemptsRecordGetsTheExitCodeAndUsageOfItsReport(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "long", Run: "sleep 100"}}})
	a := p.leaseUntil("w1", "the assignment", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0]
	if _, err := p.c.Cancel(p.ctx(), "j"); err != nil {
		t.Fatal(err)
	}
	p.leaseUntil("w1", "the stop order", func(l api.Lease) bool { return len(l.Stops) == 1 })
	if err := p.report("w1", api.Report{Attempt: a.Attempt, ExitCode: 143, Stopped: true, CPUSeconds: 2.5, PeakMemory: 4096}); err != nil {
		t.Fatal(err)
	}
	recs, err := p.st.Attempts(p.ctx(), store.AttemptFilter{Job: "j"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].ExitCode == nil || *recs[0].ExitCode != 143 || recs[0].CPUSeconds != 2.5 || recs[0].PeakMemory != 4096 ||
		recs[0].Worker != "w1" || recs[0].Attempt != 1 {
		t.Fatalf("records %+v, want attempt 1 with exit code 143, 2.5 CPU seconds and 4096 bytes", recs)
	}

	// Requeued, the task runs attempt 2; attempt 1 keeps its exit code.
	if _, err := p.c.Requeue(p.ctx(), "j", ""); err != nil {
		t.Fatal(err)
	}
	b := p.leaseUntil("w1", "attempt 2", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0]
	if b.Attempt.Attempt != 2 {
		t.Fatalf("after the requeue: %+v, want attempt 2", b.Attempt)
	}
	logs, err := p.c.Logs(p.ctx(), "j", api.LogQuery{Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(logs.Tasks) != 1 || logs.Tasks[0].ExitCode == nil || *logs.Tasks[0].ExitCode != 143 {
		t.Errorf("logs --attempt 1: %+v, want exit code 143", logs.Tasks)
	}
}

// A running task that is requeued is stopped and runs again as a new
// attempt. The stopped attempt's report, which comes after its stop order
// (and possibly after the next attempt started), completes its accounting
// record, and what it streams meanwhile is kept: allot logs --attempt 1
// shows its whole output and how it exited.
func TestRequeuedRunningAttemptKeepsItsOutputExitCodeAndUsage(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 2)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "long", Run: "sleep 100"}}})
	a := p.leaseUntil("w1", "attempt 1", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0]
	chunk := func(as api.Assignment, off int64, data string) api.OutputChunk {
		return api.OutputChunk{Attempt: as.Attempt, Secret: as.Secret, Offset: off, Data: []byte(data)}
	}
	if err := p.c.AppendOutput(p.ctx(), "w1", []api.OutputChunk{chunk(a, 0, "step 1\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.Requeue(p.ctx(), "j", "long"); err != nil {
		t.Fatal(err)
	}
	// The stop order, and attempt 2 on the second slot, before the worker
	// reports attempt 1.
	l := p.leaseUntil("w1", "the stop and attempt 2", func(l api.Lease) bool { return len(l.Stops) == 1 && len(l.Assignments) == 1 })
	b := l.Assignments[0]
	if b.Attempt.Attempt != 2 {
		t.Fatalf("after the requeue: %+v, want attempt 2", b.Attempt)
	}
	forged := chunk(a, 7, "forged\n")
	forged.Secret = "not-the-secret"
	if err := p.c.AppendOutput(p.ctx(), "w1", []api.OutputChunk{forged}); !errors.Is(err, ErrForbidden) {
		t.Fatalf("a chunk of attempt 1 without its secret: %v, want forbidden", err)
	}
	if err := p.c.AppendOutput(p.ctx(), "w1", []api.OutputChunk{chunk(a, 7, "terminated\n"), chunk(b, 0, "again\n")}); err != nil {
		t.Fatal(err)
	}
	if err := p.report("w1", api.Report{Attempt: a.Attempt, ExitCode: 143, Stopped: true, Error: "stopped by the server",
		Output: "step 1\nterminated\n", CPUSeconds: 0.5, PeakMemory: 2048}); err != nil {
		t.Fatal(err)
	}
	if tk := p.task("j", "long"); tk.State != "running" || tk.Attempt != 2 || tk.ExitCode != nil {
		t.Errorf("task %+v, want attempt 2 running, untouched by attempt 1's report", tk)
	}
	recs, err := p.st.Attempts(p.ctx(), store.AttemptFilter{Job: "j"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Attempt != 1 || recs[0].ExitCode == nil || *recs[0].ExitCode != 143 || recs[0].CPUSeconds != 0.5 || recs[0].PeakMemory != 2048 {
		t.Errorf("records %+v, want attempt 1 with exit code 143, 0.5 CPU seconds and 2048 bytes", recs)
	}
	for _, tc := range []struct {
		attempt int
		output  string
		exit    *int
	}{{1, "step 1\nterminated\n", ptr(143)}, {2, "again\n", nil}} {
		logs, err := p.c.Logs(p.ctx(), "j", api.LogQuery{Attempt: tc.attempt})
		if err != nil {
			t.Fatal(err)
		}
		tl := logs.Tasks[0]
		if tl.Output != tc.output || (tl.ExitCode == nil) != (tc.exit == nil) || (tc.exit != nil && *tl.ExitCode != *tc.exit) {
			t.Errorf("logs --attempt %d: %+v, want output %q and exit code %v", tc.attempt, tl, tc.output, tc.exit)
		}
	}
}
