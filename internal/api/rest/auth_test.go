package rest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// authServer is the API with authentication on, on a real controller and
// SQLite store, with the bootstrap admin token.
type authServer struct {
	*httptest.Server
	st     *sqlite.Store
	dbPath string
	admin  string // the admin secret, read from the bootstrap file
}

func newAuthServer(t *testing.T, queues ...string) *authServer {
	t.Helper()
	return newAuthServerWith(t, control.Config{}, Options{}, queues...)
}

// newAuthServerWith is newAuthServer with settings of the controller and
// the API of the test's own (the queues and the authenticator are added).
func newAuthServerWith(t *testing.T, ccfg control.Config, opt Options, queues ...string) *authServer {
	t.Helper()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "allot.db")
	st, err := sqlite.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var cfg spec.Scheduling
	for _, q := range queues {
		cfg.Queues = append(cfg.Queues, spec.Queue{Name: q})
	}
	ccfg.Scheduling = cfg
	ctrl, err := control.New(ctx, ccfg, st)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	file := filepath.Join(dir, auth.AdminTokenFile)
	if _, created, err := auth.Bootstrap(ctx, st, file, time.Now()); err != nil || !created {
		t.Fatalf("Bootstrap: %v %v", created, err)
	}
	secret, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	opt.Auth = auth.NewAuthenticator(st, nil, 0)
	srv := httptest.NewServer(New(ctrl, opt).Handler())
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-done
		st.Close()
	})
	return &authServer{Server: srv, st: st, dbPath: dbPath, admin: strings.TrimSpace(string(secret))}
}

// as calls the API with a bearer token (none when token is empty).
func (s *authServer) as(t *testing.T, token, method, path, body string) (int, api.ErrorBody, []byte, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if strings.HasPrefix(body, "{") {
		req.Header.Set("Content-Type", "application/json")
	} else if body != "" {
		req.Header.Set("Content-Type", "application/yaml")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var eb api.ErrorBody
	_ = json.Unmarshal(raw, &eb)
	return resp.StatusCode, eb, raw, resp.Header
}

// must calls the API and fails the test unless the status is want.
func (s *authServer) must(t *testing.T, want int, token, method, path, body string, out any) {
	t.Helper()
	status, _, raw, _ := s.as(t, token, method, path, body)
	if status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, status, raw, want)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
}

// token creates a token as the admin and returns its secret.
func (s *authServer) token(t *testing.T, req api.CreateToken) api.NewToken {
	t.Helper()
	body, _ := json.Marshal(req)
	var nt api.NewToken
	s.must(t, http.StatusCreated, s.admin, "POST", "/v1/tokens", string(body), &nt)
	return nt
}

func (s *authServer) jobIDs(t *testing.T) []string {
	t.Helper()
	var list api.JobList
	s.must(t, 200, s.admin, "GET", "/v1/jobs", "", &list)
	var ids []string
	for _, j := range list.Jobs {
		ids = append(ids, j.ID)
	}
	return ids
}

