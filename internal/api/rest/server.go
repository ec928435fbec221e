// Package rest serves Allot's REST API over HTTP with JSON, under /v1:
// handlers that decode and check requests, call the control plane, and
// answer with the bodies of package api. Every error is a JSON body with a
// code, a message and, for bad input, the offending field.
package rest

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/web"
)

// DefaultMaxBodyBytes bounds a request body unless configured otherwise.
const DefaultMaxBodyBytes = 8 << 20

// Options configures the API server.
type Options struct {
	MaxBodyBytes int64
	Logger       *slog.Logger
	// Auth authenticates every request but /healthz, /readyz and
	// /openapi.json. Nil switches authentication off: every caller is an
	// admin (allot dev, allot server --no-auth).
	Auth *auth.Authenticator
	// Hosts are the names and addresses ("host" or "host:port"; the port
	// is not compared) that a request's Host may name while authentication
	// is off, besides the loopback ones: the listen address's and the
	// advertised URL's. An unspecified address (0.0.0.0, ::) among them
	// admits any IP address (see localOnly).
	Hosts []string
	// Metrics serves GET /metrics (internal/metrics); nil answers 404.
	Metrics http.Handler
	// Requests, when set, is told about every request (API metrics).
	Requests RequestObserver
	// Timeouts bound how long a client may take to send a body and to
	// read an answer; zero fields take the defaults. The http.Server
	// applies Idle and Header.
	Timeouts Timeouts
	// Leadership, when set, says whether this replica leads a cluster of
	// servers on one store; while it does not, the API answers
	// not_leader with the leader's URL (leaderOnly). Nil: this server
	// always leads (a single server).
	Leadership api.Leadership
	// FollowerReads, on a replica that does not lead (a server built
	// without a controller), serves the job reads (GET /v1/jobs, a job,
	// its logs) and the event log and streams from the shared store
	// instead of answering not_leader.
	FollowerReads FollowerReader
	// maxBulkTasks is the task budget of one bulk call (bulk.go); zero
	// means spec.MaxTasksPerJob. Tests lower it.
	maxBulkTasks int
}

// bulkTasks is the task budget of one bulk call.
func (o Options) bulkTasks() int {
	if o.maxBulkTasks > 0 {
		return o.maxBulkTasks
	}
	return spec.MaxTasksPerJob
}

// FollowerReader is what a follower serves its reads with
// (control.StoreReader): the job reads, and the event streams' wake-ups.
type FollowerReader interface {
	JobReader
	EventWaker
}

// EventWaker wakes the event streams when events may have been stored,
// and ends them when the server shuts down.
type EventWaker interface {
	Changed() <-chan struct{}
	Closing() <-chan struct{}
}

// JobReader is what the job read routes need: the controller on the
// leader, control.StoreReader on a follower.
type JobReader interface {
	Job(ctx context.Context, id string) (api.Job, error)
	Jobs(ctx context.Context, f store.JobFilter) (api.JobList, error)
	Logs(ctx context.Context, id string, q api.LogQuery) (api.Logs, error)
	Store() store.Store
}

// jobReads returns what serves the job reads: the controller, or on a
// follower the store's reads.
func (s *Server) jobReads() JobReader {
	if s.ctrl == nil {
		return s.opt.FollowerReads
	}
	return s.ctrl
}

// eventWaker returns what wakes and ends the event streams: the
// controller, or on a follower the store's notifications.
func (s *Server) eventWaker() EventWaker {
	if s.ctrl == nil {
		return s.opt.FollowerReads
	}
	return s.ctrl
}

// Server serves the API.
type Server struct {
	ctrl    Controller
	opt     Options
	mux     *http.ServeMux
	handler http.Handler // mux behind authentication

	defaultQueue queueDefault
	// patterns are the API routes registered, "METHOD /path" (handle);
	// apiRoutes the same as a set.
	patterns  []string
	apiRoutes map[string]bool
}

//go:embed openapi.json
var openapiDoc []byte

