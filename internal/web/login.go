package web

import (
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/allot-sched/allot/internal/auth"
)

// CookieName is the cookie that carries a logged-in browser's token. Only
// the dashboard reads it (its pages, and its forms once checked:
// actions.go); the API under /v1 ignores it, so a request a foreign page
// makes the browser send cannot act on the API.
const CookieName = "allot_token"

// principal finds who makes r: everyone is auth.Anonymous (an admin) with
// authentication off; otherwise a bearer header (curl, scripts) or the
// login cookie (browsers) is checked by the API's Authenticator.
func (d *Dashboard) principal(r *http.Request) (auth.Principal, error) {
	if d.opt.Auth == nil {
		return auth.Anonymous, nil
	}
	if h := r.Header.Get("Authorization"); h != "" {
		return d.opt.Auth.Authenticate(r.Context(), h)
	}
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return auth.Principal{}, auth.ErrMissing
	}
	return d.opt.Auth.Authenticate(r.Context(), "Bearer "+c.Value)
}

// authenticate returns the caller of a page, or answers for it: a visitor
// without a valid token is sent to the login page (htmx follows
// HX-Redirect), a token that may not read jobs gets 403.
func (d *Dashboard) authenticate(w http.ResponseWriter, r *http.Request) (auth.Principal, bool) {
	p, err := d.principal(r)
	switch {
	case errors.Is(err, auth.ErrUnauthenticated):
		to := "/login?next=" + url.QueryEscape(r.URL.RequestURI())
		if r.Header.Get("HX-Request") == "true" {
			w.Header().Set("HX-Redirect", to)
			w.WriteHeader(http.StatusUnauthorized)
			return p, false
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return p, false
	case err != nil:
		d.opt.Logger.Error("dashboard authentication failed", "request_id", requestID(w), "err", err)
		d.errorPage(w, r, http.StatusInternalServerError, internalMessage("Checking the token failed", w))
		return p, false
	}
	if err := p.Allow(auth.ReadJobs); err != nil {
		d.errorPage(w, r, http.StatusForbidden, "This token may not use the dashboard: "+err.Error())
		return p, false
	}
	return p, true
}

// loginData is the login page's data.
type loginData struct {
	Next    string
	Error   string
	AuthOff bool
}

func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	data := loginData{Next: safeNext(r.URL.Query().Get("next")), AuthOff: d.opt.Auth == nil}
	d.render(w, http.StatusOK, "login", "layout", view{Title: "Log in", Auth: false, Data: data})
}

// login checks a pasted token and, if it may use the dashboard, keeps it
// in the cookie. A form posted from another site is refused: SameSite
// protects the cookie once set, not the form that sets it.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		d.errorPage(w, r, http.StatusForbidden, "The login form was posted from another site.")
		return
	}
	if !d.readForm(w, r) {
		return
	}
	next := safeNext(r.PostFormValue("next"))
	if d.opt.Auth == nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	secret := strings.TrimSpace(r.PostFormValue("token"))
	fail := func(status int, msg string) {
		d.render(w, status, "login", "layout", view{Title: "Log in", Data: loginData{Next: next, Error: msg}})
	}
	p, err := d.opt.Auth.Authenticate(r.Context(), "Bearer "+secret)
	switch {
	case errors.Is(err, auth.ErrUnauthenticated):
		fail(http.StatusUnauthorized, "That token is not valid: "+strings.TrimPrefix(err.Error(), "unauthenticated: "))
		return
	case err != nil:
		d.opt.Logger.Error("dashboard login failed", "request_id", requestID(w), "err", err)
		fail(http.StatusInternalServerError, internalMessage("Checking the token failed", w))
		return
	}
	if err := p.Allow(auth.ReadJobs); err != nil {
		fail(http.StatusForbidden, "This token may not use the dashboard: "+err.Error())
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: secret, Path: "/", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	d.opt.Logger.Info("dashboard login", "token", p.TokenID, "name", p.Name)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		d.errorPage(w, r, http.StatusForbidden, "The logout form was posted from another site.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// sameOrigin reports whether a form post comes from the dashboard itself:
// browsers send Origin on every POST; a client without one (curl) is not a
// browser that a foreign page could drive.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// safeNext keeps a post-login redirect on this site: it returns next when
// next is a plain path of this server (with an optional query), and "/"
// for anything else. Browsers do not read a Location the way Go does: they
// drop tabs and newlines anywhere, trim control characters and spaces, and
// take a backslash for a slash, so "/\t/evil.example" or "/\\evil.example"
// reach another host. Rather than predict every such rewrite, safeNext
// accepts only what needs none: no control character, space or backslash,
// even percent-encoded; no scheme, host or user; a path that is already
// clean (no "//", "." or ".." segment, so "/..//evil" is refused too);
// and not the login or logout page, which would loop.
func safeNext(next string) string {
	const home = "/"
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || unsafeInURL(next) {
		return home
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return home
	}
	p := u.Path // percent-decoded: "/%2F%2Fevil" is "///evil" here
	if unsafeInURL(p) || !clean(p) || p == "/login" || p == "/logout" {
		return home
	}
	out := u.EscapedPath()
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out
}

// unsafeInURL reports whether s holds a character a browser may drop or
// rewrite when it reads a URL: a control character, a space, a backslash,
// or anything outside ASCII.
func unsafeInURL(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '\\' }) >= 0
}

// clean reports whether p is an absolute path that path.Clean leaves as it
// is (but for one trailing slash): no empty, "." or ".." segment.
func clean(p string) bool {
	trimmed := strings.TrimSuffix(p, "/")
	return trimmed == "" && p == "/" || trimmed != "" && path.Clean(trimmed) == trimmed
}
