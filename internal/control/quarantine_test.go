package control

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

// corrupt writes to the plane's store file behind its back, as a bug of an
// older version, a hand edit or a disk error would.
func (p *plane) corrupt(stmts ...string) {
	p.t.Helper()
	db, err := sql.Open("sqlite", p.path)
	if err != nil {
		p.t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			p.t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestUnreadableStoredRowsAreQuarantinedAndTheServerStarts(t *testing.T) {
	p := newPlane(t)
	p.register("w1", 1)
	for _, id := range []string{"good", "wrapped", "garbled", "bad-state", "running"} {
		p.submit(spec.Job{ID: id, Queue: "batch", Tasks: []spec.Task{{Name: "t", Run: "true"}, {Name: "u", Needs: []string{"t"}, Run: "true"}}})
	}
	p.leaseUntil("w1", "a start", func(l api.Lease) bool { return len(l.Assignments) == 1 })
	p.stop()
	p.corrupt(
		// What a memory of 1e30 was stored as before quantities were
		// bounded: the most negative integer.
		`UPDATE jobs SET spec = CAST('{"id":"wrapped","queue":"batch","tasks":[{"name":"t","run":"true","resources":{"memory":"-9223372036854775808Mi"}},{"name":"u","needs":["t"],"run":"true"}]}' AS BLOB) WHERE id = 'wrapped'`,
		`UPDATE jobs SET spec = CAST('{not json' AS BLOB) WHERE id = 'garbled'`,
		`UPDATE tasks SET state = 'bogus' WHERE job = 'bad-state' AND name = 't'`,
		`INSERT INTO workers (name, state, registered, last_seen, spec) VALUES ('w2', 'ready', 0, 0, CAST('{"name":"w2","resources":{"cpu":"1e30"}}' AS BLOB))`,
		`INSERT INTO kv (key, value) VALUES ('queue/batch/policy', CAST('{"kind": 7}' AS BLOB))`,
	)
	p.open() // fails the test if the server does not start

	if j := p.job("good"); j.State == "failed" {
		t.Errorf("a readable job was quarantined: %+v", j)
	}
	for _, id := range []string{"wrapped", "garbled", "bad-state"} {
		j := p.job(id)
		if j.State != "failed" {
			t.Errorf("job %s is %s, want failed", id, j.State)
		}
		for _, tk := range j.Tasks {
			if tk.State != "failed" || tk.Reason == nil || tk.Reason.Code != model.ReasonQuarantined || tk.Reason.Message == "" {
				t.Errorf("job %s task %s: %s %+v, want failed as quarantined with a message", id, tk.Name, tk.State, tk.Reason)
			}
		}
	}
	if tk := p.task("wrapped", "t"); tk.Reason == nil || !strings.Contains(tk.Reason.Message, "memory") {
		t.Errorf("the reason does not say what could not be read: %+v", tk.Reason)
	}
	ws, err := p.c.Workers(p.ctx())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Name == "w2" && w.State != workerLost {
			t.Errorf("an unreadable worker is listed as %s", w.State)
		}
	}
	qs, err := p.c.Queues(p.ctx())
	if err != nil || len(qs) != 1 || strings.Contains(string(qs[0].Policy), "7") {
		t.Errorf("queue policy after an unreadable stored one: %+v, %v; want the configured one", qs, err)
	}
	quarantined := p.events(EventRowQuarantined)
	kinds := map[string]int{}
	for _, e := range quarantined {
		kinds[e.Reason]++
	}
	if kinds["job"] != 3 || kinds["worker"] != 1 || kinds["setting"] != 1 {
		t.Errorf("quarantine events by kind: %v, want 3 jobs, 1 worker, 1 setting", kinds)
	}

	// Quarantined rows are set aside: the next start reads them as what
	// they became and quarantines nothing more.
	p.restart()
	if n := len(p.events(EventRowQuarantined)); n != len(quarantined) {
		t.Errorf("%d quarantine events after a second restart, want %d", n, len(quarantined))
	}
	if j := p.job("wrapped"); j.State != "failed" {
		t.Errorf("after a second restart the quarantined job is %s", j.State)
	}
	p.register("w2", 1) // the dropped worker registers again as new
	p.submit(spec.Job{ID: "after", Queue: "batch", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
}
