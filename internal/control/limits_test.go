package control

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
)

// TestWhatWorkersReportIsBoundedBeforeItIsStored: a worker's report is
// stored with the task (its output tail, error and result) and a result is
// substituted into later tasks. An output beyond the limit keeps its end,
// an error message its start; a result beyond the limit fails the attempt
// with a reason instead of being stored. The report is not refused: the
// agent would drop the whole batch and the attempts would never end.
func TestWhatWorkersReportIsBoundedBeforeItIsStored(t *testing.T) {
	p := newPlane(t)
	p.register("w", 4)
	p.submit(spec.Job{ID: "j", Queue: "batch", Tasks: []spec.Task{
		{Name: "out", Run: "x"}, {Name: "err", Run: "x"}, {Name: "res", Run: "x", MaxAttempts: 1}}})
	l := p.leaseUntil("w", "three assignments", func(l api.Lease) bool { return len(l.Assignments) == 3 })
	get := func(task string) api.Attempt {
		a, _ := attemptOf(l.Assignments, task)
		return a
	}
	output := strings.Repeat("a", MaxOutputBytes) + "the end"
	big, _ := json.Marshal(map[string]string{"v": strings.Repeat("r", spec.MaxResultBytes)})
	if err := p.report("w",
		api.Report{Attempt: get("out"), Output: output},
		api.Report{Attempt: get("err"), ExitCode: 1, Error: strings.Repeat("e", MaxReportErrorBytes*2)},
		api.Report{Attempt: get("res"), Result: big},
	); err != nil {
		t.Fatal(err)
	}
	logs, err := p.c.Logs(p.ctx(), "j", api.LogQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range logs.Tasks {
		if tl.Task == "out" && (len(tl.Output) > MaxOutputBytes || !strings.HasSuffix(tl.Output, "the end")) {
			t.Errorf("output stored as %d bytes ending %q; want at most %d keeping the end", len(tl.Output), tl.Output[max(0, len(tl.Output)-10):], MaxOutputBytes)
		}
	}
	// The engine prefixes the attempt ("attempt 1 of 1 failed: ").
	if r := p.task("j", "err").Reason; r == nil || len(r.Message) > MaxReportErrorBytes+100 {
		t.Errorf("error stored as %d bytes; want about %d", len(r.Message), MaxReportErrorBytes)
	}
	res := p.task("j", "res")
	if res.State != "failed" || res.Result != nil || res.Reason == nil || !strings.Contains(res.Reason.Message, "result") {
		t.Errorf("a result beyond the limit: %+v; want the attempt failed saying why, nothing stored", res)
	}
}

// TestSubmittingALongChainIsAccepted goes through everything a submission
// does (checks, the engine, the store) with a chain of 10,000 tasks, each
// referencing the first one's result. How long that takes is measured by
// BenchmarkValidateDAG and BenchmarkSubmitDAG (docs/performance.md), not
// here: this checks that such a job is accepted whole.
func TestSubmittingALongChainIsAccepted(t *testing.T) {
	p := newPlane(t)
	js := spec.Job{ID: "chain", Queue: "batch", Tasks: make([]spec.Task, 10_000)}
	for i := range js.Tasks {
		js.Tasks[i] = spec.Task{Name: fmt.Sprintf("t%d", i), Run: "true"}
		if i > 0 {
			js.Tasks[i].Needs = []string{fmt.Sprintf("t%d", i-1)}
			js.Tasks[i].Run = "echo ${tasks.t0.result.v}"
		}
	}
	p.submit(js)
	if n := len(p.job("chain").Tasks); n != 10_000 {
		t.Errorf("the job has %d tasks", n)
	}
}