// New builds the API server on a controller.
func New(ctrl Controller, opt Options) *Server {
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	opt.Timeouts = opt.Timeouts.WithDefaults()
	s := &Server{ctrl: ctrl, opt: opt, mux: http.NewServeMux()}
	s.routes()
	s.apiRoutes = make(map[string]bool, len(s.patterns))
	for _, p := range s.patterns {
		s.apiRoutes[p] = true
	}
	s.handler = s.observe(s.admitReserved(s.screen(s.deadlines(s.authenticate(s.mediaTypes(s.identify(s.leaderOnly(s.mux))))))))
	return s
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// routes registers the API's routes. Each goes through handle, which keeps
// its pattern, so that routes_test.go checks that openapi.json documents
// every route the server serves and no other; the catch-all "/v1/" (404
// for an unknown route) and the dashboard are not API routes.
func (s *Server) routes() {
	s.handle("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, map[string]string{"status": "ok"}) })
	s.handle("GET /readyz", s.ready)
	s.handle("GET /metrics", s.metrics)
	s.handle("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openapiDoc)
	})
	s.handle("POST /v1/jobs", s.submit)
	s.handle("POST /v1/jobs/bulk", s.submitBulk)
	s.handle("GET /v1/jobs", s.listJobs)
	s.handle("GET /v1/jobs/{id}", s.getJob)
	s.handle("POST /v1/jobs/{id}/cancel", s.cancel)
	s.handle("POST /v1/jobs/{id}/requeue", s.requeue)
	s.handle("POST /v1/jobs/{id}/tasks/{task}/requeue", s.requeue)
	s.handle("POST /v1/jobs/{id}/tasks/{task}/cancel", s.cancelTask)
	s.handle("POST /v1/jobs/{id}/priority", s.setPriority)
	s.handle("POST /v1/jobs/{id}/hold", s.hold)
	s.handle("POST /v1/jobs/{id}/release", s.release)
	s.handle("POST /v1/jobs/{id}/resources", s.setResources)
	s.handle("GET /v1/jobs/{id}/logs", s.logs)
	s.handle("GET /v1/jobs/{id}/explain", s.explain)
	s.handle("GET /v1/events", s.events)
	s.handle("GET /v1/usage", s.usage)
	s.handle("GET /v1/workers", s.workers)
	s.handle("POST /v1/workers", s.register)
	s.handle("POST /v1/workers/{name}/lease", s.lease)
	s.handle("POST /v1/workers/{name}/reports", s.reports)
	s.handle("POST /v1/workers/{name}/output", s.output)
	s.handle("POST /v1/workers/{name}/heartbeat", s.heartbeat)
	s.handle("POST /v1/workers/{name}/state", s.workerState)
	s.handle("POST /v1/workers/{name}/elastic", s.elasticToggle)
	s.handle("GET /v1/density", s.density)
	s.handle("GET /v1/queues", s.queues)
	s.handle("PUT /v1/queues/{name}/policy", s.setPolicy)
	s.handle("GET /v1/endpoints", s.endpoints)
	s.handle("PUT /v1/endpoints/{name}", s.setEndpoint)
	s.handle("DELETE /v1/endpoints/{name}", s.removeEndpoint)
	s.handle("GET /v1/throttling", s.throttling)
	s.handle("PUT /v1/throttling", s.setThrottling)
	s.handle("GET /v1/deadletters", s.deadLetters)
	s.handle("POST /v1/deadletters/{id}/redrive", s.redrive)
	s.handle("POST /v1/tokens", s.createToken)
	s.handle("GET /v1/tokens", s.listTokens)
	s.handle("DELETE /v1/tokens/{id}", s.revokeToken)
	s.mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)})
	})
	// The dashboard (internal/web) answers every other path; it checks the same tokens itself (see authenticate).
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) })
	s.mux.Handle(dashboardPattern, web.New(s.ctrl, web.Options{Auth: s.opt.Auth, Logger: s.opt.Logger, API: api}))
}

// handle registers an API route and records its pattern (see routes).
func (s *Server) handle(pattern string, h http.HandlerFunc) {
	s.patterns = append(s.patterns, pattern)
	s.mux.HandleFunc(pattern, h)
}

