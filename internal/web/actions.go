package web

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/allot-sched/allot/internal/api"
)

// The dashboard's actions (cancel, hold, release and priority on a job's
// page; drain, disable and ready on the workers page) are HTML forms
// posted to the dashboard, which turns each into the API request it stands
// for — POST /v1/jobs/{id}/hold with the visitor's token — and hands it to
// the API's handler (Options.API). The API authenticates and authorises
// it as any other call (a submitter acts on its own jobs only, only an
// admin changes workers) and answers as it would a script.
//
// The API never reads the login cookie, so the dashboard carries the
// token over itself, and guards against a foreign page driving a
// logged-in browser: the cookie is SameSite=Strict, a form posted with
// another site's Origin is refused, and every form carries a token
// (csrf) derived from the visitor's own login token with a key the server
// drew at start, which another site cannot read or compute.

// jobActions are the job actions a form may post, with the API route each
// stands for under /v1/jobs/{id}/.
var jobActions = map[string]bool{"cancel": true, "hold": true, "release": true, "priority": true, "resources": true}

// workerStatesSettable are the states the workers page may set.
var workerStatesSettable = map[string]bool{"ready": true, "draining": true, "disabled": true}

// csrf is the form token of the visitor of r: an HMAC of its login token
// (the cookie, or the bearer header of a script), so that it changes with
// the login and means nothing to anyone else.
func (d *Dashboard) csrf(r *http.Request) string {
	m := hmac.New(sha256.New, d.csrfKey)
	m.Write([]byte(d.secret(r)))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// secret is the visitor's token: the bearer header's, else the cookie's;
// "" with authentication off or without a login.
func (d *Dashboard) secret(r *http.Request) string {
	if d.opt.Auth == nil {
		return ""
	}
	if h := r.Header.Get("Authorization"); h != "" {
		return strings.TrimSpace(strings.TrimPrefix(h, "Bearer "))
	}
	if c, err := r.Cookie(CookieName); err == nil {
		return c.Value
	}
	return ""
}

// checkForm refuses a form posted from another site or without the
// visitor's form token, and answers for it.
func (d *Dashboard) checkForm(w http.ResponseWriter, r *http.Request) bool {
	if !sameOrigin(r) {
		d.errorPage(w, r, http.StatusForbidden, "The form was posted from another site.")
		return false
	}
	if !d.readForm(w, r) {
		return false
	}
	if !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(d.csrf(r))) {
		d.errorPage(w, r, http.StatusForbidden, "The form is stale or was not made by this dashboard: reload the page and try again.")
		return false
	}
	return true
}

// maxFormBytes bounds a form's body (docs/security.md, "Request bodies").
const maxFormBytes = 64 << 10

// readForm reads the posted form of r within maxFormBytes, and answers for
// a body that is larger (413 naming the body) or cannot be read (400).
// Reading it here, rather than through PostFormValue, which drops the
// error, keeps a cut form from being taken for a form with missing or
// partial fields (an invalid token, a stale form).
func (d *Dashboard) readForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	err := r.ParseForm()
	if err == nil {
		return true
	}
	w.Header().Set("Connection", "close")
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		d.errorPage(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("The form's body is larger than the %d KiB a form may send.", maxFormBytes>>10))
		return false
	}
	d.errorPage(w, r, http.StatusBadRequest, "The form's body could not be read: "+err.Error())
	return false
}

// jobAction posts a job page's form to the API.
func (d *Dashboard) jobAction(w http.ResponseWriter, r *http.Request) {
	if _, ok := d.authenticate(w, r); !ok || !d.checkForm(w, r) {
		return
	}
	id, action := r.PathValue("id"), r.PathValue("action")
	if !jobActions[action] {
		d.errorPage(w, r, http.StatusNotFound, fmt.Sprintf("There is no job action %q.", action))
		return
	}
	var body any
	if action == "priority" {
		n, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("priority")))
		if err != nil {
			d.errorPage(w, r, http.StatusBadRequest, fmt.Sprintf("priority: %q is not a whole number.", r.PostFormValue("priority")))
			return
		}
		body = api.PriorityChange{Priority: n, Urgent: r.PostFormValue("urgent") != ""}
	}
	if action == "resources" {
		// The fields left empty keep each task's own value; the API
		// checks the others as at submission and names a bad one.
		ch := map[string]any{}
		for _, f := range []string{"cpu", "memory", "gpuMemory"} {
			if v := strings.TrimSpace(r.PostFormValue(f)); v != "" {
				ch[f] = v
			}
		}
		if v := strings.TrimSpace(r.PostFormValue("gpus")); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				d.errorPage(w, r, http.StatusBadRequest, fmt.Sprintf("gpus: %q is not a whole number.", v))
				return
			}
			ch["gpus"] = n
		}
		body = ch
	}
	d.forward(w, r, "/v1/jobs/"+url.PathEscape(id)+"/"+action, body, "/jobs/"+url.PathEscape(id))
}

// workerAction posts the workers page's drain, disable and ready forms to
// the API.
func (d *Dashboard) workerAction(w http.ResponseWriter, r *http.Request) {
	if _, ok := d.authenticate(w, r); !ok || !d.checkForm(w, r) {
		return
	}
	state := r.PostFormValue("state")
	if !workerStatesSettable[state] {
		d.errorPage(w, r, http.StatusBadRequest, fmt.Sprintf("state: %q is not one of ready, draining, disabled.", state))
		return
	}
	d.forward(w, r, "/v1/workers/"+url.PathEscape(r.PathValue("name"))+"/state", map[string]string{"state": state}, "/workers")
}

// forward makes the API call path with body as the visitor, and sends the
// browser back to the page (back) on success, or shows the API's refusal.
func (d *Dashboard) forward(w http.ResponseWriter, r *http.Request, path string, body any, back string) {
	if d.opt.API == nil {
		d.errorPage(w, r, http.StatusNotImplemented, "Actions are not available on this server.")
		return
	}
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body) // plain structs and maps of strings
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, path, bytes.NewReader(raw))
	if err != nil {
		d.errorPage(w, r, http.StatusBadRequest, "The action names something that is not a valid path.")
		return
	}
	req.Host, req.RemoteAddr = r.Host, r.RemoteAddr
	req.Header.Set("Content-Type", "application/json")
	if s := d.secret(r); s != "" {
		req.Header.Set("Authorization", "Bearer "+s)
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	d.opt.API.ServeHTTP(rec, req)
	if rec.status >= 300 {
		var eb api.ErrorBody
		msg := strings.TrimSpace(rec.body.String())
		if json.Unmarshal(rec.body.Bytes(), &eb) == nil && eb.Error.Message != "" {
			msg = eb.Error.Message
		}
		d.errorPage(w, r, rec.status, "The server refused the action: "+msg)
		return
	}
	if next := r.PostFormValue("back"); next != "" {
		back = safeNext(next)
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// recorder keeps the API's answer to a forwarded action.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}
