package web_test

import (
	htmlpkg "html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/web"
)

// browserHost is the host a browser would go to when told to redirect to
// loc from base. It follows the WHATWG URL parser where it differs from
// Go's: leading and trailing control characters and spaces are dropped,
// tabs and newlines anywhere are removed, and a backslash counts as a slash
// in http(s) URLs. That is how "/\t/evil.example" becomes "//evil.example".
func browserHost(t *testing.T, base, loc string) string {
	t.Helper()
	s := strings.TrimFunc(loc, func(r rune) bool { return r <= ' ' })
	s = strings.NewReplacer("\t", "", "\n", "", "\r", "", `\`, "/").Replace(s)
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable: " + err.Error() + ")"
	}
	b, _ := url.Parse(base)
	return b.ResolveReference(u).Host
}

// loginRedirects are values of the login form's next field, as the server
// receives them (decoded once), and where the login must send the browser.
var loginRedirects = []struct {
	name, next, want string
}{
	{"a page", "/workers", "/workers"},
	{"a job page", "/jobs/nightly-eval", "/jobs/nightly-eval"},
	{"a page with a query", "/jobs?state=running&queue=batch", "/jobs?state=running&queue=batch"},
	{"a query that holds slashes", "/jobs?next=//evil.example", "/jobs?next=//evil.example"},
	{"trailing slash", "/jobs/", "/jobs/"},
	{"a fragment is dropped", "/jobs#//evil.example", "/jobs"},
	{"empty", "", "/"},
	{"protocol-relative", "//evil.example", "/"},
	{"protocol-relative with a path", "//evil.example/x", "/"},
	{"three slashes", "///evil.example", "/"},
	{"backslash", `/\evil.example`, "/"},
	{"two backslashes", `\\evil.example`, "/"},
	{"slash backslash slash", `/\/evil.example`, "/"},
	{"tab inside (what /%09/evil.example decodes to)", "/\t/evil.example", "/"},
	{"newline inside", "/\n/evil.example", "/"},
	{"carriage return and line feed", "/\r\n/evil.example", "/"},
	{"leading tab", "\t//evil.example", "/"},
	{"leading space", " //evil.example", "/"},
	{"a NUL", "/\x00/evil.example", "/"},
	{"DEL", "/\x7f/evil.example", "/"},
	{"encoded tab, decoded twice", "/%09/evil.example", "/"},
	{"encoded slashes", "/%2F%2Fevil.example", "/"},
	{"encoded slashes, lower case", "/%2f%2fevil.example", "/"},
	{"encoded backslash", "/%5Cevil.example", "/"},
	{"encoded slashes without the leading slash", "%2F%2Fevil.example", "/"},
	{"dot segments into two slashes", "/..//evil.example", "/"},
	{"dot segment", "/./workers", "/"},
	{"double slash later", "/jobs//evil.example", "/"},
	{"https URL", "https://evil.example", "/"},
	{"http URL with a path", "http://evil.example/jobs", "/"},
	{"scheme without slashes", "https:evil.example", "/"},
	{"scheme with one slash", "https:/evil.example", "/"},
	{"javascript", "javascript:alert(document.cookie)", "/"},
	{"javascript with a leading slash comment", "javascript://%0aalert(1)", "/"},
	{"data URL", "data:text/html,<script>alert(1)</script>", "/"},
	{"relative path", "evil.example", "/"},
	{"user info", "//user@evil.example", "/"},
	{"the login page itself", "/login?next=//evil.example", "/"},
	{"logout", "/logout", "/"},
}

func TestLoginRedirectsOnlyToPathsOfThisServer(t *testing.T) {
	f := newFixture(t, true)
	self := strings.TrimPrefix(f.srv.URL, "http://")
	for _, tc := range loginRedirects {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := postLogin(f, f.admin, tc.next)
			if err != nil {
				t.Fatalf("login with next=%q: the answer does not parse: %v", tc.next, err)
			}
			resp.Body.Close()
			loc := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusSeeOther || loc != tc.want {
				t.Errorf("login with next=%q: %d to %q, want 303 to %q", tc.next, resp.StatusCode, loc, tc.want)
			}
			if host := browserHost(t, f.srv.URL, loc); host != self {
				t.Errorf("login with next=%q sends a browser to host %q, want %q", tc.next, host, self)
			}
		})
	}
}

// postLogin posts the login form and returns the answer as it is: a
// transport, unlike a client, does not parse Location, so a header no
// client would accept still reaches the test.
func postLogin(f *fixture, token, next string) (*http.Response, error) {
	form := url.Values{"token": {token}, "next": {next}}
	req, _ := http.NewRequest("POST", f.srv.URL+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", f.srv.URL)
	return http.DefaultTransport.RoundTrip(req)
}

func TestLoginPageCarriesOnlyASafeNext(t *testing.T) {
	f := newFixture(t, true)
	hidden := regexp.MustCompile(`name="next" value="([^"]*)"`)
	for _, tc := range loginRedirects {
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.callAs("", "GET", "/login?next="+url.QueryEscape(tc.next), "")
			m := hidden.FindStringSubmatch(body)
			if status != 200 || m == nil {
				t.Fatalf("GET /login: %d, hidden next field %v", status, m)
			}
			if got := htmlpkg.UnescapeString(m[1]); got != tc.want {
				t.Errorf("the login form carries next=%q, want %q", got, tc.want)
			}
		})
	}
}

// A form body over the dashboard's 64 KiB (docs/security.md, "Request
// bodies") is a 413 that names the body, not a refusal of whatever part of
// it was read: the login form's token, an action form's csrf.
func TestAFormOverItsLimitIs413NamingTheBody(t *testing.T) {
	f := newFixture(t, true)
	big := "token=" + strings.Repeat(" ", 70<<10)
	for _, path := range []string{"/login", "/jobs/any/hold", "/workers/node-1/state"} {
		t.Run(path, func(t *testing.T) {
			req, _ := http.NewRequest("POST", f.srv.URL+path, strings.NewReader(big))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", f.srv.URL)
			req.AddCookie(&http.Cookie{Name: web.CookieName, Value: f.admin})
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if text := pageText(string(raw)); resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(text, "body") {
				t.Errorf("POST %s with a 70 KiB form: %d %q, want 413 naming the body", path, resp.StatusCode, text)
			}
		})
	}
}
