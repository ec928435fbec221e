// Package web serves Allot's dashboard: a few server-rendered pages
// (html/template) that show what the control plane last decided — queues
// and groups with their targets against the slots they run, workers,
// pending jobs and why they wait, endpoints and their utilisation, and each
// job's DAG. Everything the pages need (templates, one stylesheet, htmx) is
// embedded in the binary: there is no build step and nothing is loaded from
// elsewhere, so the dashboard works on an air-gapped cluster.
//
// The pages read Controller.Snapshot for what changes every cycle, so a
// dashboard left open on many screens does not slow the scheduling loop;
// only the worker list, a job and the job list take a loop round or a store
// read, as the API does. Live parts refresh with htmx polling the page they
// are on, which answers only the live part to an htmx request.
//
// Authentication is the API's: the same tokens, checked by the same
// auth.Authenticator. A browser cannot send a bearer header, so /login
// takes a token once and keeps it in an HttpOnly, SameSite=Strict cookie
// that only the dashboard reads (its pages and its action forms); the API
// under /v1 never accepts it, so a page elsewhere cannot make the browser
// act on the API.
// The pages' actions (hold, release, priority, cancel, worker states) are
// forms the dashboard checks (same origin, the visitor's form token) and
// turns into API calls made with the visitor's token (actions.go).
package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// DefaultRefresh is how often the live parts of a page poll when Options
// sets no interval: a little slower than the snapshot's history samples
// (control.HistoryEvery), so each refresh usually shows a new point.
const DefaultRefresh = 5 * time.Second

// Options configures the dashboard.
type Options struct {
	// Auth checks tokens; nil switches authentication off, as for the API
	// (allot dev, allot server --no-auth): every visitor is an admin.
	Auth   *auth.Authenticator
	Logger *slog.Logger
	// Refresh is how often live parts of the pages poll the server.
	Refresh time.Duration
	// Density, when set, draws the task and worker density on the
	// overview. See DensitySource.
	Density DensitySource
	// API is the API's handler: the dashboard's forms (cancel, hold,
	// release, priority, worker states) become API requests made with the
	// visitor's token and served by it, so they take the API's
	// authorisation (actions.go). Nil leaves the pages without actions.
	API http.Handler
}

// Controller is what the dashboard reads of the scheduling loop: the
// published snapshot and the lists its pages show. control.Controller is
// one; the dashboard only reads: its actions go through the API (Options.API).
type Controller interface {
	Snapshot() *control.Snapshot
	Queues(ctx context.Context) ([]api.Queue, error)
	Workers(ctx context.Context) ([]api.Worker, error)
	Jobs(ctx context.Context, f store.JobFilter) (api.JobList, error)
	Job(ctx context.Context, id string) (api.Job, error)
	// Explain and Logs are the job page's explanation and output tails.
	Explain(ctx context.Context, id string) (api.Explanation, error)
	Logs(ctx context.Context, id string) (api.Logs, error)
	// RunningTasks gives the tasks each worker runs (the workers page);
	// TaskCounts the task counts of live jobs (the jobs page).
	RunningTasks(ctx context.Context) (map[string][]control.WorkerTask, error)
	TaskCounts(ctx context.Context, ids []string) (map[string]map[string]int, error)
	// PendingOf gives why the waiting tasks of the jobs ids wait (the jobs
	// page asks for its own jobs only).
	PendingOf(ctx context.Context, ids []string) (map[string][]engine.Pending, error)
}

var _ Controller = (*control.Controller)(nil)

// Dashboard is the dashboard's HTTP handler. Mount it at "/" behind the
// API's routes: it answers every path the API does not.
type Dashboard struct {
	ctrl  Controller
	opt   Options
	mux   *http.ServeMux
	pages map[string]*template.Template
	// csrfKey signs the form tokens (actions.go); drawn at start.
	csrfKey []byte
}

// New builds the dashboard on a controller. If opt.Density is nil and the
// controller itself can report density (see DensitySource), the overview
// draws the controller's.
func New(ctrl Controller, opt Options) *Dashboard {
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Refresh <= 0 {
		opt.Refresh = DefaultRefresh
	}
	if opt.Density == nil {
		if ds, ok := any(ctrl).(DensitySource); ok {
			opt.Density = ds
		}
	}
	d := &Dashboard{ctrl: ctrl, opt: opt, mux: http.NewServeMux(), pages: parsePages(), csrfKey: make([]byte, 32)}
	_, _ = rand.Read(d.csrfKey) // never fails (crypto/rand)
	static, _ := fs.Sub(staticFS, "static")
	d.mux.Handle("GET /static/", http.StripPrefix("/static/", staticHandler(static)))
	d.mux.HandleFunc("GET /login", d.loginPage)
	d.mux.HandleFunc("POST /login", d.login)
	d.mux.HandleFunc("POST /logout", d.logout)
	d.mux.HandleFunc("GET /{$}", d.page(d.overview))
	d.mux.HandleFunc("GET /workers", d.page(d.workers))
	d.mux.HandleFunc("GET /jobs", d.page(d.jobs))
	d.mux.HandleFunc("GET /jobs/{id}", d.page(d.job))
	d.mux.HandleFunc("GET /endpoints", d.page(d.endpoints))
	d.mux.HandleFunc("POST /jobs/{id}/{action}", d.jobAction)
	d.mux.HandleFunc("POST /workers/{name}/state", d.workerAction)
	d.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		d.errorPage(w, r, http.StatusNotFound, fmt.Sprintf("There is no page %s.", r.URL.Path))
	})
	return d
}

