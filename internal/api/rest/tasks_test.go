package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/spec"
)

// countDoc is a job document of one task entry of n tasks.
func countDoc(id string, n int) string {
	return fmt.Sprintf(`{"id":%q,"queue":"batch","share":"research","tasks":[{"name":"t","run":"true","count":%d}]}`, id, n)
}

// The documents of one bulk call create at most its task budget between
// them: a document that would pass it, and every one after it, is refused
// on its own naming its tasks and saying to send the rest in another
// call; those before it are stored, and a refused document spends
// nothing of the budget.
func TestBulkCallCreatesAtMostItsTaskBudget(t *testing.T) {
	s := newAuthServerWith(t, control.Config{}, Options{maxBulkTasks: 10}, "batch")
	alice := s.token(t, api.CreateToken{Name: "alice", Role: "submitter", Queues: []string{"batch"}, Shares: []string{"research"}})
	docs := []struct {
		doc         string
		status      string
		code, field string
	}{
		{countDoc("a", 4), api.BulkCreated, "", ""},
		{`{"id":"bad","queue":"batch","share":"research","tasks":[{"name":"t","count":5}]}`, api.BulkRefused, api.CodeInvalid, "tasks[0]"},
		{`{"id":"b","queue":"batch","share":"research","tasks":[{"name":"x","run":"true"},{"name":"y","run":"true","count":4}]}`, api.BulkCreated, "", ""},
		{`{"id":"c","queue":"batch","share":"research","tasks":[{"name":"x","run":"true"},{"name":"y","run":"true","count":2}]}`, api.BulkRefused, api.CodeTooLarge, "tasks[1].count"},
		{countDoc("d", 1), api.BulkRefused, api.CodeTooLarge, "tasks[0].count"},
		{`{"id":"e","queue":"batch","share":"research","tasks":[{"name":"x","run":"true"}]}`, api.BulkRefused, api.CodeTooLarge, "tasks[0]"},
	}
	var texts []string
	for _, d := range docs {
		texts = append(texts, d.doc)
	}
	body, _ := bulkBody(texts, true)
	status, raw := s.bulk(t, alice.Secret, "application/x-ndjson", body)
	if status != http.StatusOK {
		t.Fatalf("%d %s, want 200", status, raw)
	}
	var res api.BulkResults
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		r := res.Results[i]
		var code, field, msg string
		if r.Error != nil {
			code, field, msg = r.Error.Code, r.Error.Field, r.Error.Message
		}
		if r.Status != d.status || code != d.code || field != d.field {
			t.Errorf("document %d: %s %s %s (%s), want %s %s %s", i, r.Status, code, field, msg, d.status, d.code, d.field)
		}
		if code == api.CodeTooLarge && (!strings.Contains(msg, "10 tasks") || !strings.Contains(msg, "another call")) {
			t.Errorf("document %d: message %q names neither the budget nor another call", i, msg)
		}
	}
	if got, want := strings.Join(s.jobIDs(t), ","), "a,b"; got != want {
		t.Errorf("stored jobs %s, want %s", got, want)
	}
}

// Without a setting of its own, a bulk call's budget is what one job may
// hold.
func TestBulkCallTaskBudgetIsOneJobsTasks(t *testing.T) {
	if got := (Options{}).bulkTasks(); got != spec.MaxTasksPerJob {
		t.Errorf("bulk task budget %d, want %d", got, spec.MaxTasksPerJob)
	}
}

// A submission past a live-task bound is 429 too_many_tasks naming the
// bound and the count, alone or in a bulk call; an admin token is held to
// the server's bound alone.
func TestSubmissionPastALiveTaskBoundIs429(t *testing.T) {
	s := newAuthServerWith(t, control.Config{MaxLiveTasks: 10, MaxLiveTasksPerSubmitter: 5}, Options{}, "batch")
	alice := s.token(t, api.CreateToken{Name: "alice", Role: "submitter", Queues: []string{"batch"}, Shares: []string{"research"}})
	s.must(t, http.StatusCreated, alice.Secret, "POST", "/v1/jobs", countDoc("a1", 5), nil)
	refused := func(token, doc, limit string, live int) {
		t.Helper()
		status, eb, raw, _ := s.as(t, token, "POST", "/v1/jobs", doc)
		if status != http.StatusTooManyRequests || eb.Error.Code != api.CodeTooManyTasks || eb.Error.Field != "tasks" ||
			!strings.Contains(eb.Error.Message, limit+" (") || !strings.Contains(eb.Error.Message, fmt.Sprintf(": %d are live", live)) {
			t.Fatalf("%d %s, want 429 too_many_tasks naming %s and %d live tasks", status, raw, limit, live)
		}
	}
	refused(alice.Secret, countDoc("a2", 1), "server.limits.maxLiveTasksPerSubmitter", 5)
	s.must(t, http.StatusCreated, s.admin, "POST", "/v1/jobs", countDoc("o1", 4), nil)
	refused(s.admin, countDoc("o2", 2), "server.limits.maxLiveTasks", 9)

	status, raw := s.bulk(t, alice.Secret, "application/x-ndjson", countDoc("a3", 1)+"\n")
	var res api.BulkResults
	if err := json.Unmarshal(raw, &res); err != nil || status != http.StatusOK {
		t.Fatalf("%d %s %v", status, raw, err)
	}
	if r := res.Results[0]; r.Status != api.BulkRefused || r.Error == nil || r.Error.Code != api.CodeTooManyTasks {
		t.Errorf("bulk document past the bound: %+v %+v, want refused too_many_tasks", r, r.Error)
	}
}