func TestMissingBadExpiredAndRevokedTokensAre401AndStoreNothing(t *testing.T) {
	s := newAuthServer(t, "batch")
	// An expired token, as a store would hold it an hour after its end.
	expired, expiredSecret, err := auth.New(auth.Spec{Role: auth.Admin, ExpiresIn: new(time.Hour)}, time.Now().Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.st.PutToken(t.Context(), expired); err != nil {
		t.Fatal(err)
	}
	revoked := s.token(t, api.CreateToken{Role: "admin", Name: "soon revoked"})
	s.must(t, 200, revoked.Secret, "GET", "/v1/queues", "", nil)
	s.must(t, 200, s.admin, "DELETE", "/v1/tokens/"+revoked.ID, "", nil)

	tokens := []struct {
		name, header string
		invalid      bool // the challenge says error="invalid_token"
	}{
		{"missing", "", false},
		{"basic scheme", "Basic YWRtaW46YWRtaW4=", true},
		{"malformed", "Bearer not-a-token", true},
		{"truncated", "Bearer " + s.admin[:len(s.admin)-1], true},
		{"unknown", "Bearer " + auth.NewSecret(), true},
		{"expired", "Bearer " + expiredSecret, true},
		{"revoked", "Bearer " + revoked.Secret, true},
	}
	routes := []struct{ method, path, body string }{
		{"POST", "/v1/jobs", "id: sneaky\ntasks: [{name: x, run: 'true'}]\n"},
		{"GET", "/v1/jobs", ""},
		{"GET", "/v1/jobs/sneaky", ""},
		{"GET", "/v1/events", ""},
		{"POST", "/v1/workers", `{"name":"w1"}`},
		{"POST", "/v1/workers/w1/lease", `{}`},
		{"PUT", "/v1/queues/batch/policy", `{"kind":"fifo"}`},
		{"POST", "/v1/tokens", `{"role":"admin"}`},
		{"GET", "/v1/tokens", ""},
		{"GET", "/v1/no-such-route", ""},
	}
	for _, tok := range tokens {
		for _, rt := range routes {
			t.Run(tok.name+"/"+rt.method+rt.path, func(t *testing.T) {
				req, _ := http.NewRequest(rt.method, s.URL+rt.path, strings.NewReader(rt.body))
				if tok.header != "" {
					req.Header.Set("Authorization", tok.header)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var eb api.ErrorBody
				_ = json.Unmarshal(raw, &eb)
				if resp.StatusCode != 401 || eb.Error.Code != api.CodeUnauthorized || eb.Error.Message == "" {
					t.Fatalf("%d %s, want 401 unauthorized with a message", resp.StatusCode, raw)
				}
				ch := resp.Header.Get("WWW-Authenticate")
				if !strings.HasPrefix(ch, "Bearer ") || strings.Contains(ch, "invalid_token") != tok.invalid {
					t.Errorf("WWW-Authenticate %q", ch)
				}
			})
		}
	}
	if ids := s.jobIDs(t); len(ids) != 0 {
		t.Errorf("jobs stored by unauthenticated requests: %v", ids)
	}
	var ws []api.Worker
	s.must(t, 200, s.admin, "GET", "/v1/workers", "", &ws)
	if len(ws) != 0 {
		t.Errorf("workers registered by unauthenticated requests: %+v", ws)
	}
	var toks []api.Token
	s.must(t, 200, s.admin, "GET", "/v1/tokens", "", &toks)
	if len(toks) != 3 {
		t.Errorf("%d tokens, want the bootstrap, expired and revoked ones: %+v", len(toks), toks)
	}
}

func TestHealthAndAPIDescriptionNeedNoToken(t *testing.T) {
	s := newAuthServer(t)
	for _, p := range []string{"/healthz", "/readyz", "/openapi.json"} {
		if status, _, raw, _ := s.as(t, "", "GET", p, ""); status != 200 || !json.Valid(raw) {
			t.Errorf("GET %s without a token: %d %s", p, status, raw)
		}
	}
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	_, _, raw, _ := s.as(t, "", "GET", "/openapi.json", "")
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for path, method := range map[string]string{"/v1/tokens": "post", "/v1/tokens/{id}": "delete"} {
		if doc.Paths[path][method] == nil {
			t.Errorf("openapi.json does not describe %s %s", method, path)
		}
	}
	// A path that only starts like an open one is not open.
	if status, _, _, _ := s.as(t, "", "GET", "/healthz/../v1/jobs", ""); status == 200 {
		t.Error("a path beginning with /healthz bypassed authentication")
	}
}

// refusedSubmission submits doc with secret and checks the refusal: the
// status, the field it names, the forbidden code for a 403, and the
// message when one is given.
func (s *authServer) refusedSubmission(t *testing.T, secret, doc string, status int, field, message string) {
	t.Helper()
	got, eb, raw, _ := s.as(t, secret, "POST", "/v1/jobs", doc)
	if got != status || eb.Error.Field != field {
		t.Fatalf("%d %s, want %d naming %q", got, raw, status, field)
	}
	if got == 403 && eb.Error.Code != api.CodeForbidden {
		t.Errorf("code %q, want forbidden", eb.Error.Code)
	}
	if message != "" && eb.Error.Message != message {
		t.Errorf("message %q, want %q", eb.Error.Message, message)
	}
}

// nothingSubmitted checks that refused submissions stored no job and wrote
// no event.
func (s *authServer) nothingSubmitted(t *testing.T) {
	t.Helper()
	if ids := s.jobIDs(t); len(ids) != 0 {
		t.Fatalf("refused submissions stored jobs: %v", ids)
	}
	var events []api.Event
	s.must(t, 200, s.admin, "GET", "/v1/events", "", &events)
	if len(events) != 0 {
		t.Errorf("refused submissions wrote events: %+v", events)
	}
}

func TestSubmitterShareAndQueueMisuseIs403AndStoresNothing(t *testing.T) {
	s := newAuthServer(t, "batch", "gpu")
	alice := s.token(t, api.CreateToken{Name: "alice", Role: "submitter", Queues: []string{"batch"}, Shares: []string{"research"}})
	cases := []struct {
		name, doc string
		status    int
		field     string
		message   string
	}{
		{"another share", "id: j1\nqueue: batch\nshare: ops\ntasks: [{name: x, run: 'true'}]\n", 403, "share",
			`share "ops" is not allowed for this token (allowed: research)`},
		{"another queue", "id: j2\nqueue: gpu\nshare: research\ntasks: [{name: x, run: 'true'}]\n", 403, "queue",
			`queue "gpu" is not allowed for this token (allowed: batch)`},
		{"no share", "id: j3\nqueue: batch\ntasks: [{name: x, run: 'true'}]\n", 403, "share", ""},
		{"json body, another share", `{"id":"j4","queue":"batch","share":"ops","tasks":[{"name":"x","run":"true"}]}`, 403, "share", ""},
		{"invalid and forbidden: the spec is checked first", "id: j5\nqueue: batch\nshare: ops\ntasks: [{name: x}]\n", 400, "tasks[0]", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s.refusedSubmission(t, alice.Secret, tc.doc, tc.status, tc.field, tc.message)
		})
	}
	s.nothingSubmitted(t)
	s.must(t, 201, alice.Secret, "POST", "/v1/jobs", "id: ok\nqueue: batch\nshare: research\ntasks: [{name: x, run: 'true'}]\n", nil)
	if ids := s.jobIDs(t); len(ids) != 1 || ids[0] != "ok" {
		t.Errorf("jobs %v, want only the allowed one", ids)
	}
}

func TestSubmitterWithoutAQueueGoesToTheDefaultQueueOnlyIfAllowed(t *testing.T) {
	s := newAuthServer(t, "only")
	in := s.token(t, api.CreateToken{Role: "submitter", Queues: []string{"only"}, Shares: []string{"*"}})
	out := s.token(t, api.CreateToken{Role: "submitter", Queues: []string{"other"}, Shares: []string{"*"}})
	doc := "tasks: [{name: x, run: 'true'}]\n"
	s.must(t, 201, in.Secret, "POST", "/v1/jobs", doc, nil)
	status, eb, raw, _ := s.as(t, out.Secret, "POST", "/v1/jobs", doc)
	if status != 403 || eb.Error.Field != "queue" || !strings.Contains(eb.Error.Message, `"only"`) {
		t.Fatalf("%d %s, want 403 naming the default queue", status, raw)
	}
}

func TestSubmittersSeeAndCancelOnlyTheirJobs(t *testing.T) {
	s := newAuthServer(t, "batch")
	alice := s.token(t, api.CreateToken{Role: "submitter", Queues: []string{"*"}, Shares: []string{"research"}})
	job := func(id, share string) string {
		return "id: " + id + "\nshare: " + share + "\ntasks: [{name: x, run: 'sleep 60'}]\n"
	}
	s.must(t, 201, s.admin, "POST", "/v1/jobs", job("theirs", "ops"), nil)
	s.must(t, 201, alice.Secret, "POST", "/v1/jobs", job("mine", "research"), nil)

	var list api.JobList
	s.must(t, 200, alice.Secret, "GET", "/v1/jobs", "", &list)
	if len(list.Jobs) != 1 || list.Jobs[0].ID != "mine" {
		t.Errorf("alice lists %+v, want only her job", list.Jobs)
	}
	jobRoutes := []struct{ method, path string }{
		{"GET", "/v1/jobs/theirs"}, {"GET", "/v1/jobs/theirs/logs"}, {"GET", "/v1/jobs/theirs/explain"},
		{"POST", "/v1/jobs/theirs/cancel"}, {"POST", "/v1/jobs/theirs/requeue"},
		{"POST", "/v1/jobs/theirs/tasks/x/requeue"}, {"POST", "/v1/jobs/theirs/tasks/x/cancel"},
		{"POST", "/v1/jobs/theirs/priority"}, {"POST", "/v1/jobs/theirs/hold"}, {"POST", "/v1/jobs/theirs/release"},
		{"POST", "/v1/jobs/theirs/resources"},
	}
	// Every route of one job is in the table.
	for _, p := range New(nil, Options{}).patterns {
		if !strings.Contains(p, "/v1/jobs/{id}") {
			continue
		}
		if !slices.ContainsFunc(jobRoutes, func(rt struct{ method, path string }) bool {
			return rt.method+" "+strings.NewReplacer("theirs", "{id}", "/x/", "/{task}/").Replace(rt.path) == p
		}) {
			t.Errorf("the server serves %s, which this test does not try on another team's job", p)
		}
	}
	for _, rt := range jobRoutes {
		status, eb, raw, _ := s.as(t, alice.Secret, rt.method, rt.path, "")
		if status != 404 || eb.Error.Code != api.CodeNotFound {
			t.Errorf("%s %s as alice: %d %s, want 404 as for a missing job", rt.method, rt.path, status, raw)
		}
	}
	if status, eb, _, _ := s.as(t, alice.Secret, "GET", "/v1/jobs?share=ops", ""); status != 403 || eb.Error.Field != "share" {
		t.Errorf("listing another share: %d %+v, want 403 naming share", status, eb)
	}
	for _, p := range []string{"/v1/jobs/mine", "/v1/jobs/mine/logs", "/v1/events", "/v1/workers", "/v1/queues", "/v1/jobs?share=research"} {
		s.must(t, 200, alice.Secret, "GET", p, "", nil)
	}
	var j api.Job
	s.must(t, 200, alice.Secret, "POST", "/v1/jobs/mine/cancel", "", &j)
	s.must(t, 200, s.admin, "GET", "/v1/jobs/theirs", "", &j)
	if j.State == "cancelled" {
		t.Error("alice's refused cancel cancelled the other team's job")
	}
}

func TestSubmittersAndWorkersMayNotUseOtherRoutes(t *testing.T) {
	s := newAuthServer(t, "batch")
	sub := s.token(t, api.CreateToken{Role: "submitter", Queues: []string{"*"}, Shares: []string{"*"}})
	wk := s.token(t, api.CreateToken{Role: "worker", Workers: []string{"w1"}})
	s.must(t, 200, wk.Secret, "POST", "/v1/workers", `{"name":"w1"}`, nil)
	cases := []struct {
		who, token, method, path, body string
		action                         string // in the message, when the test says which
	}{
		{"submitter", sub.Secret, "PUT", "/v1/endpoints/det", `{"type":"http"}`, "change endpoints or throttling settings"},
		{"submitter", sub.Secret, "DELETE", "/v1/endpoints/det", ``, "change endpoints or throttling settings"},
		{"submitter", sub.Secret, "PUT", "/v1/throttling", `{}`, "change endpoints or throttling settings"},
		{"submitter", sub.Secret, "POST", "/v1/workers/w1/elastic", `{"enabled":false}`, "change worker states"},
		{"worker", wk.Secret, "GET", "/v1/endpoints", ``, "read endpoints and throttling settings"},
		{"worker", wk.Secret, "GET", "/v1/throttling", ``, "read endpoints and throttling settings"},
		{"worker", wk.Secret, "GET", "/v1/density", ``, "read the density series"},
		{"worker", wk.Secret, "GET", "/v1/jobs/j/explain", ``, "read jobs"},
		{"submitter", sub.Secret, "POST", "/v1/workers", `{"name":"w1"}`, ""},
		{"submitter", sub.Secret, "POST", "/v1/workers/w1/lease", `{}`, ""},
		{"submitter", sub.Secret, "POST", "/v1/workers/w1/reports", `{"reports":[]}`, ""},
		{"submitter", sub.Secret, "POST", "/v1/workers/w1/heartbeat", ``, ""},
		{"submitter", sub.Secret, "POST", "/v1/workers/w1/state", `{"state":"disabled"}`, ""},
		{"submitter", sub.Secret, "PUT", "/v1/queues/batch/policy", `{"kind":"fifo"}`, ""},
		{"submitter", sub.Secret, "POST", "/v1/tokens", `{"role":"admin"}`, ""},
		{"submitter", sub.Secret, "GET", "/v1/tokens", ``, ""},
		{"submitter", sub.Secret, "DELETE", "/v1/tokens/" + wk.ID, ``, ""},
		{"worker", wk.Secret, "POST", "/v1/jobs", "id: j\ntasks: [{name: x, run: 'true'}]\n", ""},
		{"worker", wk.Secret, "GET", "/v1/jobs", ``, ""},
		{"worker", wk.Secret, "GET", "/v1/events", ``, ""},
		{"worker", wk.Secret, "GET", "/v1/workers", ``, ""},
		{"worker", wk.Secret, "GET", "/v1/queues", ``, ""},
		{"worker", wk.Secret, "POST", "/v1/workers/w1/state", `{"state":"disabled"}`, ""},
		{"worker", wk.Secret, "PUT", "/v1/queues/batch/policy", `{"kind":"fifo"}`, ""},
		{"worker", wk.Secret, "GET", "/v1/tokens", ``, ""},
		{"submitter", sub.Secret, "POST", "/v1/workers/w1/output", `{"chunks":[]}`, ""},
		{"worker", wk.Secret, "GET", "/v1/jobs/j", ``, ""},
		{"worker", wk.Secret, "GET", "/v1/jobs/j/logs", ``, ""},
		{"worker", wk.Secret, "GET", "/v1/usage", ``, ""},
		{"worker", wk.Secret, "POST", "/v1/jobs/bulk", "id: j\ntasks: [{name: x, run: 'true'}]\n", ""},
		{"worker", wk.Secret, "POST", "/v1/jobs/j/cancel", ``, ""},
		{"worker", wk.Secret, "POST", "/v1/jobs/j/requeue", ``, ""},
		{"worker", wk.Secret, "POST", "/v1/jobs/j/tasks/x/requeue", ``, ""},
		{"worker", wk.Secret, "POST", "/v1/jobs/j/tasks/x/cancel", ``, ""},
		{"worker", wk.Secret, "POST", "/v1/jobs/j/priority", `{"priority":1}`, ""},
		{"worker", wk.Secret, "POST", "/v1/jobs/j/hold", ``, ""},
		{"worker", wk.Secret, "POST", "/v1/jobs/j/release", ``, ""},
		{"worker", wk.Secret, "POST", "/v1/jobs/j/resources", `{"cpu":"1"}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.who+"/"+tc.method+tc.path, func(t *testing.T) {
			status, eb, raw, _ := s.as(t, tc.token, tc.method, tc.path, tc.body)
			if status != 403 || eb.Error.Code != api.CodeForbidden || !strings.Contains(eb.Error.Message, "a "+tc.who+" token may not "+tc.action) {
				t.Fatalf("%d %s, want 403 forbidden saying a %s may not %s", status, raw, tc.who, tc.action)
			}
		})
	}
	if ids := s.jobIDs(t); len(ids) != 0 {
		t.Errorf("jobs stored: %v", ids)
	}
	var ws []api.Worker
	s.must(t, 200, s.admin, "GET", "/v1/workers", "", &ws)
	if len(ws) != 1 || ws[0].State != "ready" {
		t.Errorf("workers %+v, want w1 ready and untouched", ws)
	}
}

func TestWorkerTokenActsOnlyForItsOwnWorkers(t *testing.T) {
	s := newAuthServer(t, "batch")
	gpu := s.token(t, api.CreateToken{Role: "worker", Workers: []string{"gpu-*"}})
	s.must(t, 200, gpu.Secret, "POST", "/v1/workers", `{"name":"gpu-1","slots":2}`, nil)
	s.must(t, 200, gpu.Secret, "POST", "/v1/workers/gpu-1/lease", `{}`, nil)
	s.must(t, 204, gpu.Secret, "POST", "/v1/workers/gpu-1/heartbeat", ``, nil)
	s.must(t, 204, gpu.Secret, "POST", "/v1/workers/gpu-1/reports", `{"reports":[]}`, nil)
	// cpu-1 exists (the admin registered it); the gpu token may not act for it.
	s.must(t, 200, s.admin, "POST", "/v1/workers", `{"name":"cpu-1"}`, nil)
	for _, rt := range []struct{ method, path, body string }{
		{"POST", "/v1/workers", `{"name":"cpu-2"}`},
		{"POST", "/v1/workers", `{"name":"cpu-1","slots":8}`},
		{"POST", "/v1/workers/cpu-1/lease", `{}`},
		{"POST", "/v1/workers/cpu-1/heartbeat", ``},
		{"POST", "/v1/workers/cpu-1/reports", `{"reports":[{"job":"j","task":"t","attempt":1,"exitCode":0}]}`},
	} {
		status, eb, raw, _ := s.as(t, gpu.Secret, rt.method, rt.path, rt.body)
		if status != 403 || eb.Error.Field != "name" || !strings.Contains(eb.Error.Message, `(allowed: gpu-*)`) {
			t.Errorf("%s %s: %d %s, want 403 naming the worker name", rt.method, rt.path, status, raw)
		}
	}
	var ws []api.Worker
	s.must(t, 200, s.admin, "GET", "/v1/workers", "", &ws)
	if len(ws) != 2 || ws[0].Name != "cpu-1" || ws[0].Slots != 1 || ws[1].Name != "gpu-1" {
		t.Errorf("workers %+v, want cpu-1 (unchanged, 1 slot) and gpu-1", ws)
	}
}

// The worker token is not enough to report: a report must carry the
// secret issued with its attempt, or it is refused with 403 and the
// attempt keeps running without a result.
func TestReportWithTheWorkerTokenButNotTheAttemptsSecretIsForbidden(t *testing.T) {
	s := newAuthServer(t, "batch")
	w := s.token(t, api.CreateToken{Role: "worker", Workers: []string{"w1"}})
	s.must(t, 200, w.Secret, "POST", "/v1/workers", `{"name":"w1","slots":1,"resources":{"cpu":"1","memory":"1Gi"}}`, nil)
	s.must(t, 201, s.admin, "POST", "/v1/jobs", `{"id":"victim","queue":"batch","tasks":[{"name":"t","run":"true"}]}`, nil)
	var l api.Lease
	s.must(t, 200, w.Secret, "POST", "/v1/workers/w1/lease", `{}`, &l)
	if len(l.Assignments) != 1 || l.Assignments[0].Secret == "" {
		t.Fatalf("lease %+v, want one assignment with a secret", l)
	}
	a := l.Assignments[0]
	for _, secret := range []string{"", "guessed"} {
		body, _ := json.Marshal(api.Reports{Reports: []api.Report{{Attempt: a.Attempt, Secret: secret, Result: json.RawMessage(`{"forged":true}`)}}})
		status, eb, raw, _ := s.as(t, w.Secret, "POST", "/v1/workers/w1/reports", string(body))
		if status != 403 || eb.Error.Code != api.CodeForbidden || !strings.Contains(eb.Error.Message, "secret") {
			t.Errorf("report with secret %q: %d %s, want 403 forbidden naming the secret", secret, status, raw)
		}
	}
	var j api.Job
	s.must(t, 200, s.admin, "GET", "/v1/jobs/victim", "", &j)
	if j.Tasks[0].State != "running" || len(j.Tasks[0].Result) != 0 {
		t.Errorf("after forged reports the task is %s with result %s, want running without one", j.Tasks[0].State, j.Tasks[0].Result)
	}
	body, _ := json.Marshal(api.Reports{Reports: []api.Report{{Attempt: a.Attempt, Secret: a.Secret}}})
	s.must(t, 204, w.Secret, "POST", "/v1/workers/w1/reports", string(body), nil)
}

func TestAdminManagesTokensAndSecretsAreShownOnce(t *testing.T) {
	s := newAuthServer(t, "batch")
	status, eb, raw, _ := s.as(t, s.admin, "POST", "/v1/tokens", `{"role":"submitter","queues":["batch"]}`)
	if status != 400 || eb.Error.Field != "shares" {
		t.Fatalf("a submitter token without shares: %d %s, want 400 naming shares", status, raw)
	}
	if status, eb, raw, _ = s.as(t, s.admin, "POST", "/v1/tokens", `{"role":"admin","colour":"red"}`); status != 400 || eb.Error.Field != "colour" {
		t.Fatalf("unknown field: %d %s", status, raw)
	}
	nt := s.token(t, api.CreateToken{Name: "alice", Role: "submitter", Queues: []string{"batch"}, Shares: []string{"research"},
		ExpiresIn: new(spec.Duration(720 * time.Hour))})
	if !auth.WellFormed(nt.Secret) || nt.ID == "" || nt.Expires == nil || nt.Expires.Sub(nt.Created) != 720*time.Hour {
		t.Fatalf("created %+v", nt)
	}
	s.must(t, 201, nt.Secret, "POST", "/v1/jobs", "id: a\nqueue: batch\nshare: research\ntasks: [{name: x, run: 'true'}]\n", nil)

	_, _, raw, _ = s.as(t, s.admin, "GET", "/v1/tokens", "")
	if bytes.Contains(raw, []byte(nt.Secret)) || bytes.Contains(raw, []byte(s.admin)) || bytes.Contains(raw, []byte(`"secret"`)) ||
		bytes.Contains(raw, []byte(`"hash"`)) {
		t.Fatalf("the token list shows secrets or hashes: %s", raw)
	}
	var list []api.Token
	_ = json.Unmarshal(raw, &list)
	if len(list) != 2 || list[1].ID != nt.ID || list[1].Name != "alice" || list[1].Shares[0] != "research" {
		t.Fatalf("list %s", raw)
	}

	var revoked api.Token
	s.must(t, 200, s.admin, "DELETE", "/v1/tokens/"+nt.ID, "", &revoked)
	if revoked.Revoked == nil {
		t.Errorf("revoke answered %+v without a revocation time", revoked)
	}
	if status, _, raw, _ := s.as(t, nt.Secret, "GET", "/v1/jobs", ""); status != 401 {
		t.Errorf("the request right after the revocation: %d %s, want 401", status, raw)
	}
	s.must(t, 200, s.admin, "DELETE", "/v1/tokens/"+nt.ID, "", nil) // again: harmless
	if status, eb, _, _ := s.as(t, s.admin, "DELETE", "/v1/tokens/tok-nope", ""); status != 404 || eb.Error.Code != api.CodeNotFound {
		t.Errorf("revoking an unknown token: %d %+v", status, eb)
	}

	// The last usable admin token cannot be revoked; once there is another, it can.
	var toks []api.Token
	s.must(t, 200, s.admin, "GET", "/v1/tokens", "", &toks)
	first := toks[0].ID
	if status, eb, raw, _ := s.as(t, s.admin, "DELETE", "/v1/tokens/"+first, ""); status != 409 || eb.Error.Code != api.CodeConflict {
		t.Fatalf("revoking the last admin token: %d %s, want 409", status, raw)
	}
	second := s.token(t, api.CreateToken{Role: "admin", Name: "second"})
	s.must(t, 200, second.Secret, "DELETE", "/v1/tokens/"+first, "", nil)
	if status, _, _, _ := s.as(t, s.admin, "GET", "/v1/tokens", ""); status != 401 {
		t.Errorf("the revoked bootstrap token still works: %d", status)
	}
}

func TestTokenSecretIsStoredOnlyAsItsHash(t *testing.T) {
	s := newAuthServer(t)
	nt := s.token(t, api.CreateToken{Role: "worker", Workers: []string{"w-*"}})
	db, err := sql.Open("sqlite", s.dbPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT * FROM tokens`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var hashes [][]byte
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			var b []byte
			switch v := v.(type) {
			case []byte:
				b = v
			case string:
				b = []byte(v)
			}
			for _, secret := range []string{nt.Secret, s.admin} {
				if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte(secret[len(auth.SecretPrefix):])) {
					t.Errorf("column %s holds a secret in plain text", cols[i])
				}
			}
			if cols[i] == "hash" {
				hashes = append(hashes, b)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256([]byte(nt.Secret))
	found := false
	for _, h := range hashes {
		found = found || bytes.Equal(h, want[:])
	}
	if len(hashes) != 2 || !found {
		t.Errorf("hash column %x does not hold SHA-256 of the new secret %x", hashes, want)
	}
	// Nor anywhere in the files: the database and its write-ahead log.
	for _, f := range []string{s.dbPath, s.dbPath + "-wal"} {
		raw, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte(nt.Secret[len(auth.SecretPrefix):])) {
			t.Errorf("%s holds the secret in plain text", filepath.Base(f))
		}
	}
}

func TestRevokedTokenEndsItsEventStream(t *testing.T) {
	s := newAuthServer(t, "batch")
	sub := s.token(t, api.CreateToken{Role: "submitter", Queues: []string{"*"}, Shares: []string{"*"}})
	req, _ := http.NewRequest("GET", s.URL+"/v1/events?follow=1", nil)
	req.Header.Set("Authorization", "Bearer "+sub.Secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	ended := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, resp.Body)
		close(ended)
	}()
	s.must(t, 200, s.admin, "DELETE", "/v1/tokens/"+sub.ID, "", nil)
	// The next event wakes the stream, which finds its token revoked.
	s.must(t, 201, s.admin, "POST", "/v1/jobs", "id: wake\nqueue: batch\ntasks: [{name: x, run: 'true'}]\n", nil)
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the event stream of a revoked token is still open")
	}
}

