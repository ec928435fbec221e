package web_test

import (
	"context"
	"encoding/xml"
	"fmt"
	htmlpkg "html"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/web"
)

// expectations lists, per page, text it must show, read from the control
// plane itself (the snapshot, the worker list, the job) rather than written
// down, so the tests check the pages against the scheduler. Table rows read
// as their cells' text separated by single spaces (see pageText).
func expectations(t *testing.T, f *fixture) map[string][]string {
	t.Helper()
	snap := f.ctrl.Snapshot()
	want := map[string][]string{}

	overview := []string{"build", "batch", "classload", "Running slots against target"}
	targets, pendingJobs := 0, map[string]bool{}
	for _, g := range snap.Groups {
		tg := "—"
		if g.Target >= 0 {
			tg = fmt.Sprint(g.Target)
			targets++
		}
		overview = append(overview, fmt.Sprintf("%s %d %s %d", g.Group, g.Running, tg, g.Waiting))
	}
	if targets == 0 {
		t.Fatalf("the scenario left no group with a target: %+v", snap.Groups)
	}
	for _, s := range []string{"ready", "draining", "disabled"} {
		if snap.Workers[s] == 0 {
			t.Fatalf("the scenario left no %s worker: %v", s, snap.Workers)
		}
		overview = append(overview, fmt.Sprintf("%s %d", s, snap.Workers[s]))
	}
	// The overview's counts are the snapshot's; they must be what the
	// jobs' own task states add up to.
	ctx := context.Background()
	live, err := f.ctrl.Jobs(ctx, store.JobFilter{States: []string{"pending", "running"}, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	waiting, waitingOf, ids := 0, map[string]int{}, []string{}
	for _, lj := range live.Jobs {
		j, err := f.ctrl.Job(ctx, lj.ID)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
		if n := j.Counts["ready"] + j.Counts["blocked"]; n > 0 {
			pendingJobs[j.ID] = true
			waiting += n
			waitingOf[j.ID] = n
		}
	}
	if snap.Pending.Jobs != len(pendingJobs) || snap.Pending.Tasks != waiting {
		t.Fatalf("the snapshot counts %d waiting tasks in %d jobs; the jobs have %d in %d", snap.Pending.Tasks, snap.Pending.Jobs, waiting, len(pendingJobs))
	}
	want["/"] = append(overview, fmt.Sprintf("%d jobs %d waiting tasks, %d in the ready queue", len(pendingJobs), waiting, snap.ReadyTasks))

	var workers []api.Worker
	f.must(200, "GET", "/v1/workers", "", &workers)
	wl := []string{"8 CPU, 32Gi memory, 1 GPU × 24Gi", "zone=eu-1"}
	running, err := f.ctrl.RunningTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	busy := 0
	for _, w := range workers {
		wl = append(wl, fmt.Sprintf("%s %s %d %d", w.Name, w.State, w.Slots, w.Running))
		// Each running task is listed on its worker, and the CPU its
		// tasks ask for is summed against the worker's.
		var cpu int64
		for _, rt := range running[w.Name] {
			wl = append(wl, rt.Job+"/"+rt.Task)
			cpu += rt.Resources.MilliCPU
		}
		if len(running[w.Name]) != w.Running {
			t.Errorf("worker %s runs %d tasks, RunningTasks lists %d", w.Name, w.Running, len(running[w.Name]))
		}
		if w.Resources.CPU > 0 {
			wl = append(wl, fmt.Sprintf("CPU %s / %s", strconv.FormatFloat(float64(cpu)/1000, 'f', -1, 64), strconv.FormatFloat(float64(w.Resources.CPU)/1000, 'f', -1, 64)))
		}
		busy += w.Running
	}
	if busy == 0 {
		t.Fatal("the scenario left no worker running a task")
	}
	want["/workers"] = wl

	if len(pendingJobs) == 0 {
		t.Fatal("the scenario left no pending job")
	}
	reasons, err := f.ctrl.PendingOf(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for id, ps := range reasons {
		n := 0
		for _, p := range ps {
			plural := "s"
			if p.Tasks == 1 {
				plural = ""
			}
			jobs = append(jobs, p.Job+" ", fmt.Sprintf("%s %d task%s: %s", p.Reason.Code, p.Tasks, plural, p.Reason.Message))
			n += p.Tasks
		}
		if n != waitingOf[id] {
			t.Errorf("job %s: the reasons cover %d tasks, the job has %d waiting", id, n, waitingOf[id])
		}
	}
	if len(reasons) != len(pendingJobs) {
		t.Errorf("reasons for %d jobs, %d jobs have waiting tasks", len(reasons), len(pendingJobs))
	}
	for _, lj := range live.Jobs {
		j, err := f.ctrl.Job(ctx, lj.ID) // the list has no counts; the job has
		if err != nil {
			t.Fatal(err)
		}
		ended := j.Counts["succeeded"] + j.Counts["failed"] + j.Counts["cancelled"]
		total := 0
		for _, n := range j.Counts {
			total += n
		}
		if total == 0 {
			t.Fatalf("job %s counts no task", j.ID)
		}
		jobs = append(jobs, fmt.Sprintf("%s %s %d %d/%d ended", j.Submitter, j.State, j.Priority, ended, total))
	}
	want["/jobs"] = jobs

	var pipeline api.Job
	f.must(200, "GET", "/v1/jobs/pipeline", "", &pipeline)
	dag := []string{"Queue build", "requestor team-a"}
	for _, tk := range pipeline.Tasks {
		row := tk.Name + " " + tk.State
		if len(tk.Needs) > 0 {
			row += " " + strings.Join(tk.Needs, ", ")
		}
		dag = append(dag, row)
		if tk.Reason != nil {
			dag = append(dag, tk.Reason.Code+" "+tk.Reason.Message)
		}
	}
	want["/jobs/pipeline"] = dag

	// An endpoint job's page names its endpoint, variant and load, and
	// explains why it waits.
	var detect api.Job
	f.must(200, "GET", "/v1/jobs/detect-4", "", &detect)
	if detect.Admission == nil || detect.Admission.Variant == "" {
		t.Fatalf("detect-4 has no admission: %+v", detect.Admission)
	}
	var x api.Explanation
	f.must(200, "GET", "/v1/jobs/detect-4/explain", "", &x)
	if len(x.Pending) == 0 {
		t.Fatal("detect-4 has nothing to explain")
	}
	want["/jobs/detect-4"] = []string{
		fmt.Sprintf("Endpoint detector · variant %s · load %d (%s) · admission %s", detect.Admission.Variant, detect.Admission.Load, detect.Admission.LoadSource, detect.Admission.State),
		"Why it waits", x.Pending[0].Reason.Code + " " + x.Pending[0].Reason.Message, "Hold", "Set priority", "Cancel job",
	}

	if len(snap.Endpoints) == 0 {
		t.Fatal("the scenario left no endpoint stats")
	}
	var ep []string
	for _, e := range snap.Endpoints {
		ep = append(ep, fmt.Sprintf("%s %s %.0f%% (target %.0f%%) %d / %d / %d", e.Endpoint, e.Type, e.Utilization,
			100*float64(e.TargetCapacity)/float64(e.MaxCapacity), e.Load, e.TargetCapacity, e.MaxCapacity))
		for _, v := range e.Variants {
			ep = append(ep, fmt.Sprintf("↳ %s weight %g %.0f%% %d / %d / %d %d %d %d %d %d", v.Variant, v.Weight, v.Utilization,
				v.Load, v.TargetCapacity, v.MaxCapacity, v.Available, v.RunningJobs, v.Visible, v.Buffered, v.Throttles))
		}
	}
	want["/endpoints"] = ep
	return want
}

var (
	tags  = regexp.MustCompile(`(?s)<script.*?</script>|<[^>]*>`)
	space = regexp.MustCompile(`\s+`)
)

// pageText is what a page reads as: its text without tags, entities
// decoded, whitespace runs made one space — as a browser's innerText with
// its whitespace collapsed the same way.
func pageText(html string) string {
	return normalise(htmlpkg.UnescapeString(tags.ReplaceAllString(html, " ")))
}

func normalise(s string) string { return space.ReplaceAllString(s, " ") }

func TestEveryPageShowsWhatTheControlPlaneReports(t *testing.T) {
	f := newFixture(t, false)
	f.scenario()
	for path, wants := range expectations(t, f) {
		t.Run(path, func(t *testing.T) {
			status, body := f.call("GET", path, "")
			if status != 200 {
				t.Fatalf("GET %s: %d %s", path, status, body)
			}
			text := pageText(body)
			for _, w := range wants {
				if !strings.Contains(text, w) {
					t.Errorf("GET %s lacks %q", path, w)
				}
			}
			if strings.Contains(body, "ZgotmplZ") {
				t.Errorf("GET %s: a template value was refused by html/template (ZgotmplZ)", path)
			}
		})
	}
}

func TestOverviewChartDrawsRunningAndTargetPerGroup(t *testing.T) {
	f := newFixture(t, false)
	f.scenario()
	snap := f.ctrl.Snapshot()
	if len(snap.History) < 5 {
		t.Fatalf("history has %d samples, want several", len(snap.History))
	}
	_, body := f.call("GET", "/", "")
	chart := body[strings.Index(body, `<svg class="chart"`):]
	chart = chart[:strings.Index(chart, "</svg>")]
	for _, g := range snap.Groups {
		key := g.Queue + "/" + g.Group
		if !strings.Contains(chart, "<title>"+key+" running</title>") {
			t.Errorf("no running line for %s", key)
		}
		if hasTarget := strings.Contains(chart, "<title>"+key+" target</title>\n    <polyline"); hasTarget != (g.Target >= 0) {
			t.Errorf("%s: target line drawn %v, target %d", key, hasTarget, g.Target)
		}
	}
	if n := strings.Count(chart, `class="series dashed"`); n == 0 {
		t.Error("no dashed target series")
	}
}

func TestLiveRefreshAnswersOnlyTheLivePart(t *testing.T) {
	f := newFixture(t, false)
	for _, path := range []string{"/", "/workers", "/jobs", "/endpoints"} {
		req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
		req.Header.Set("HX-Request", "true")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(b)
		if resp.StatusCode != 200 || !strings.HasPrefix(strings.TrimSpace(body), `<div id="live" hx-get="`+path+`" hx-trigger="every 5s"`) || strings.Contains(body, "<html") {
			t.Errorf("htmx GET %s: %d, want the live part alone:\n%.300s", path, resp.StatusCode, body)
		}
	}
}

func TestPagesEscapeWhatUsersWrote(t *testing.T) {
	f := newFixture(t, false)
	const evil = `<script>alert("x")</script>`
	f.register("node-x", 1, `{"cpu":"1"}`, map[string]string{"note": evil})
	f.must(201, "POST", "/v1/jobs", "id: evil\nqueue: batch\nrequestor: '"+evil+"'\nshare: '"+evil+"'\ntasks:\n  - {name: t, run: 'true'}\n", nil)
	f.advance(5_000_000_000)
	for _, path := range []string{"/workers", "/jobs/evil", "/jobs?state=" + url.QueryEscape(evil), "/jobs/" + url.PathEscape(evil)} {
		_, body := f.call("GET", path, "")
		if strings.Contains(body, evil) || strings.Contains(body, "<script>alert") {
			t.Errorf("GET %s shows user input unescaped", path)
		}
	}
	_, body := f.call("GET", "/workers", "")
	if !strings.Contains(body, htmlpkg.EscapeString(evil)) {
		t.Errorf("GET /workers lacks the escaped label %q", htmlpkg.EscapeString(evil))
	}
	status, body := f.call("GET", "/jobs?state="+url.QueryEscape(evil), "")
	if status != 400 || !strings.Contains(body, "unknown job state") {
		t.Errorf("a bad state filter: %d, want 400 naming the state", status)
	}
}

func TestUnknownJobAndPageAre404AndAPIRoutesKeepPriority(t *testing.T) {
	f := newFixture(t, false)
	cases := []struct {
		path   string
		status int
		has    string
	}{
		{"/jobs/nope", 404, `There is no job &#34;nope&#34;.`},
		{"/nothing", 404, "There is no page /nothing."},
		{"/v1/nothing", 404, `"code": "not_found"`},
		{"/v1/queues", 200, `"name": "build"`},
		{"/healthz", 200, `"status": "ok"`},
		{"/static/htmx.min.js", 200, "htmx"},
		{"/static/style.css", 200, "font"},
	}
	for _, tc := range cases {
		status, body := f.call("GET", tc.path, "")
		if status != tc.status || !strings.Contains(body, tc.has) {
			t.Errorf("GET %s: %d, want %d with %q:\n%.300s", tc.path, status, tc.status, tc.has, body)
		}
	}
}

func TestJobsFilterByQueueAndStateListsWhatTheAPIDoes(t *testing.T) {
	f := newFixture(t, false)
	f.scenario()
	missing := filepath.Join(t.TempDir(), "scene.tif")
	f.must(201, "POST", "/v1/jobs", "id: lost-input\nqueue: batch\ninputs: ["+missing+"]\ntasks: [{name: a, run: 'true'}]\n", nil)
	links := regexp.MustCompile(`<a href="/jobs/([^"]+)">`)
	for _, q := range []string{"", "queue=batch", "queue=build", "state=running", "state=pending", "queue=build&state=pending",
		"state=dead_lettered"} {
		apiPath := "/v1/jobs?" + q
		if !strings.Contains(q, "state=") {
			apiPath += "&state=pending,running" // the page's default
		}
		var list api.JobList
		f.must(200, "GET", apiPath, "", &list)
		var want []string
		for _, j := range list.Jobs {
			want = append(want, j.ID)
		}
		_, body := f.call("GET", "/jobs?"+q, "")
		var got []string
		for _, m := range links.FindAllStringSubmatch(body, -1) {
			got = append(got, m[1])
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("/jobs?%s lists %v, the API %v", q, got, want)
		}
		if q == "state=dead_lettered" && strings.Join(got, " ") != "lost-input" {
			t.Errorf("/jobs?%s lists %v, want the dead-lettered job", q, got)
		}
	}
}

// authTokens creates a submitter token for the batch queue and a worker
// token besides the admin's.
func authTokens(t *testing.T, f *fixture) (submitter, worker string) {
	t.Helper()
	var nt api.NewToken
	f.must(201, "POST", "/v1/tokens", `{"name":"alice","role":"submitter","queues":["batch"],"shares":["*"]}`, &nt)
	submitter = nt.Secret
	f.must(201, "POST", "/v1/tokens", `{"name":"agent","role":"worker","workers":["*"]}`, &nt)
	return submitter, nt.Secret
}

func TestWithAuthPagesNeedALoginAndTheCookieServesOnlyTheDashboard(t *testing.T) {
	f := newFixture(t, true)
	submitter, worker := authTokens(t, f)

	// No token: a page sends the browser to the login page; the API
	// answers 401 as before.
	status, _ := f.callAs("", "GET", "/workers", "")
	if status != http.StatusSeeOther {
		t.Fatalf("GET /workers without a token: %d, want 303 to /login", status)
	}
	if status, _ := f.callAs("", "GET", "/v1/workers", ""); status != 401 {
		t.Fatalf("GET /v1/workers without a token: %d, want 401", status)
	}
	if status, body := f.callAs("", "GET", "/login", ""); status != 200 || !strings.Contains(body, `name="token"`) {
		t.Fatalf("GET /login: %d", status)
	}
	if status, _ := f.callAs("", "GET", "/static/style.css", ""); status != 200 {
		t.Fatalf("GET /static/style.css without a token: %d, want 200", status)
	}

	cases := []struct {
		name, token string
		status      int
		cookie      bool
	}{
		{"admin", f.admin, http.StatusSeeOther, true},
		{"submitter", submitter, http.StatusSeeOther, true},
		{"worker token may not read jobs", worker, http.StatusForbidden, false},
		{"unknown token", auth.NewSecret(), http.StatusUnauthorized, false},
		{"malformed token", "hello", http.StatusUnauthorized, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := login(t, f, tc.token, "/workers")
			defer resp.Body.Close()
			var c *http.Cookie
			for _, k := range resp.Cookies() {
				if k.Name == web.CookieName {
					c = k
				}
			}
			if resp.StatusCode != tc.status || (c != nil) != tc.cookie {
				t.Fatalf("login: %d cookie %v, want %d cookie %v", resp.StatusCode, c, tc.status, tc.cookie)
			}
			if !tc.cookie {
				return
			}
			if loc := resp.Header.Get("Location"); loc != "/workers" {
				t.Errorf("login sends to %q, want /workers", loc)
			}
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
				t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/", c)
			}
			if got := withCookie(t, f, "GET", "/workers", c); got != 200 {
				t.Errorf("GET /workers with the cookie: %d, want 200", got)
			}
			// The API never takes the cookie: not for reads, not for writes.
			if got := withCookie(t, f, "GET", "/v1/workers", c); got != 401 {
				t.Errorf("GET /v1/workers with the cookie: %d, want 401", got)
			}
			if got := withCookie(t, f, "POST", "/v1/jobs", c); got != 401 {
				t.Errorf("POST /v1/jobs with the cookie: %d, want 401", got)
			}
		})
	}
}

func TestLoginRefusesAFormFromAnotherSiteAndRedirectsOnlyLocally(t *testing.T) {
	f := newFixture(t, true)
	form := url.Values{"token": {f.admin}, "next": {"//evil.example/x"}}
	req, _ := http.NewRequest("POST", f.srv.URL+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Fatalf("cross-site login: %d %v, want 403 and no cookie", resp.StatusCode, resp.Cookies())
	}
	resp = login(t, f, f.admin, "//evil.example/x")
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "/" {
		t.Fatalf("login with next=//evil.example/x sends to %q, want /", loc)
	}
}

func TestSubmitterSeesOnlyItsJobs(t *testing.T) {
	f := newFixture(t, true)
	submitter, _ := authTokens(t, f)
	f.must(201, "POST", "/v1/jobs", "id: mine\nqueue: batch\ntasks:\n  - {name: t, run: 'true'}\n", nil)
	f.must(201, "POST", "/v1/jobs", "id: theirs\nqueue: build\nrequestor: team-a\ntasks:\n  - {name: t, run: 'true'}\n", nil)
	_, body := f.callAs(submitter, "GET", "/jobs", "")
	if !strings.Contains(body, `href="/jobs/mine"`) || strings.Contains(body, `href="/jobs/theirs"`) {
		t.Errorf("a batch submitter's job list: want mine and not theirs")
	}
	if status, _ := f.callAs(submitter, "GET", "/jobs/theirs", ""); status != 404 {
		t.Errorf("another queue's job page: %d, want 404", status)
	}
	if status, _ := f.callAs(submitter, "GET", "/jobs?queue=build", ""); status != 403 {
		t.Errorf("filtering on a queue the token does not allow: %d, want 403", status)
	}
}

func login(t *testing.T, f *fixture, token, next string) *http.Response {
	t.Helper()
	form := url.Values{"token": {token}, "next": {next}}
	req, _ := http.NewRequest("POST", f.srv.URL+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", f.srv.URL)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func withCookie(t *testing.T, f *fixture, method, path string, c *http.Cookie) int {
	t.Helper()
	body := ""
	if method == "POST" {
		body = "id: x\nqueue: batch\ntasks: [{name: t, run: 'true'}]\n"
	}
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	req.AddCookie(c)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestSVGStaysWellFormedForOddNames(t *testing.T) {
	f := newFixture(t, false)
	f.register("node", 1, `{"cpu":"1"}`, nil)
	const odd = `a"b<c>&d'e`
	f.must(201, "POST", "/v1/jobs", "id: odd\nqueue: fair\nshare: '"+strings.ReplaceAll(odd, "'", "''")+"'\ntasks:\n  - {name: t, count: 2, run: 'true'}\n", nil)
	f.advance(10 * time.Second)
	f.advance(10 * time.Second)
	_, body := f.call("GET", "/", "")
	svgs := regexp.MustCompile(`(?s)<svg class="chart".*?</svg>`).FindAllString(body, -1)
	if len(svgs) == 0 {
		t.Fatal("the overview has no chart")
	}
	for _, svg := range svgs {
		d := xml.NewDecoder(strings.NewReader(svg))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("the chart is not well-formed XML: %v\n%s", err, svg)
			}
		}
	}
	if !strings.Contains(svgs[0], "<title>fair/"+htmlpkg.EscapeString(odd)+" running</title>") &&
		!strings.Contains(svgs[0], "<title>fair/a&#34;b&lt;c&gt;&amp;d&#39;e running</title>") {
		t.Errorf("the chart has no escaped line for share %q:\n%s", odd, svgs[0])
	}
}

func TestBigSystemPagesStayBounded(t *testing.T) {
	f := newFixture(t, false)
	const workers, jobs, tasks = 520, 60, 1010
	for i := range workers {
		f.register(fmt.Sprintf("w%04d", i), 1, `{"cpu":"1"}`, nil)
	}
	for i := range jobs {
		f.must(201, "POST", "/v1/jobs", fmt.Sprintf("id: g%03d\nqueue: grid\ntasks:\n  - {name: t, count: 3, run: 'true'}\n", i), nil)
	}
	f.must(201, "POST", "/v1/jobs", fmt.Sprintf("id: wide\nqueue: batch\ntasks:\n  - {name: t, count: %d, run: 'true'}\n", tasks), nil)
	f.advance(10 * time.Second)
	f.advance(10 * time.Second)

	_, body := f.call("GET", "/workers", "")
	if rows := strings.Count(body, `<span class="badge ws-`); rows != web.MaxWorkerRows {
		t.Errorf("/workers lists %d workers, want %d", rows, web.MaxWorkerRows)
	}
	if want := fmt.Sprintf("%d more are not", workers-web.MaxWorkerRows); !strings.Contains(body, want) {
		t.Errorf("/workers does not say %q", want)
	}
	_, body = f.call("GET", "/", "")
	if want := fmt.Sprintf("%d more are not", jobs-web.MaxGroupRows); !strings.Contains(body, want) {
		t.Errorf("/ does not say %q", want)
	}
	chart := body[strings.Index(body, `<svg class="chart"`):]
	chart = chart[:strings.Index(chart, "</svg>")]
	if lines := strings.Count(chart, " running</title>"); lines != web.MaxChartGroups {
		t.Errorf("the chart draws %d groups, want the %d busiest", lines, web.MaxChartGroups)
	}
	_, body = f.call("GET", "/jobs/wide", "")
	if rows := strings.Count(body, `<tr id="task-`); rows != web.MaxTaskRows || !strings.Contains(body, fmt.Sprintf("%d more are not", tasks-web.MaxTaskRows)) {
		t.Errorf("/jobs/wide lists %d tasks, want %d and a note", rows, web.MaxTaskRows)
	}
}
