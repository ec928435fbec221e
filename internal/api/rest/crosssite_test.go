package rest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// crossSiteCall sends one request with the given headers ("Host" sets the
// request's Host) and returns its status and error.
func crossSiteCall(t *testing.T, srv *httptest.Server, method, path string, header map[string]string, body string) (int, api.Error) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	status, eb := doRequest(t, req)
	return status, eb.Error
}

func doRequest(t *testing.T, req *http.Request) (int, api.ErrorBody) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb api.ErrorBody
	_ = json.NewDecoder(resp.Body).Decode(&eb)
	return resp.StatusCode, eb
}

// A page in a browser can send a "simple" request to any address without
// asking (no CORS preflight): a POST whose Content-Type is text/plain,
// application/x-www-form-urlencoded or multipart/form-data, or none at
// all. A JSON job in such a body must not run, with or without
// authentication: the API reads only the media types it parses.
func TestTheAPIRefusesBodiesOfMediaTypesItDoesNotParse(t *testing.T) {
	srv := newServer(t, 0)
	job := func(id string) string {
		return `{"id":"` + id + `","queue":"batch","tasks":[{"name":"t","run":"true"}]}`
	}
	cases := []struct {
		name, method, path, contentType, body string
		status                                int
	}{
		{"text/plain, as a page's fetch sends a string", "POST", "/v1/jobs", "text/plain;charset=UTF-8", job("plain"), 415},
		{"a form's urlencoded body", "POST", "/v1/jobs", "application/x-www-form-urlencoded", job("form"), 415},
		{"a multipart form", "POST", "/v1/jobs", "multipart/form-data; boundary=x", job("multipart"), 415},
		{"a body without a Content-Type (a Blob without a type)", "POST", "/v1/jobs", "", job("untyped"), 415},
		{"a bulk body as text/plain", "POST", "/v1/jobs/bulk", "text/plain", job("bulk-plain"), 415},
		{"a policy as text/plain", "PUT", "/v1/queues/batch/policy", "text/plain", `{"kind":"fifo"}`, 415},
		{"a cancel with a form's type and no body", "POST", "/v1/jobs/nope/cancel", "application/x-www-form-urlencoded", "", 415},
		{"JSON", "POST", "/v1/jobs", "application/json", job("json"), 201},
		{"JSON with a charset", "POST", "/v1/jobs", "application/json; charset=utf-8", job("json-utf8"), 201},
		{"YAML", "POST", "/v1/jobs", "application/yaml", "id: yaml\nqueue: batch\ntasks: [{name: t, run: 'true'}]\n", 201},
		{"x-yaml", "POST", "/v1/jobs", "application/x-yaml", "id: x-yaml\nqueue: batch\ntasks: [{name: t, run: 'true'}]\n", 201},
		{"text/yaml", "POST", "/v1/jobs", "text/yaml", "id: text-yaml\nqueue: batch\ntasks: [{name: t, run: 'true'}]\n", 201},
		{"NDJSON in bulk", "POST", "/v1/jobs/bulk", "application/x-ndjson", job("nd") + "\n", 200},
		{"a YAML stream in bulk", "POST", "/v1/jobs/bulk", "application/yaml", job("stream"), 200},
		{"a cancel without a body or a type (the CLI's)", "POST", "/v1/jobs/json/cancel", "", "", 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.contentType != "" {
				h["Content-Type"] = tc.contentType
			}
			status, e := crossSiteCall(t, srv, tc.method, tc.path, h, tc.body)
			if status != tc.status {
				t.Fatalf("%s %s as %q: %d %+v, want %d", tc.method, tc.path, tc.contentType, status, e, tc.status)
			}
			if status == http.StatusUnsupportedMediaType && (e.Field != "Content-Type" || !strings.Contains(e.Message, "Content-Type")) {
				t.Errorf("415 %+v: want it to name the Content-Type header", e)
			}
		})
	}
	for _, id := range []string{"plain", "form", "multipart", "untyped", "bulk-plain"} {
		if status, _ := crossSiteCall(t, srv, "GET", "/v1/jobs/"+id, nil, ""); status != 404 {
			t.Errorf("job %s refused for its media type was stored: GET answered %d", id, status)
		}
	}
}

