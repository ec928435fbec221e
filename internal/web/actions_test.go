package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/web"
)

// browserLike makes dashboard requests as a logged-in browser does: the
// login cookie, and the Origin of the dashboard on posts.
type browserLike struct {
	t      *testing.T
	f      *fixture
	secret string
	origin string
}

func (b browserLike) do(method, path string, form url.Values) (int, string, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.f.srv.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", b.origin)
	}
	if b.secret != "" {
		req.AddCookie(&http.Cookie{Name: web.CookieName, Value: b.secret})
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(raw)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// csrf reads the form token from a page, as the browser posts it.
func (b browserLike) csrf(path string) string {
	b.t.Helper()
	status, _, body := b.do("GET", path, nil)
	m := csrfField.FindStringSubmatch(body)
	if status != 200 || m == nil {
		b.t.Fatalf("GET %s: %d, no form token in the page", path, status)
	}
	return m[1]
}

// The dashboard's forms are API calls made with the visitor's token: a
// submitter holds, releases, reprioritises and cancels its own jobs only
// and changes no worker; an admin drains, disables and readies workers;
// a form without the visitor's token, or from another site, is refused.
func TestActionsGoThroughTheAPIWithTheVisitorsToken(t *testing.T) {
	f := newFixture(t, true)
	f.register("node-1", 2, `{"cpu":"4","memory":"8Gi"}`, nil)
	var alice api.NewToken
	f.must(201, "POST", "/v1/tokens", `{"name":"alice","role":"submitter","queues":["*"],"shares":["research"]}`, &alice)
	f.must(201, "POST", "/v1/jobs", "id: theirs\nqueue: batch\nshare: ops\ntasks: [{name: x, run: 'true'}]\n", nil)
	status, body := f.callAs(alice.Secret, "POST", "/v1/jobs", "id: mine\nqueue: batch\nshare: research\npriority: 0\ntasks: [{name: x, run: 'true'}]\n")
	if status != 201 {
		t.Fatalf("submit as alice: %d %s", status, body)
	}
	as := browserLike{t: t, f: f, secret: alice.Secret, origin: f.srv.URL}
	token := as.csrf("/jobs/mine")
	job := func(id string) api.Job {
		var j api.Job
		f.must(200, "GET", "/v1/jobs/"+id, "", &j)
		return j
	}

	if status, loc, body := as.do("POST", "/jobs/mine/hold", url.Values{"csrf": {token}}); status != 303 || loc != "/jobs/mine" {
		t.Fatalf("hold: %d to %q: %s", status, loc, body)
	}
	if j := job("mine"); j.HeldBy != "alice" {
		t.Fatalf("after the hold form the job is held by %q, want alice", j.HeldBy)
	}
	if _, _, page := as.do("GET", "/jobs/mine", nil); !strings.Contains(pageText(page), "Held by alice") || !strings.Contains(page, `id="release"`) {
		t.Errorf("the held job's page shows no holder or no release button")
	}
	if _, _, page := as.do("GET", "/jobs", nil); !strings.Contains(page, `title="held by alice">held</span>`) {
		t.Errorf("the job list does not mark the held job")
	}
	if status, _, _ := as.do("POST", "/jobs/mine/release", url.Values{"csrf": {token}}); status != 303 || job("mine").HeldBy != "" {
		t.Fatalf("release: %d, held by %q", status, job("mine").HeldBy)
	}
	if status, _, body := as.do("POST", "/jobs/mine/priority", url.Values{"csrf": {token}, "priority": {"0"}, "urgent": {"1"}}); status != 403 ||
		!strings.Contains(body, "urgent") {
		t.Errorf("urgent beyond alice's token limits: %d, want the API's 403 naming urgent", status)
	}
	if status, _, body := as.do("POST", "/jobs/mine/priority", url.Values{"csrf": {token}, "priority": {"lots"}}); status != 400 ||
		!strings.Contains(body, "whole number") {
		t.Errorf("priority lots: %d, want 400", status)
	}

	// Resources, while no task of the job has started.
	status, body = f.callAs(alice.Secret, "POST", "/v1/jobs", "id: big\nqueue: batch\nshare: research\ntasks: [{name: x, count: 2, run: 'true', resources: {cpu: 64}}]\n")
	if status != 201 {
		t.Fatalf("submit big: %d %s", status, body)
	}
	if _, _, page := as.do("GET", "/jobs/big", nil); !strings.Contains(page, `id="set-resources"`) {
		t.Error("a pending job's page offers no resources form")
	}
	if status, _, body := as.do("POST", "/jobs/big/resources", url.Values{"csrf": {token}, "cpu": {"2"}, "memory": {""}, "gpus": {"0"}}); status != 303 {
		t.Fatalf("resources: %d %s", status, body)
	}
	if r := job("big").Spec.Tasks[0].Resources; r.CPU != 2000 || r.GPUs != 0 {
		t.Errorf("after the resources form the job asks for %+v, want 2 CPUs", r)
	}
	if status, _, body := as.do("POST", "/jobs/big/resources", url.Values{"csrf": {token}, "cpu": {"lots"}}); status != 400 || !strings.Contains(body, "cpu") {
		t.Errorf("cpu lots: %d, want the API's 400 naming cpu", status)
	}

	// Another team's job: the API answers it as missing, and nothing changes.
	if status, _, _ := as.do("POST", "/jobs/theirs/hold", url.Values{"csrf": {token}}); status != 404 || job("theirs").HeldBy != "" {
		t.Errorf("alice holding another team's job: %d, held by %q; want 404 and no hold", status, job("theirs").HeldBy)
	}
	if status, _, _ := as.do("POST", "/workers/node-1/state", url.Values{"csrf": {token}, "state": {"draining"}}); status != 403 {
		t.Errorf("alice draining a worker: %d, want the API's 403", status)
	}

	// Forms the visitor's page did not make.
	for name, form := range map[string]url.Values{
		"no token":      {},
		"another token": {"csrf": {strings.Repeat("0", 32)}},
	} {
		if status, _, _ := as.do("POST", "/jobs/mine/hold", form); status != 403 || job("mine").HeldBy != "" {
			t.Errorf("%s: %d, want 403 and no hold", name, status)
		}
	}
	foreign := as
	foreign.origin = "https://evil.example"
	if status, _, _ := foreign.do("POST", "/jobs/mine/hold", url.Values{"csrf": {token}}); status != 403 || job("mine").HeldBy != "" {
		t.Errorf("a form from another site: %d, want 403 and no hold", status)
	}
	loggedOut := as
	loggedOut.secret = ""
	if status, loc, _ := loggedOut.do("POST", "/jobs/mine/hold", url.Values{"csrf": {token}}); status != 303 || !strings.HasPrefix(loc, "/login") {
		t.Errorf("a form without a login: %d to %q, want the login page", status, loc)
	}

	admin := browserLike{t: t, f: f, secret: f.admin, origin: f.srv.URL}
	adminToken := admin.csrf("/workers")
	if adminToken == token {
		t.Error("two logins share a form token")
	}
	for _, state := range []string{"draining", "disabled", "ready"} {
		status, loc, body := admin.do("POST", "/workers/node-1/state", url.Values{"csrf": {adminToken}, "state": {state}})
		if status != 303 || loc != "/workers" {
			t.Fatalf("admin sets node-1 %s: %d to %q: %s", state, status, loc, body)
		}
		var ws []api.Worker
		f.must(200, "GET", "/v1/workers", "", &ws)
		for _, w := range ws {
			if w.Name == "node-1" && w.State != state {
				t.Errorf("after the %s form node-1 is %s", state, w.State)
			}
		}
	}
	if _, _, page := as.do("GET", "/workers", nil); strings.Contains(page, `action="/workers/`) {
		t.Error("a submitter's workers page offers worker actions")
	}
	if status, _, _ := as.do("POST", "/jobs/mine/cancel", url.Values{"csrf": {token}}); status != 303 || job("mine").State != "cancelled" {
		t.Errorf("cancel: %d, state %s", status, job("mine").State)
	}
	if _, _, page := as.do("GET", "/jobs/mine", nil); strings.Contains(page, `id="actions"`) {
		t.Error("an ended job's page still offers actions")
	}
}

// An endpoint whose capacity was cut below what its admitted jobs hold
// runs over 100%: its bars show it as over, not as a full bar.
func TestEndpointBarsShowOverCapacity(t *testing.T) {
	f := newFixture(t, false)
	f.register("node-1", 4, `{"cpu":"8","memory":"8Gi"}`, nil)
	for i := range 2 {
		f.must(201, "POST", "/v1/jobs", fmt.Sprintf("id: detect-%d\nqueue: batch\nendpoint: detector\nload: 2\ntasks: [{name: r, run: 'true'}]\n", i), nil)
	}
	f.advance(10 * time.Second)
	f.must(200, "PUT", "/v1/endpoints/detector", `{"type":"instance-backed","instanceConcurrency":1,"variants":[{"name":"current","weight":70,"instances":1},{"name":"candidate","weight":30,"instances":1}]}`, nil)
	f.advance(10 * time.Second)
	st := f.ctrl.Snapshot().Endpoints
	if len(st) != 1 || st[0].Utilization <= 100 {
		t.Fatalf("the endpoint is not over capacity: %+v", st)
	}
	for _, path := range []string{"/endpoints", "/"} {
		status, body := f.call("GET", path, "")
		if status != 200 {
			t.Fatalf("GET %s: %d", path, status)
		}
		text := pageText(body)
		want := fmt.Sprintf("%.0f%% — over capacity", st[0].Utilization)
		if path == "/" {
			want = fmt.Sprintf("%.0f%% over", st[0].Utilization)
		}
		if !strings.Contains(text, want) {
			t.Errorf("GET %s lacks %q", path, want)
		}
		if path == "/endpoints" && !strings.Contains(body, `class="fill util over" style="width: 100.0%"`) {
			t.Errorf("GET %s: the endpoint's bar is not drawn full and over", path)
		}
	}
}
