package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// bulkBody renders JSON job documents as a YAML stream (each after a ---
// line) or as NDJSON, with the line each document's text is on.
func bulkBody(docs []string, ndjson bool) (body string, lines []int) {
	var b strings.Builder
	for i, d := range docs {
		if ndjson {
			lines = append(lines, i+1)
			b.WriteString(d + "\n")
			continue
		}
		lines = append(lines, 2*i+2)
		b.WriteString("---\n" + d + "\n")
	}
	return b.String(), lines
}

// bulk posts a bulk body with a token and a media type.
func (s *authServer) bulk(t *testing.T, token, contentType, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+"/v1/jobs/bulk", strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// Each document of a bulk submission is checked, authorized and answered
// on its own, as POST /v1/jobs would answer it alone: the valid ones are
// created, the others refused with the single route's error (its line
// counted in the whole body), and nothing refused is stored.
func TestBulkSubmissionAnswersEachDocumentOnItsOwn(t *testing.T) {
	type want struct {
		status, code, field string
	}
	docs := []struct {
		name, doc string
		want      want
	}{
		{"valid", `{"id":"a","queue":"batch","share":"research","tasks":[{"name":"x","run":"true"}]}`, want{"created", "", ""}},
		{"invalid", `{"id":"b","queue":"batch","share":"research","tasks":[{"name":"x"}]}`, want{"refused", api.CodeInvalid, "tasks[0]"}},
		{"another share", `{"id":"c","queue":"batch","share":"ops","tasks":[{"name":"x","run":"true"}]}`, want{"refused", api.CodeForbidden, "share"}},
		{"another queue", `{"id":"d","queue":"gpu","share":"research","tasks":[{"name":"x","run":"true"}]}`, want{"refused", api.CodeForbidden, "queue"}},
		{"priority beyond the token", `{"id":"e","queue":"batch","share":"research","priority":5,"tasks":[{"name":"x","run":"true"}]}`, want{"refused", api.CodeForbidden, "priority"}},
		{"duplicate of an earlier document", `{"id":"a","queue":"batch","share":"research","tasks":[{"name":"x","run":"true"}]}`, want{"refused", api.CodeConflict, "id"}},
		{"ID of a stored job", `{"id":"old","queue":"batch","share":"research","tasks":[{"name":"x","run":"true"}]}`, want{"refused", api.CodeConflict, "id"}},
		{"unknown field", `{"id":"f","queue":"batch","share":"research","colour":"red","tasks":[{"name":"x","run":"true"}]}`, want{"refused", api.CodeInvalid, "colour"}},
		{"valid without an ID", `{"queue":"batch","share":"research","tasks":[{"name":"x","run":"true"}]}`, want{"created", "", ""}},
	}
	for _, enc := range []struct {
		name, contentType string
		ndjson            bool
	}{{"YAML stream", "application/yaml", false}, {"NDJSON", "application/x-ndjson", true}} {
		t.Run(enc.name, func(t *testing.T) {
			s := newAuthServer(t, "batch", "gpu")
			alice := s.token(t, api.CreateToken{Name: "alice", Role: "submitter", Queues: []string{"batch"}, Shares: []string{"research"}})
			s.must(t, 201, alice.Secret, "POST", "/v1/jobs", "id: old\nqueue: batch\nshare: research\ntasks: [{name: x, run: 'true'}]\n", nil)
			var texts []string
			for _, d := range docs {
				texts = append(texts, d.doc)
			}
			body, lines := bulkBody(texts, enc.ndjson)
			status, raw := s.bulk(t, alice.Secret, enc.contentType, body)
			if status != 200 {
				t.Fatalf("%d %s, want 200", status, raw)
			}
			var res api.BulkResults
			if err := json.Unmarshal(raw, &res); err != nil {
				t.Fatal(err)
			}
			if len(res.Results) != len(docs) {
				t.Fatalf("%d results for %d documents: %s", len(res.Results), len(docs), raw)
			}
			created := map[string]bool{"old": true}
			for i, d := range docs {
				r := res.Results[i]
				got := want{status: r.Status}
				if r.Error != nil {
					got.code, got.field = r.Error.Code, r.Error.Field
				}
				if r.Index != i || got != d.want {
					t.Errorf("%s: result %+v (error %+v), want index %d and %+v", d.name, r, r.Error, i, d.want)
				}
				if r.Status == "created" {
					if r.ID == "" {
						t.Errorf("%s: created without an ID", d.name)
					}
					created[r.ID] = true
				}
				if r.Error != nil && r.Error.Code == api.CodeInvalid && r.Error.Line != lines[i] {
					t.Errorf("%s: error on line %d, want the body's line %d", d.name, r.Error.Line, lines[i])
				}
			}
			stored := s.jobIDs(t)
			if len(stored) != len(created) {
				t.Errorf("stored %v, want only %v", stored, created)
			}
			for _, id := range stored {
				if !created[id] {
					t.Errorf("stored %q, which was not created", id)
				}
			}
		})
	}
}

// What concerns the call as a whole is refused with one error naming it,
// and then nothing is stored.
func TestBulkSubmissionRefusesTheWholeCallNamingWhy(t *testing.T) {
	s := newAuthServer(t, "batch")
	w := s.token(t, api.CreateToken{Role: "worker", Workers: []string{"w1"}})
	one := `{"queue":"batch","tasks":[{"name":"x","run":"true"}]}` + "\n"
	cases := []struct {
		name, token, contentType, body string
		status                         int
		code, field                    string
	}{
		{"no documents", s.admin, "application/yaml", "# nothing\n---\n", 400, api.CodeInvalid, "body"},
		{"too many documents", s.admin, "application/x-ndjson", strings.Repeat(one, api.MaxBulkJobs+1), 400, api.CodeInvalid, "body"},
		{"a token that may not submit", w.Secret, "application/x-ndjson", one, 403, api.CodeForbidden, ""},
		{"no token", "", "application/x-ndjson", one, 401, api.CodeUnauthorized, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, raw := s.bulk(t, tc.token, tc.contentType, tc.body)
			var eb api.ErrorBody
			_ = json.Unmarshal(raw, &eb)
			if status != tc.status || eb.Error.Code != tc.code || eb.Error.Field != tc.field {
				t.Fatalf("%d %s, want %d %s naming %q", status, raw, tc.status, tc.code, tc.field)
			}
		})
	}
	if ids := s.jobIDs(t); len(ids) != 0 {
		t.Fatalf("refused calls stored jobs: %v", ids)
	}
}

