package control

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
)

// forged is a success report with a result of the attacker's choosing.
func forged(a api.Attempt, secret string) api.Report {
	return api.Report{Attempt: a, Secret: secret, Result: json.RawMessage(`{"value":"forged"}`)}
}

// checkRefused checks that a report was refused as forbidden, that the
// attempt still runs with no result, and that the refusal is on record.
func checkRefused(t *testing.T, p *plane, err error, a api.Attempt, refusalsBefore int) {
	t.Helper()
	if !errors.Is(err, ErrForbidden) {
		t.Fatalf("forged report: err = %v, want ErrForbidden", err)
	}
	tk := p.task(a.Job, a.Task)
	if tk.State != "running" || tk.Attempt != a.Attempt || len(tk.Result) != 0 {
		t.Errorf("after a refused report %s is %s at attempt %d with result %s; want still running, no result", a.Task, tk.State, tk.Attempt, tk.Result)
	}
	evs := p.events(EventReportRefused)
	if len(evs) != refusalsBefore+1 {
		t.Fatalf("%d report_refused events, want %d", len(evs), refusalsBefore+1)
	}
	if e := evs[len(evs)-1]; e.Job != a.Job || e.Task != a.Task || e.Worker != "w1" || e.Reason != ReasonBadSecret {
		t.Errorf("report_refused event %+v, want job %s task %s worker w1 reason %s", e, a.Job, a.Task, ReasonBadSecret)
	}
}

func TestReportWithoutTheAttemptsSecretIsRefusedAndChangesNothing(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 2)
	p.submit(spec.Job{ID: "victim", Tasks: []spec.Task{{Name: "produce", Run: "true"}, {Name: "consume", Needs: []string{"produce"}, Run: "true"}}})
	p.submit(spec.Job{ID: "attacker", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	l := p.leaseUntil("w1", "both jobs' tasks", func(l api.Lease) bool { return len(l.Assignments) == 2 })
	victim, _ := attemptOf(l.Assignments, "produce")
	own, _ := attemptOf(l.Assignments, "t")
	secret := p.secrets[victim]
	if secret == "" || secret == p.secrets[own] {
		t.Fatalf("secrets: victim %q, attacker's own %q; want two different ones", secret, p.secrets[own])
	}

	for i, tc := range []struct {
		name   string
		secret string
	}{
		{"no secret", ""},
		{"a wrong secret", "not-the-secret"},
		{"the secret of another attempt on the same worker", p.secrets[own]},
		{"the secret with a character changed", secret[:len(secret)-1] + string(secret[len(secret)-1]^1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.c.Report(p.ctx(), "w1", []api.Report{forged(victim, tc.secret)})
			checkRefused(t, p, err, victim, i)
		})
	}
	// A batch with one forged report is refused whole: the genuine one in
	// it is not applied either, and is applied once sent alone.
	mixed := []api.Report{{Attempt: own, Secret: p.secrets[own]}, forged(victim, "")}
	checkRefused(t, p, p.c.Report(p.ctx(), "w1", mixed), victim, 4)
	if tk := p.task("attacker", "t"); tk.State != "running" {
		t.Errorf("the genuine report of a refused batch was applied: t is %s", tk.State)
	}

	genuine := api.Report{Attempt: victim, Result: json.RawMessage(`{"value":"genuine"}`)}
	if err := p.report("w1", genuine, succeeded(own)); err != nil {
		t.Fatalf("genuine reports: %v", err)
	}
	consume, _ := attemptOf(p.leaseUntil("w1", "consume", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments, "consume")
	if tk := p.task("victim", "produce"); tk.State != "succeeded" || string(tk.Result) != `{"value":"genuine"}` {
		t.Errorf("produce is %s with result %s, want succeeded with the genuine result", tk.State, tk.Result)
	}
	// A report of an attempt that already ended changes nothing, secret
	// or not: it is acknowledged, as a resent report must be.
	if err := p.c.Report(p.ctx(), "w1", []api.Report{forged(victim, "")}); err != nil {
		t.Errorf("late forged report of an ended attempt: %v, want it ignored", err)
	}
	if tk := p.task("victim", "produce"); string(tk.Result) != `{"value":"genuine"}` {
		t.Errorf("a late forged report changed the result to %s", tk.Result)
	}
	if consume.Attempt != 1 || p.secrets[consume] == "" {
		t.Errorf("consume: attempt %+v with secret %q", consume, p.secrets[consume])
	}
}

func TestEachAttemptGetsItsOwnSecretAndTheOldOneNoLongerCounts(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "t", MaxAttempts: 2, Run: "false"}}})
	first := p.waitAssignment("w1", "t")
	if err := p.report("w1", api.Report{Attempt: first, ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	second := p.waitAssignment("w1", "t")
	if second.Attempt != first.Attempt+1 || p.secrets[second] == p.secrets[first] {
		t.Fatalf("retry %+v with secret %q; want a new attempt with a new secret (first %q)", second, p.secrets[second], p.secrets[first])
	}
	err := p.c.Report(p.ctx(), "w1", []api.Report{forged(second, p.secrets[first])})
	checkRefused(t, p, err, second, 0)
}

func TestAttemptSecretsSurviveARestart(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	a := p.waitAssignment("w1", "t")

	p.restart()
	p.register("w1", 1, a) // the agent comes back with what it runs
	checkRefused(t, p, p.c.Report(p.ctx(), "w1", []api.Report{forged(a, "")}), a, 0)
	if err := p.report("w1", api.Report{Attempt: a, Result: json.RawMessage(`{"value":"genuine"}`)}); err != nil {
		t.Fatalf("the genuine report after a restart: %v", err)
	}
	if tk := p.task("j", "t"); tk.State != "succeeded" || string(tk.Result) != `{"value":"genuine"}` {
		t.Errorf("t is %s with result %s, want succeeded with the genuine result", tk.State, tk.Result)
	}
}

func TestMembersOfAMergedBatchEachHaveTheirOwnSecret(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	p.submit(batchSpec("j", 2))
	b := p.leaseBatch("w1")
	if len(b.Batch) != 2 {
		t.Fatalf("batch %v, want two members", batchTasks(b))
	}
	head, second := b.Batch[0], b.Batch[1]
	if head.Secret == "" || second.Secret == "" || head.Secret == second.Secret {
		t.Fatalf("member secrets %q and %q, want two different ones", head.Secret, second.Secret)
	}
	// The head's secret does not report for another member.
	checkRefused(t, p, p.c.Report(p.ctx(), "w1", []api.Report{forged(second.Attempt, head.Secret)}), second.Attempt, 0)
	if err := p.report("w1", succeeded(second.Attempt), succeeded(head.Attempt)); err != nil {
		t.Fatalf("genuine batch reports: %v", err)
	}
	if j := p.job("j"); j.State != "succeeded" {
		t.Errorf("job %s, want succeeded", j.State)
	}
}