// ready answers /readyz: ready once the loop answers a round trip. While the
// store refuses writes it is not ready, and says why.
//
// A replica that does not lead is ready while a leader is known: it sends
// its callers there. Without one it answers not_leader. /readyz takes no
// token, so it does not say where the leader is.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	if follower, leader := s.notLeading(); follower {
		if leader == "" {
			s.fail(w, &api.NotLeaderError{})
			return
		}
		writeJSON(w, 200, map[string]string{"status": "ready", "role": "follower"})
		return
	}
	if h := s.ctrl.StoreHealth(); h.Degraded {
		storeUnavailable(w, fmt.Sprintf("not ready: the store refuses writes since %s: %s; changes are refused until it takes them again, reads go on",
			h.Since.Format(time.RFC3339), h.Cause))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.ctrl.Ping(ctx); err != nil {
		s.fail(w, err)
		return
	}
	if s.opt.Leadership != nil {
		writeJSON(w, 200, map[string]string{"status": "ready", "role": "leader"})
		return
	}
	writeJSON(w, 200, map[string]string{"status": "ready"})
}

// Body limits of the routes that take small documents. However high an
// operator sets the server's limit (for large job documents and report
// batches), a priority change or a token request stays a few bytes, and a
// registration or heartbeat (labels, cache hints, running attempts) a
// fraction of a MiB. Every other route that reads a body has
// Options.MaxBodyBytes: job submission, worker reports.
const (
	smallBodyBytes  = 64 << 10
	mediumBodyBytes = 1 << 20
)

var routeBodyLimits = map[string]int64{
	"POST /v1/jobs/{id}/priority":       smallBodyBytes,
	"POST /v1/jobs/{id}/resources":      smallBodyBytes,
	"POST /v1/workers/{name}/state":     smallBodyBytes,
	"POST /v1/workers/{name}/elastic":   smallBodyBytes,
	"POST /v1/workers/{name}/lease":     mediumBodyBytes,
	"POST /v1/workers/{name}/heartbeat": mediumBodyBytes,
	"POST /v1/workers":                  mediumBodyBytes,
	"POST /v1/tokens":                   smallBodyBytes,
	"PUT /v1/queues/{name}/policy":      mediumBodyBytes,
	"PUT /v1/endpoints/{name}":          mediumBodyBytes,
	"PUT /v1/throttling":                smallBodyBytes,
}

// bodyLimit is the size limit of r's body: its route's, or the server's
// when that is lower or the route has none.
func (s *Server) bodyLimit(r *http.Request) int64 {
	if n, ok := routeBodyLimits[r.Pattern]; ok && n < s.opt.MaxBodyBytes {
		return n
	}
	return s.opt.MaxBodyBytes
}

// storeRetryAfter is the Retry-After of a change refused because the store
// refuses writes: the loop retries its held round at least this often.
const storeRetryAfter = "5"

// storeUnavailable answers 503 store_unavailable: nothing was applied, and
// the same request may be sent again.
func storeUnavailable(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", storeRetryAfter)
	writeError(w, http.StatusServiceUnavailable, api.Error{Code: api.CodeStoreUnavailable, Message: msg})
}

// body reads a request body within the size limit.
func (s *Server) body(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.bodyLimit(r)))
	if err != nil {
		if errors.Is(err, errBodyTooSlow) {
			w.Header().Set("Connection", "close")
		}
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) || errors.Is(err, errBodyTooSlow) {
			s.fail(w, err) // 413 too_large or 408 timeout (errorKinds)
			return nil, false
		}
		writeError(w, http.StatusBadRequest, api.Error{Code: api.CodeInvalid, Field: "body", Message: "reading the body: " + err.Error()})
		return nil, false
	}
	return b, true
}

// decodeJSON reads a strict JSON body: unknown fields and wrong types are
// errors that name the field.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, out any) bool {
	b, ok := s.body(w, r)
	return ok && s.decodeBody(w, b, out)
}

// decodeDocumentJSON reads a strict JSON body that carries what a document
// (a config or scenario file) also carries: an endpoint, the throttling
// settings, a worker's registration. Besides decodeJSON's checks, a written
// value the document check refuses (a 0 where zero means nothing, which
// encoding/json would take as unset) is refused here too, so that the API
// and files agree.
func (s *Server) decodeDocumentJSON(w http.ResponseWriter, r *http.Request, out any) bool {
	b, ok := s.body(w, r)
	if !ok {
		return false
	}
	if len(strings.TrimSpace(string(b))) > 0 {
		if list := spec.CheckJSON(b, out); len(list) > 0 {
			s.fail(w, list)
			return false
		}
	}
	return s.decodeBody(w, b, out)
}