// ServeHTTP serves the dashboard.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// The pages embed nothing from elsewhere and are never framed.
	h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	d.mux.ServeHTTP(w, r)
}

// staticHandler serves the embedded assets; they change only with the
// binary, so browsers may keep them for a while.
func staticHandler(static fs.FS) http.Handler {
	files := http.FileServerFS(static)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
}

// parsePages parses each page template together with the layout. The
// templates are embedded, so a parse error is a bug caught by any test.
func parsePages() map[string]*template.Template {
	names := []string{"overview", "workers", "jobs", "job", "endpoints", "login", "error"}
	out := make(map[string]*template.Template, len(names))
	for _, n := range names {
		out[n] = template.Must(template.New(n).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+n+".html"))
	}
	return out
}

// view is what every page template gets: the page's own data and what the
// layout needs.
type view struct {
	Title   string
	Nav     string // the nav entry to mark as current
	User    string // who is logged in, empty with authentication off
	Auth    bool   // authentication is on (show the logout button)
	Refresh string // htmx trigger for the live parts, e.g. "every 5s"
	Path    string // the page's own URL, which its live part polls
	Now     time.Time
	Data    any
	// CSRF is the visitor's form token; Actions says the forms may be
	// shown (Options.API is set); Admin that the visitor may change
	// workers.
	CSRF    string
	Actions bool
	Admin   bool
}

// pageFunc builds one page's data for its template; an error with a
// status (httpError) becomes that status, any other one a 500.
type pageFunc func(r *http.Request, p auth.Principal) (tmpl, title, nav string, data any, err error)

// requestID is the request's id as the API's middleware set it on the
// answer; empty when the dashboard is served without it.
func requestID(w http.ResponseWriter) string { return w.Header().Get("X-Request-Id") }

// internalMessage is what a visitor reads of an internal failure: what
// failed and where the details are, never the error's own text (paths,
// SQL, addresses), which goes to the log with the same request id.
func internalMessage(what string, w http.ResponseWriter) string {
	if id := requestID(w); id != "" {
		return fmt.Sprintf("%s; the server's log has the details (request id %s).", what, id)
	}
	return what + "; the server's log has the details."
}

// httpError is a page error with the status it deserves.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

// page wraps a pageFunc with authentication and rendering. An htmx request
// (HX-Request) gets the page's "live" template alone.
func (d *Dashboard) page(fn pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok := d.authenticate(w, r)
		if !ok {
			return
		}
		name, title, nav, data, err := fn(r, p)
		if err != nil {
			var he *httpError
			if errors.As(err, &he) {
				d.errorPage(w, r, he.status, he.msg)
				return
			}
			d.opt.Logger.Error("dashboard page failed", "path", r.URL.Path, "request_id", requestID(w), "err", err)
			d.errorPage(w, r, http.StatusInternalServerError, internalMessage("The page could not be built", w))
			return
		}
		v := view{Title: title, Nav: nav, Auth: d.opt.Auth != nil, Refresh: fmt.Sprintf("every %ds", max(1, int(d.opt.Refresh/time.Second))),
			Path: r.URL.RequestURI(), Now: d.ctrl.Snapshot().At, Data: data,
			CSRF: d.csrf(r), Actions: d.opt.API != nil, Admin: p.Allow(auth.ChangeWorkers) == nil}
		if d.opt.Auth != nil {
			v.User = p.Name
		}
		block := "layout"
		if r.Header.Get("HX-Request") == "true" {
			block = "live"
		}
		d.render(w, http.StatusOK, name, block, v)
	}
}

// render executes a template into a buffer first, so a failure midway
// answers a clean 500 rather than half a page.
func (d *Dashboard) render(w http.ResponseWriter, status int, page, block string, v view) {
	var buf bytes.Buffer
	if err := d.pages[page].ExecuteTemplate(&buf, block, v); err != nil {
		d.opt.Logger.Error("dashboard template failed", "page", page, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

func (d *Dashboard) errorPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	v := view{Title: http.StatusText(status), Auth: d.opt.Auth != nil, Data: struct {
		Status  int
		Message string
	}{status, msg}}
	if p, err := d.principal(r); err == nil && d.opt.Auth != nil {
		v.User = p.Name
	}
	d.render(w, status, "error", "layout", v)
}
