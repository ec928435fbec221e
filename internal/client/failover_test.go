package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/api/rest"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// apiServer runs the real API on a controller and a SQLite store, and
// returns its handler and a client of it alone, for checking.
func apiServer(t *testing.T) (http.Handler, *httptest.Server) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctrl, err := control.New(ctx, control.Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}}, st)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	h := rest.New(ctrl, rest.Options{}).Handler()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-done
		st.Close()
	})
	return h, srv
}

// droppingFront hands the first request to the API (which handles it)
// and breaks the connection before the answer leaves: a leader that
// stored a submission and died before answering. Later requests are
// answered normally.
func droppingFront(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	dropped := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if dropped {
			h.ServeHTTP(w, r)
			return
		}
		dropped = true
		h.ServeHTTP(httptest.NewRecorder(), r) // handled: stored, answer lost
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	}))
	t.Cleanup(srv.Close)
	return srv
}

func jobCount(t *testing.T, c *client.Client) int {
	t.Helper()
	l, err := c.Jobs(context.Background(), client.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Jobs)
}

// A submission stored by a server that broke the connection before its
// answer is sent again to the next server, which answers it is a
// duplicate: the client returns the stored job, and there is one job.
func TestASubmissionResentAfterABrokenConnectionIsStoredOnce(t *testing.T) {
	h, direct := apiServer(t)
	front := droppingFront(t, h)
	c, err := client.New(front.URL + "," + direct.URL)
	if err != nil {
		t.Fatal(err)
	}
	check, _ := client.New(direct.URL)
	ctx := context.Background()

	job, err := c.SubmitJob(ctx, []byte("queue: batch\ntasks:\n  - name: t\n    run: 'true'\n"), "")
	if err != nil {
		t.Fatalf("submit across the broken connection: %v", err)
	}
	if !strings.HasPrefix(job.ID, "job-") || job.Queue != "batch" {
		t.Errorf("job %+v, want the stored job with the client's ID", job)
	}
	if n := jobCount(t, check); n != 1 {
		t.Errorf("%d jobs stored, want 1", n)
	}
	if c.BaseURL() != direct.URL {
		t.Errorf("BaseURL = %q, want the server that answered", c.BaseURL())
	}

	// A first submission that meets a duplicate is the conflict it is;
	// another body under the same ID too.
	body := "id: " + job.ID + "\nqueue: batch\ntasks:\n  - name: t\n    run: 'true'\n"
	if _, err := c.SubmitJob(ctx, []byte(body), ""); !client.IsConflict(err) {
		t.Errorf("the same job again, not after a broken connection: %v, want a conflict", err)
	}
	other := strings.Replace(body, "'true'", "'false'", 1)
	if _, err := c.SubmitJob(ctx, []byte(other), ""); !client.IsConflict(err) {
		t.Errorf("another body under the same ID: %v, want a conflict", err)
	}
	if n := jobCount(t, check); n != 1 {
		t.Errorf("%d jobs stored, want 1", n)
	}
}

// Another body under a taken ID, sent again after a broken connection,
// is still a conflict: only the same job is a duplicate.
func TestAResentSubmissionOfAnotherBodyIsStillAConflict(t *testing.T) {
	h, direct := apiServer(t)
	check, _ := client.New(direct.URL)
	ctx := context.Background()
	if _, err := check.SubmitJob(ctx, []byte(`{"id":"taken","tasks":[{"name":"t","run":"true"}]}`), ""); err != nil {
		t.Fatal(err)
	}
	front := droppingFront(t, h)
	c, _ := client.New(front.URL + "," + direct.URL)
	_, err := c.SubmitJob(ctx, []byte(`{"id":"taken","tasks":[{"name":"t","run":"false"}]}`), "")
	if !client.IsConflict(err) {
		t.Errorf("err %v, want a conflict", err)
	}
}

// A bulk submission stored by a server that broke the connection is sent
// again: the documents the first call stored are results of their jobs,
// and each job is stored once.
func TestABulkSubmissionResentAfterABrokenConnectionIsStoredOnce(t *testing.T) {
	h, direct := apiServer(t)
	front := droppingFront(t, h)
	c, _ := client.New(front.URL + "," + direct.URL)
	check, _ := client.New(direct.URL)
	body := "queue: batch\ntasks: [{name: t, run: 'true'}]\n---\nid: named\ntasks: [{name: t, run: 'true'}]\n---\n{\"tasks\":[{\"name\":\"t\",\"run\":\"true\"}]}\n"
	res, err := c.SubmitJobs(context.Background(), []byte(body), "application/yaml")
	if err != nil {
		t.Fatalf("bulk across the broken connection: %v", err)
	}
	if len(res.Results) != 3 {
		t.Fatalf("results %+v", res.Results)
	}
	for i, r := range res.Results {
		if r.Status != api.BulkCreated || r.Error != nil || r.ID == "" {
			t.Errorf("result %d = %+v, want created", i, r)
		}
	}
	if res.Results[1].ID != "named" {
		t.Errorf("result 1 = %q, want the document's own ID", res.Results[1].ID)
	}
	if n := jobCount(t, check); n != 3 {
		t.Errorf("%d jobs stored, want 3", n)
	}
}

// A bulk document refused by the server names its line in the body as
// the caller gave it, though documents before it gained a line.
func TestBulkErrorsNameTheLinesOfTheBodyAsGiven(t *testing.T) {
	_, direct := apiServer(t)
	c, _ := client.New(direct.URL)
	body := "queue: batch\ntasks: [{name: t, run: 'true'}]\n---\nqueue: batch\ntasks: [{name: t, run: 'true'}]\nbogus: 1\n"
	res, err := c.SubmitJobs(context.Background(), []byte(body), "application/yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 2 || res.Results[1].Error == nil {
		t.Fatalf("results %+v, want the second refused", res.Results)
	}
	if e := res.Results[1].Error; e.Line != 6 || !strings.HasPrefix(e.Message, "line 6: ") {
		t.Errorf("error %+v, want line 6", e)
	}
}
