package rest

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/allot-sched/allot/internal/api"
)

// A submission whose ID is taken by the same job from the same caller (a
// client sending it again after losing the answer) is a conflict that
// says so, with the stored job's ID and state; the same ID with another
// body, or from another caller, is the plain conflict it always was.
// YAML and JSON of one spec are the same body.
func TestASubmissionSentAgainIsADuplicateOnlyForTheSameBodyAndCaller(t *testing.T) {
	s := newAuthServer(t, "batch")
	alice := s.token(t, api.CreateToken{Name: "alice", Role: "submitter", Queues: []string{"*"}, Shares: []string{"*"}}).Secret
	bob := s.token(t, api.CreateToken{Name: "bob", Role: "submitter", Queues: []string{"*"}, Shares: []string{"*"}}).Secret
	job := `{"id":"d1","share":"research","tasks":[{"name":"t","run":"sleep 1","count":2}]}`
	yamlJob := "id: d1\nshare: research\ntasks:\n  - name: t\n    run: sleep 1\n    count: 2\n"
	s.must(t, http.StatusCreated, alice, "POST", "/v1/jobs", job, nil)

	cases := []struct {
		name, token, body string
		duplicate         bool
	}{
		{"the same JSON body from the same caller", alice, job, true},
		{"the same spec in YAML from the same caller", alice, yamlJob, true},
		{"another body with the same ID", alice, `{"id":"d1","share":"research","tasks":[{"name":"t","run":"sleep 2","count":2}]}`, false},
		{"the same body from another caller", bob, job, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, eb, raw, _ := s.as(t, tc.token, "POST", "/v1/jobs", tc.body)
			if status != http.StatusConflict || eb.Error.Code != api.CodeConflict || eb.Error.Field != "id" {
				t.Fatalf("%d %s, want 409 conflict on id", status, raw)
			}
			switch d := eb.Error.Duplicate; {
			case tc.duplicate && (d == nil || d.ID != "d1" || d.State == ""):
				t.Errorf("duplicate = %+v, want d1 with its state", d)
			case !tc.duplicate && d != nil:
				t.Errorf("duplicate = %+v, want none", d)
			}
		})
	}

	// An ended job lives in the store only; it is found there.
	s.must(t, http.StatusOK, alice, "POST", "/v1/jobs/d1/cancel", "", nil)
	_, eb, raw, _ := s.as(t, alice, "POST", "/v1/jobs", job)
	if d := eb.Error.Duplicate; d == nil || d.State != "cancelled" {
		t.Errorf("after cancel: %s, want a duplicate of the cancelled job", raw)
	}

	// Bulk: a document sent again is refused as a duplicate, the new one
	// is created.
	body, _ := bulkBody([]string{job, `{"id":"d2","tasks":[{"name":"t","run":"true"}]}`}, true)
	status, raw := s.bulk(t, alice, "application/x-ndjson", body)
	var res api.BulkResults
	if status != http.StatusOK || json.Unmarshal(raw, &res) != nil || len(res.Results) != 2 {
		t.Fatalf("bulk: %d %s", status, raw)
	}
	if r := res.Results[0]; r.Status != api.BulkRefused || r.Error == nil || r.Error.Duplicate == nil || r.Error.Duplicate.ID != "d1" {
		t.Errorf("bulk result 0 = %s, want refused as a duplicate of d1", raw)
	}
	if r := res.Results[1]; r.Status != api.BulkCreated || r.ID != "d2" {
		t.Errorf("bulk result 1 = %+v, want d2 created", r)
	}
}
