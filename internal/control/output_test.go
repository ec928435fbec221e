package control

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// An attempt asked for without a task (allot logs JOB --attempt N) shows
// that attempt of every task that had one: a task that has run fewer
// attempts (or none yet) is left out, not an error for the whole job. A
// task named that has not had that attempt is not found, and so is an
// attempt no task had.
func TestLogsOfAnAttemptLeaveOutTheTasksThatDidNotHaveIt(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "first", Run: "true"}, {Name: "second", Run: "true", Needs: []string{"first"}}}})
	a := p.leaseUntil("w1", "first", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0]
	if err := p.c.AppendOutput(p.ctx(), "w1", []api.OutputChunk{{Attempt: a.Attempt, Secret: a.Secret, Data: []byte("hello\n")}}); err != nil {
		t.Fatal(err)
	}
	logs, err := p.c.Logs(p.ctx(), "j", api.LogQuery{Attempt: 1})
	if err != nil {
		t.Fatalf("logs --attempt 1 of the job: %v", err)
	}
	if len(logs.Tasks) != 1 || logs.Tasks[0].Task != "first" || logs.Tasks[0].Output != "hello\n" || !logs.Tasks[0].Running {
		t.Errorf("logs --attempt 1 of the job: %+v, want the first task's running attempt", logs.Tasks)
	}
	if _, err := p.c.Logs(p.ctx(), "j", api.LogQuery{Attempt: 2}); !isNotFound(err) {
		t.Errorf("logs --attempt 2 of a job whose tasks had at most 1: %v, want not found", err)
	}
	if _, err := p.c.Logs(p.ctx(), "j", api.LogQuery{Task: "second", Attempt: 1}); !isNotFound(err) {
		t.Errorf("logs --attempt 1 of a task that never ran: %v, want not found", err)
	}
	if _, err := p.c.Logs(p.ctx(), "j", api.LogQuery{Task: "first", Attempt: 2}); !isNotFound(err) {
		t.Errorf("logs --attempt 2 of a task that had 1: %v, want not found", err)
	}
}

// A task requeued while it ran waits (its job is held) with its stopped
// attempt still its current one: allot logs shows how that attempt
// exited, from the record its report completed.
func TestLogsOfAStoppedAttemptThatIsStillCurrentShowItsExitCode(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "long", Run: "sleep 100"}}})
	a := p.leaseUntil("w1", "attempt 1", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0]
	if _, err := p.c.Hold(p.ctx(), "j", "ann"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.Requeue(p.ctx(), "j", "long"); err != nil {
		t.Fatal(err)
	}
	p.leaseUntil("w1", "the stop order", func(l api.Lease) bool { return len(l.Stops) == 1 })
	if err := p.report("w1", api.Report{Attempt: a.Attempt, ExitCode: 143, Stopped: true, Output: "bye\n"}); err != nil {
		t.Fatal(err)
	}
	if tk := p.task("j", "long"); tk.State != "ready" || tk.Attempt != 1 {
		t.Fatalf("task %+v, want attempt 1 waiting", tk)
	}
	logs, err := p.c.Logs(p.ctx(), "j", api.LogQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if tl := logs.Tasks[0]; tl.Attempt != 1 || tl.Running || tl.ExitCode == nil || *tl.ExitCode != 143 {
		t.Errorf("logs: %+v, want attempt 1 ended with exit code 143", tl)
	}
}

// A request with a chunk at an impossible offset (negative, or so far
// that its end passes store.MaxOutputEnd) is refused whole, naming the
// chunk's offset in the caller's words, not the store's: none of its
// chunks is stored, and what was stored before stays.
func TestOutputChunksAtAnImpossibleOffsetAreRefusedWhole(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	a := p.leaseUntil("w1", "t", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0]
	chunk := func(off int64) api.OutputChunk {
		return api.OutputChunk{Attempt: a.Attempt, Secret: a.Secret, Offset: off, Data: []byte("hello\n")}
	}
	if err := p.c.AppendOutput(p.ctx(), "w1", []api.OutputChunk{chunk(0)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		chunks []api.OutputChunk
		field  string
	}{
		{[]api.OutputChunk{chunk(-5)}, "chunks[0].offset"},
		{[]api.OutputChunk{chunk(6), chunk(math.MaxInt64 - 1)}, "chunks[1].offset"},
		{[]api.OutputChunk{chunk(store.MaxOutputEnd - 1)}, "chunks[0].offset"},
	} {
		err := p.c.AppendOutput(p.ctx(), "w1", tc.chunks)
		var list model.FieldErrors
		if !errors.As(err, &list) || list[0].Path != tc.field {
			t.Errorf("chunks at %d..: %v, want an error naming %s", tc.chunks[0].Offset, err, tc.field)
		}
		if err != nil && strings.Contains(err.Error(), "sqlite") {
			t.Errorf("the error tells of the store: %v", err)
		}
	}
	logs, err := p.c.Logs(p.ctx(), "j", api.LogQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if tl := logs.Tasks[0]; tl.Output != "hello\n" || tl.Total != 6 {
		t.Errorf("logs: %+v, want hello\\n of 6 bytes", tl)
	}
}