// decodeBody decodes b as decodeJSON does.
func (s *Server) decodeBody(w http.ResponseWriter, b []byte, out any) bool {
	if len(strings.TrimSpace(string(b))) == 0 {
		writeError(w, http.StatusBadRequest, api.Error{Code: api.CodeInvalid, Field: "body", Message: "the request body is empty"})
		return false
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		s.fail(w, jsonError(b, out, err))
		return false
	}
	return true
}

// jsonError turns encoding/json's errors into field errors. encoding/json
// names a field without its list indices (cache.kind for cache[1].kind),
// and not at all when a value that decodes itself (a quantity, a
// duration) refuses; spec.CheckJSON walks the body against out to find the
// exact path.
func jsonError(body []byte, out any, err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		if list := spec.CheckJSON(body, out); len(list) > 0 {
			return list
		}
	}
	switch {
	case errors.As(err, &te):
		return model.FieldErrors{{Path: te.Field, Msg: fmt.Sprintf("wrong type: got a JSON %s, want %s", te.Value, te.Type)}}
	case errors.As(err, &se):
		return model.FieldErrors{{Path: "body", Msg: fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, se)}}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return model.FieldErrors{{Path: name, Msg: fmt.Sprintf("unknown field %q", name)}}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return model.FieldErrors{{Path: "body", Msg: "malformed JSON: unexpected end"}}
	}
	return model.FieldErrors{{Path: "body", Msg: err.Error()}}
}

func (s *Server) submit(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.SubmitJobs) {
		return
	}
	b, ok := s.body(w, r)
	if !ok {
		return
	}
	var js spec.Job
	root, err := spec.Decode(b, &js)
	if err != nil {
		s.fail(w, oneJobPerRequest(err))
		return
	}
	if err := s.ctrl.CheckJob(js); err != nil {
		s.fail(w, spec.WithLines(err, root))
		return
	}
	if !s.allowSubmit(w, r, js) {
		return
	}
	strict := r.URL.Query().Get("strict")
	opts := control.SubmitOptions{Strict: strict == "1" || strict == "true", AnySubmitter: principal(r).Role == auth.Admin}
	subs, err := s.ctrl.SubmitCheckedWith(r.Context(), principal(r).SubmitterName(), []spec.Job{js}, opts)
	if err == nil {
		err = subs[0].Err
	}
	if err != nil {
		s.fail(w, spec.WithLines(err, root))
		return
	}
	job := subs[0].Job
	tasks := 0
	for _, n := range job.Counts { // by state
		tasks += n
	}
	s.logger(r).Info("job submitted", "job", job.ID, "queue", job.Queue, "state", job.State, "tasks", tasks, "by", principal(r).TokenID)
	writeJSON(w, http.StatusCreated, job)
}