// A body over the server's limit is refused whole with 413.
func TestBulkSubmissionOverTheBodyLimitIs413(t *testing.T) {
	srv := newServer(t, 4096)
	body, _ := bulkBody(slicesRepeat(`{"queue":"batch","tasks":[{"name":"x","run":"true"}]}`, 200), true)
	status, eb, raw := call(t, srv, "POST", "/v1/jobs/bulk", "application/x-ndjson", body)
	if status != 413 || eb.Error.Code != api.CodeTooLarge || eb.Error.Field != "body" {
		t.Fatalf("%d %s, want 413 too_large naming body", status, raw)
	}
}

func slicesRepeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// loopCounter counts the loop's cycles and commits.
type loopCounter struct {
	mu              sync.Mutex
	cycles, commits int
}

func (c *loopCounter) Cycle(*engine.Decisions, time.Duration) { c.mu.Lock(); c.cycles++; c.mu.Unlock() }
func (c *loopCounter) Commit([]store.Event, time.Duration, error) {
	c.mu.Lock()
	c.commits++
	c.mu.Unlock()
}
func (c *loopCounter) StoreState(string) {}

func (c *loopCounter) counts() (cycles, commits int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cycles, c.commits
}

// newCountedServer runs the API on a real controller and SQLite store
// whose loop rounds are counted; cycles run only on events.
func newCountedServer(t testing.TB) (*httptest.Server, *loopCounter, store.Store) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &loopCounter{}
	quiet := slog.New(slog.DiscardHandler)
	ctrl, err := control.New(ctx, control.Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}},
		CycleEvery: time.Hour, Observer: n, Logger: quiet}, st)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	srv := httptest.NewServer(New(ctrl, Options{Logger: quiet}).Handler())
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-done
		st.Close()
	})
	return srv, n, st
}

func ndjsonJobs(n int, prefix string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":"%s%d","tasks":[{"name":"x","run":"true"}]}`+"\n", prefix, i)
	}
	return b.String()
}

// A bulk submission of 1,000 jobs stores them all in one loop round: one
// cycle and one commit, not one per job.
func TestBulkSubmissionOf1000JobsTakesOneRound(t *testing.T) {
	srv, n, st := newCountedServer(t)
	cycles0, commits0 := n.counts()
	status, _, raw := call(t, srv, "POST", "/v1/jobs/bulk", "application/x-ndjson", ndjsonJobs(1000, "j"))
	if status != 200 {
		t.Fatalf("%d %.300s", status, raw)
	}
	var res api.BulkResults
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Results {
		if r.Status != api.BulkCreated {
			t.Fatalf("result %+v, want created", r)
		}
	}
	jobs, err := st.Jobs(context.Background(), store.JobFilter{})
	if err != nil || len(jobs) != 1000 || len(res.Results) != 1000 {
		t.Fatalf("%d results, %d jobs stored (%v), want 1000", len(res.Results), len(jobs), err)
	}
	cycles, commits := n.counts()
	if cycles-cycles0 > 2 || commits-commits0 > 2 {
		t.Errorf("1000 jobs took %d cycles and %d commits, want one round", cycles-cycles0, commits-commits0)
	}
}

// BenchmarkBulkSubmit submits 1,000 one-task jobs per iteration in one bulk
// call; BenchmarkSingleSubmits submits the same one call each, for
// comparison (ns/op is per 1,000 jobs in both).
func BenchmarkBulkSubmit(b *testing.B) {
	srv, _, _ := newCountedServer(b)
	for i := 0; b.Loop(); i++ {
		resp, err := http.Post(srv.URL+"/v1/jobs/bulk", "application/x-ndjson", strings.NewReader(ndjsonJobs(1000, fmt.Sprintf("b%d-", i))))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

func BenchmarkSingleSubmits(b *testing.B) {
	srv, _, _ := newCountedServer(b)
	for i := 0; b.Loop(); i++ {
		for j := range 1000 {
			doc := fmt.Sprintf(`{"id":"s%d-%d","tasks":[{"name":"x","run":"true"}]}`, i, j)
			resp, err := http.Post(srv.URL+"/v1/jobs", "application/json", strings.NewReader(doc))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 201 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
}
