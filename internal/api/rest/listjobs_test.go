package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
)

func TestListJobsRefusesUnknownFilterValuesNamingTheField(t *testing.T) {
	srv := newServer(t, 4096)
	cases := []struct {
		query, field string
		known        []string
	}{
		{"state=bogus", "state", []string{"pending", "running", "succeeded", "failed", "cancelled", "dead_lettered"}},
		{"state=running,bogus", "state", []string{"pending"}},
		{"queue=nope", "queue", []string{"batch", "gpu"}},
		{"sort=bogus", "sort", []string{"submitted", "-submitted"}},
	}
	for _, c := range cases {
		status, eb, raw := call(t, srv, "GET", "/v1/jobs?"+c.query, "", "")
		if status != http.StatusBadRequest || eb.Error.Code != api.CodeInvalid || eb.Error.Field != c.field {
			t.Errorf("%s: got %d %s, want 400 invalid naming %s", c.query, status, raw, c.field)
			continue
		}
		for _, k := range c.known {
			if !strings.Contains(eb.Error.Message, k) {
				t.Errorf("%s: message %q does not name the known value %q", c.query, eb.Error.Message, k)
			}
		}
	}
	for _, q := range []string{"state=pending,dead_lettered", "queue=batch", "sort=submitted", "sort=-submitted"} {
		if status, _, raw := call(t, srv, "GET", "/v1/jobs?"+q, "", ""); status != http.StatusOK {
			t.Errorf("%s: got %d %s, want 200", q, status, raw)
		}
	}
}

func TestListJobsNewestFirstPagesThroughEveryJobOnce(t *testing.T) {
	srv := newServer(t, 4096)
	for i := range 5 {
		body := fmt.Sprintf("id: j%d\nqueue: batch\ntasks: [{name: x, run: 'true'}]\n", i)
		if status, _, raw := call(t, srv, "POST", "/v1/jobs", "application/yaml", body); status != http.StatusCreated {
			t.Fatalf("submit: %d %s", status, raw)
		}
	}
	list := func(query string) api.JobList {
		status, _, raw := call(t, srv, "GET", "/v1/jobs?"+query, "", "")
		if status != http.StatusOK {
			t.Fatalf("%s: %d %s", query, status, raw)
		}
		var l api.JobList
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	ids := func(l api.JobList) (out []string) {
		for _, j := range l.Jobs {
			out = append(out, j.ID)
		}
		return out
	}
	if got := ids(list("")); strings.Join(got, " ") != "j0 j1 j2 j3 j4" {
		t.Errorf("default order = %v, want submission order (existing callers)", got)
	}
	var got []string
	next := int64(0)
	for page := 0; page < 10; page++ {
		l := list(fmt.Sprintf("sort=-submitted&limit=2&after=%d", next))
		got = append(got, ids(l)...)
		if next = l.Next; next == 0 {
			break
		}
	}
	if strings.Join(got, " ") != "j4 j3 j2 j1 j0" {
		t.Errorf("newest first, 2 a page = %v, want j4 j3 j2 j1 j0", got)
	}
}