// oneJobPerRequest says, of text after the job document of a single
// submission, where several jobs go.
func oneJobPerRequest(err error) error {
	var list model.FieldErrors
	if errors.As(err, &list) && len(list) > 0 && errors.Is(list[0].Err, spec.ErrTrailingText) {
		list[0].Msg += "; one job per request: use POST /v1/jobs/bulk for several"
	}
	return err
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.JobFilter{Queue: q.Get("queue"), Share: q.Get("share")}
	if !s.check(w, principal(r).AllowFilter(f.Queue, f.Share)) {
		return
	}
	f.Queues, f.Shares = principal(r).JobScope()
	f.Submitter = q.Get("submitter")
	switch q.Get("mine") {
	case "", "false":
	case "true":
		// With authentication off the name is empty, and every job
		// (none has a submitter) is the caller's.
		f.Submitter = principal(r).SubmitterName()
	default:
		s.fail(w, model.FieldErrors{{Path: "mine", Msg: fmt.Sprintf("%q is not true or false", q.Get("mine"))}})
		return
	}
	if st := q.Get("state"); st != "" {
		f.States = strings.Split(st, ",")
		for _, one := range f.States {
			if !slices.Contains(control.JobStates, one) {
				s.fail(w, model.FieldErrors{{Path: "state", Msg: fmt.Sprintf("unknown job state %q (known: %s)", one, strings.Join(control.JobStates, ", "))}})
				return
			}
		}
	}
	if f.Queue != "" && !s.knownQueue(w, r, f.Queue) {
		return
	}
	switch q.Get("sort") {
	case "", sortSubmitted:
	case "-" + sortSubmitted:
		f.Newest = true
	default:
		s.fail(w, model.FieldErrors{{Path: "sort", Msg: fmt.Sprintf("unknown sort key %q (known: %s, -%s for newest first)", q.Get("sort"), sortSubmitted, sortSubmitted)}})
		return
	}
	var err error
	if f.AfterSeq, err = intParam(q.Get("after")); err != nil {
		s.fail(w, model.FieldErrors{{Path: "after", Msg: err.Error()}})
		return
	}
	limit, err := intParam(q.Get("limit"))
	if err != nil {
		s.fail(w, model.FieldErrors{{Path: "limit", Msg: err.Error()}})
		return
	}
	f.Limit = int(limit)
	list, err := s.jobReads().Jobs(r.Context(), f)
	s.reply(w, list, err)
}

// sortSubmitted is the one key GET /v1/jobs sorts by: submission order,
// oldest first; "-submitted" is newest first.
const sortSubmitted = "submitted"

// knownQueue answers 400 naming the configured queues when a list filter
// names a queue that does not exist: a typo would otherwise look like an
// empty queue. A follower, which has no scheduling state to ask, lets any
// name through.
func (s *Server) knownQueue(w http.ResponseWriter, r *http.Request, name string) bool {
	if s.ctrl == nil {
		return true
	}
	qs, err := s.ctrl.Queues(r.Context())
	if err != nil {
		s.fail(w, err)
		return false
	}
	names := make([]string, 0, len(qs))
	for _, q := range qs {
		if q.Name == name {
			return true
		}
		names = append(names, q.Name)
	}
	s.fail(w, model.FieldErrors{{Path: "queue", Msg: fmt.Sprintf("unknown queue %q (known: %s)", name, strings.Join(names, ", "))}})
	return false
}

func intParam(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a non-negative integer", s)
	}
	return n, nil
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ReadJobs) || !s.visible(w, r, r.PathValue("id")) {
		return
	}
	job, err := s.jobReads().Job(r.Context(), r.PathValue("id"))
	s.reply(w, job, err)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.CancelJobs) || !s.visible(w, r, r.PathValue("id")) {
		return
	}
	job, err := s.ctrl.Cancel(r.Context(), r.PathValue("id"))
	s.reply(w, job, err)
}

func (s *Server) setPriority(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.CancelJobs) || !s.visible(w, r, r.PathValue("id")) {
		return
	}
	var req api.PriorityChange
	if !s.decodeJSON(w, r, &req) || !s.check(w, principal(r).AllowPriority(req.Priority, req.Urgent)) {
		return
	}
	job, err := s.ctrl.SetPriority(r.Context(), r.PathValue("id"), req.Priority, req.Urgent)
	s.reply(w, job, err)
}