// The store interface is what the API needs; sqlite must satisfy it.
var _ auth.TokenStore = store.Store(nil)

// A written expiresIn counts: 0 is no lifetime, refused naming the field,
// never taken as "never expires" (that is expiresIn left out).
func TestTokenExpiresInOfZeroIsRefused(t *testing.T) {
	s := newAuthServer(t, "batch")
	for _, body := range []string{`{"role":"admin","expiresIn":"0s"}`, `{"role":"admin","expiresIn":"0"}`,
		`{"role":"admin","expiresIn":0}`, `{"role":"admin","expiresIn":"-1s"}`} {
		if status, eb, raw, _ := s.as(t, s.admin, "POST", "/v1/tokens", body); status != 400 || eb.Error.Field != "expiresIn" {
			t.Errorf("%s: %d %s, want 400 naming expiresIn", body, status, raw)
		}
	}
	var never api.NewToken
	s.must(t, 201, s.admin, "POST", "/v1/tokens", `{"role":"admin","name":"forever"}`, &never)
	if never.Expires != nil {
		t.Errorf("a token without expiresIn expires at %v, want never", never.Expires)
	}
	var toks []api.Token
	s.must(t, 200, s.admin, "GET", "/v1/tokens", "", &toks)
	if len(toks) != 2 {
		t.Errorf("%d tokens, want the bootstrap one and forever: %+v", len(toks), toks)
	}
}