// With authentication off every caller is an admin, so the server must
// tell a page in a browser from a local program: a request whose Host is
// a name the server does not answer to (DNS rebinding: the page's own
// name, resolved to the loopback address) or that carries another site's
// Origin is refused. With authentication on, the token decides.
func TestWithAuthenticationOffOnlyLocalHostsAndTheServersOwnOriginAreServed(t *testing.T) {
	srv := newServer(t, 0)
	port := srv.Listener.Addr().String()[strings.LastIndex(srv.Listener.Addr().String(), ":"):]
	job := func(id string) string {
		return `{"id":"` + id + `","queue":"batch","tasks":[{"name":"t","run":"true"}]}`
	}
	cases := []struct {
		name, method, path string
		header             map[string]string
		body               string
		status             int
		field              string
	}{
		{"DNS rebinding: the attacker's name", "POST", "/v1/jobs", map[string]string{"Host": "rebind.attacker.example" + port, "Content-Type": "application/json"}, job("rebound"), 403, "Host"},
		{"DNS rebinding reading the dashboard", "GET", "/", map[string]string{"Host": "rebind.attacker.example" + port}, "", 403, "Host"},
		{"DNS rebinding reading jobs", "GET", "/v1/jobs", map[string]string{"Host": "rebind.attacker.example"}, "", 403, "Host"},
		{"another site's Origin", "POST", "/v1/jobs", map[string]string{"Origin": "https://evil.example", "Content-Type": "application/json"}, job("evil"), 403, "Origin"},
		{"an opaque Origin (a sandboxed page)", "POST", "/v1/jobs", map[string]string{"Origin": "null", "Content-Type": "application/json"}, job("null"), 403, "Origin"},
		{"another site's Origin on a dashboard form", "POST", "/jobs/x/cancel", map[string]string{"Origin": "http://evil.example", "Content-Type": "application/x-www-form-urlencoded"}, "", 403, "Origin"},
		{"the loopback address", "POST", "/v1/jobs", map[string]string{"Content-Type": "application/json"}, job("loopback"), 201, ""},
		{"localhost", "POST", "/v1/jobs", map[string]string{"Host": "localhost" + port, "Content-Type": "application/json"}, job("localhost"), 201, ""},
		{"LOCALHOST without a port", "GET", "/v1/jobs", map[string]string{"Host": "LOCALHOST"}, "", 200, ""},
		{"another loopback address", "GET", "/v1/jobs", map[string]string{"Host": "127.1.2.3" + port}, "", 200, ""},
		{"IPv6 loopback", "GET", "/v1/jobs", map[string]string{"Host": "[::1]" + port}, "", 200, ""},
		{"the server's own Origin", "POST", "/v1/jobs", map[string]string{"Origin": srv.URL, "Content-Type": "application/json"}, job("own"), 201, ""},
		{"the server's own Origin under localhost", "GET", "/v1/jobs", map[string]string{"Host": "localhost" + port, "Origin": "http://localhost" + port}, "", 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, e := crossSiteCall(t, srv, tc.method, tc.path, tc.header, tc.body)
			if status != tc.status {
				t.Fatalf("%d %+v, want %d", status, e, tc.status)
			}
			if tc.field != "" && (e.Code != api.CodeForbidden || e.Field != tc.field || !strings.Contains(e.Message, tc.field)) {
				t.Errorf("%+v: want forbidden naming %s", e, tc.field)
			}
		})
	}
	for _, id := range []string{"rebound", "evil", "null"} {
		if status, _ := crossSiteCall(t, srv, "GET", "/v1/jobs/"+id, nil, ""); status != 404 {
			t.Errorf("job %s, refused, was stored: GET answered %d", id, status)
		}
	}
}

// The names of Options.Hosts are served too, and an unspecified listen
// address among them (0.0.0.0) admits any IP address: a browser sends an
// address as the Host only when it connects to that very address, which
// no rebinding can arrange.
func TestConfiguredHostsAreServedWithAuthenticationOff(t *testing.T) {
	cases := []struct {
		name  string
		hosts []string
		host  string
		want  int
	}{
		{"the listen address's name", []string{"allot.internal:7070"}, "allot.internal:7070", 200},
		{"the listen address's name on another port", []string{"allot.internal:7070"}, "allot.internal", 200},
		{"another name", []string{"allot.internal:7070"}, "evil.example", 403},
		{"an address with a specific listen address", []string{"10.0.0.5:7070"}, "10.0.0.6:7070", 403},
		{"the specific listen address", []string{"10.0.0.5:7070"}, "10.0.0.5:7070", 200},
		{"any address when listening on all", []string{"0.0.0.0:7070"}, "10.0.0.6:7070", 200},
		{"any IPv6 address when listening on all", []string{"[::]:7070"}, "[fd00::5]:7070", 200},
		{"but no name when listening on all", []string{"0.0.0.0:7070"}, "rebind.attacker.example:7070", 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServerOptions(t, spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}, Options{Hosts: tc.hosts})
			if status, e := crossSiteCall(t, srv, "GET", "/v1/jobs", map[string]string{"Host": tc.host}, ""); status != tc.want {
				t.Errorf("Host %s with hosts %v: %d %+v, want %d", tc.host, tc.hosts, status, e, tc.want)
			}
		})
	}
}

func TestWithAuthenticationOnTheHostAndOriginAreLeftToTheToken(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	srv := newServerOptions(t, spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}, Options{Auth: auth.NewAuthenticator(st, nil, 0)})
	t.Cleanup(func() { st.Close() })
	// No token: 401 whatever the Host, not 403 for it.
	status, e := crossSiteCall(t, srv, "GET", "/v1/jobs", map[string]string{"Host": "allot.example.com", "Origin": "https://tools.example.com"}, "")
	if status != 401 {
		t.Errorf("GET /v1/jobs under another name without a token: %d %+v, want 401", status, e)
	}
}