func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ReadJobs) || !s.visible(w, r, r.PathValue("id")) {
		return
	}
	lq, err := logQuery(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	logs, err := s.jobReads().Logs(r.Context(), r.PathValue("id"), lq)
	s.reply(w, logs, err)
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ReadEvents) {
		return
	}
	q := r.URL.Query()
	after, err := intParam(q.Get("after"))
	if err != nil {
		s.fail(w, model.FieldErrors{{Path: "after", Msg: err.Error()}})
		return
	}
	limit, err := intParam(q.Get("limit"))
	if err != nil {
		s.fail(w, model.FieldErrors{{Path: "limit", Msg: err.Error()}})
		return
	}
	if limit == 0 || limit > 1000 {
		limit = 1000
	}
	f := store.EventFilter{AfterID: after, Job: q.Get("job"), Limit: int(limit)}
	if v := q.Get("since"); v != "" {
		if f.Since, err = time.Parse(time.RFC3339Nano, v); err != nil {
			s.fail(w, model.FieldErrors{{Path: "since", Msg: fmt.Sprintf("%q is not an RFC 3339 time (like 2026-01-02T15:04:05Z)", v)}})
			return
		}
	}
	if !following(r) {
		f.Tail = q.Get("tail") == "1" || q.Get("tail") == "true"
		evs, err := s.jobReads().Store().Events(r.Context(), f)
		if err != nil {
			s.fail(w, err)
			return
		}
		scope := s.eventScope(r)
		out := make([]api.Event, 0, len(evs))
		for _, e := range evs {
			out = append(out, scope.view(r.Context(), e))
		}
		writeJSON(w, 200, out)
		return
	}
	s.streamEvents(w, r, f)
}

// streamEvents serves server-sent events: every stored event after f.AfterID,
// then new ones as they are committed, with keep-alive comments.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, f store.EventFilter) {
	if _, ok := w.(http.Flusher); !ok {
		writeError(w, http.StatusInternalServerError, api.Error{Code: api.CodeInternal, Message: "streaming is not supported"})
		return
	}
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil && n > f.AfterID {
			f.AfterID = n
		}
	}
	// Each batch gets the write timeout to reach the client: a stream may
	// stay open for days, a client that stops reading may not hold it.
	rc := http.NewResponseController(w)
	send := func(write func()) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(s.opt.Timeouts.Write))
		write()
		return rc.Flush() == nil
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	if !send(func() { w.WriteHeader(http.StatusOK) }) {
		return
	}
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	scope := s.eventScope(r)
	waker, st := s.eventWaker(), s.jobReads().Store()
	for {
		changed := waker.Changed()
		evs, err := st.Events(r.Context(), f)
		if err != nil {
			return
		}
		sent := send(func() {
			for _, e := range evs {
				b, _ := json.Marshal(scope.view(r.Context(), e))
				fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.ID, e.Kind, b)
				f.AfterID = e.ID
			}
		})
		if !sent {
			return
		}
		if len(evs) == f.Limit {
			continue
		}
		select {
		case <-r.Context().Done():
			return
		case <-waker.Closing():
			return
		case <-changed:
		case <-ping.C:
			if !send(func() { fmt.Fprint(w, ": ping\n\n") }) {
				return
			}
		}
		// A stream lives long after its one authentication: end it once
		// its token is revoked or has expired.
		if !s.stillAuthenticated(r) {
			return
		}
	}
}

// eventScope is how one reader of the event log sees events: whole for an
// admin; for a submitter, the message of an event about a job it may not
// see is withheld, since it may quote that job's spec (an input that could
// not be read, a command that would not start). Kinds, times, IDs, reason
// codes and data stay fleet-wide (docs/security.md).
type eventScope struct {
	p     auth.Principal
	jobs  func(ctx context.Context, id string) (store.Job, error)
	sees  map[string]bool // by job ID, for this request or stream
	whole bool
}

// maxEventScopeJobs bounds what a long event stream remembers of the jobs
// it has checked; past it, the memory starts again.
const maxEventScopeJobs = 4096

func (s *Server) eventScope(r *http.Request) *eventScope {
	p := principal(r)
	return &eventScope{p: p, jobs: s.jobReads().Store().JobHeader, sees: map[string]bool{}, whole: p.Role == auth.Admin}
}

func (sc *eventScope) view(ctx context.Context, e store.Event) api.Event {
	v := eventView(e)
	if sc.whole || e.Job == "" || v.Message == "" {
		return v
	}
	sees, ok := sc.sees[e.Job]
	if !ok {
		j, err := sc.jobs(ctx, e.Job)
		sees = err == nil && sc.p.Sees(j.Queue, j.Share)
		if len(sc.sees) >= maxEventScopeJobs {
			clear(sc.sees)
		}
		sc.sees[e.Job] = sees
	}
	if !sees {
		v.Message = ""
	}
	return v
}

func eventView(e store.Event) api.Event {
	return api.Event{ID: e.ID, At: e.At, Kind: e.Kind, Job: e.Job, Task: e.Task, Worker: e.Worker, Reason: e.Reason, Message: e.Message, Data: e.Data}
}

func (s *Server) workers(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ReadWorkers) {
		return
	}
	ws, err := s.ctrl.Workers(r.Context())
	s.reply(w, ws, err)
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.WorkerProtocol) {
		return
	}
	var reg api.Register
	if !s.decodeDocumentJSON(w, r, &reg) || !s.check(w, principal(r).ActAs(reg.Name)) {
		return
	}
	wk, err := s.ctrl.Register(r.Context(), reg)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.logger(r).Info("worker registered", "worker", reg.Name, "running", len(reg.Running))
	writeJSON(w, 200, wk)
}

func (s *Server) lease(w http.ResponseWriter, r *http.Request) {
	if !s.check(w, principal(r).ActAs(r.PathValue("name"))) {
		return
	}
	var req api.LeaseRequest
	if r.ContentLength != 0 {
		if !s.decodeJSON(w, r, &req) {
			return
		}
	}
	wait := min(time.Duration(req.Wait), api.MaxLeaseWait)
	l, err := s.ctrl.Lease(r.Context(), r.PathValue("name"), wait, req.Running)
	s.reply(w, l, err)
}

func (s *Server) reports(w http.ResponseWriter, r *http.Request) {
	if !s.check(w, principal(r).ActAs(r.PathValue("name"))) {
		return
	}
	var req api.Reports
	if !s.decodeJSON(w, r, &req) {
		return
	}
	if req.Stopping {
		if err := s.ctrl.Stopping(r.Context(), r.PathValue("name")); err != nil {
			s.fail(w, err)
			return
		}
	}
	if err := s.ctrl.Report(r.Context(), r.PathValue("name"), req.Reports); err != nil {
		s.fail(w, err)
		return
	}
	if req.Leaving {
		if err := s.ctrl.Leave(r.Context(), r.PathValue("name")); err != nil {
			s.fail(w, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) heartbeat(w http.ResponseWriter, r *http.Request) {
	if !s.check(w, principal(r).ActAs(r.PathValue("name"))) {
		return
	}
	hb, ok := s.heartbeatBody(w, r)
	if !ok {
		return
	}
	if err := s.ctrl.HeartbeatCache(r.Context(), r.PathValue("name"), hb); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) workerState(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ChangeWorkers) {
		return
	}
	var req struct {
		State string `json:"state"`
	}
	if !s.decodeJSON(w, r, &req) {
		return
	}
	wk, err := s.ctrl.SetWorkerState(r.Context(), r.PathValue("name"), model.WorkerState(req.State))
	s.reply(w, wk, err)
}

func (s *Server) queues(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ReadQueues) {
		return
	}
	qs, err := s.ctrl.Queues(r.Context())
	s.reply(w, qs, err)
}

func (s *Server) setPolicy(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ChangePolicies) {
		return
	}
	var pc policy.Config
	if !s.decodeJSON(w, r, &pc) {
		return
	}
	q, err := s.ctrl.SetPolicy(r.Context(), r.PathValue("name"), pc)
	s.reply(w, q, err)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// hold and release take the same authorisation as cancel: a submitter acts
// on the jobs it may see (its own), an admin on all.
func (s *Server) hold(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.CancelJobs) || !s.visible(w, r, r.PathValue("id")) {
		return
	}
	job, err := s.ctrl.Hold(r.Context(), r.PathValue("id"), principal(r).SubmitterName())
	s.reply(w, job, err)
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.CancelJobs) || !s.visible(w, r, r.PathValue("id")) {
		return
	}
	job, err := s.ctrl.Release(r.Context(), r.PathValue("id"))
	s.reply(w, job, err)
}

// setResources changes what a pending job's tasks ask for, with cancel's
// authorisation.
func (s *Server) setResources(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.CancelJobs) || !s.visible(w, r, r.PathValue("id")) {
		return
	}
	var req api.ResourcesChange
	if !s.decodeJSON(w, r, &req) {
		return
	}
	job, err := s.ctrl.SetResources(r.Context(), r.PathValue("id"), req)
	s.reply(w, job, err)
}
