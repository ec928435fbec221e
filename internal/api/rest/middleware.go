package rest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
)

// RequestObserver is told about every request the API answers, by route
// pattern; internal/metrics implements it. Its methods are called on the
// request's goroutine and must be quick.
type RequestObserver interface {
	// RequestStarted is called when a request for route arrives.
	RequestStarted(route string)
	// RequestDone is called once the request is answered.
	RequestDone(route string, status int, took time.Duration)
}

// RequestIDHeader carries a request's id: taken from the caller when it
// sends a usable one (a proxy's or a client's trace id), generated
// otherwise, and always sent back, so that a failed call can be found in
// the server's log.
const RequestIDHeader = "X-Request-Id"

// unmatchedRoute labels requests no route matched, so that scanning for
// paths cannot grow the label set.
const unmatchedRoute = "unmatched"

// quietRoutes are the frequent ones: the worker protocol, probes and
// scrapes. They, and the dashboard's periodic refreshes (htmx requests),
// are logged at debug level so that the info log shows what people and
// programs asked for.
var quietRoutes = map[string]bool{
	"POST /v1/workers/{name}/lease":     true,
	"POST /v1/workers/{name}/heartbeat": true,
	"POST /v1/workers/{name}/reports":   true,
	"GET /healthz":                      true,
	"GET /readyz":                       true,
	"GET /metrics":                      true,
}

// requestInfo is what the middleware learns about a request as it goes
// through the layers: its id and logger first, then (after authentication)
// who made it, then (after routing) which job or worker it concerns.
type requestInfo struct {
	id        string
	route     string
	log       *slog.Logger
	principal auth.Principal
	job       string
	worker    string
}

type requestKey struct{}

// observe is the outermost layer: it gives the request an id, puts a logger
// carrying it into the context, times the answer, and logs one line and
// tells the RequestObserver when the request is answered.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := requestID(r.Header.Get(RequestIDHeader))
		w.Header().Set(RequestIDHeader, id)
		// The route as ServeMux will match it; the mux sets r.Pattern
		// only on the copy of the request it receives.
		_, route := s.mux.Handler(r)
		if route == "" {
			route = unmatchedRoute
		}
		info := &requestInfo{id: id, route: route, log: s.opt.Logger.With("request_id", id)}
		sw := &statusWriter{ResponseWriter: w}
		if s.opt.Requests != nil {
			s.opt.Requests.RequestStarted(route)
		}
		defer func() {
			took := time.Since(start)
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			// A handler that panics is answered by net/http, which closes
			// the connection: count it as the 500 it is, then let the
			// panic go on to net/http.
			if p := recover(); p != nil {
				status = http.StatusInternalServerError
				defer panic(p)
			}
			if s.opt.Requests != nil {
				s.opt.Requests.RequestDone(route, status, took)
			}
			level := slog.LevelInfo
			switch {
			case status >= 500:
				level = slog.LevelWarn
			case quietRoutes[route], r.Header.Get("HX-Request") == "true": // the dashboard's refreshes
				level = slog.LevelDebug
			}
			log := info.log
			if !log.Enabled(r.Context(), level) {
				return
			}
			attrs := make([]slog.Attr, 0, 8)
			attrs = append(attrs, slog.String("method", r.Method), slog.String("route", route), slog.Int("status", status),
				slog.Duration("took", took))
			if p := info.principal; p.Name != "" || p.TokenID != "" {
				attrs = append(attrs, slog.String("principal", p.Name))
				if p.TokenID != "" {
					attrs = append(attrs, slog.String("token", p.TokenID))
				}
			}
			if info.job != "" {
				attrs = append(attrs, slog.String("job", info.job))
			}
			if info.worker != "" {
				attrs = append(attrs, slog.String("worker", info.worker))
			}
			log.LogAttrs(r.Context(), level, "request", attrs...)
		}()
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), requestKey{}, info)))
	})
}

// identify runs after authentication, in front of the routes: it notes the
// caller for the request's log line and, once the route has matched, the
// job or worker the request concerns.
func (s *Server) identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := r.Context().Value(requestKey{}).(*requestInfo)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		info.principal = principal(r)
		next.ServeHTTP(w, r) // the mux sets r.Pattern and the path values on r
		switch {
		case strings.Contains(r.Pattern, " /v1/jobs/{id}"):
			info.job = r.PathValue("id")
		case strings.Contains(r.Pattern, " /v1/workers/{name}"):
			info.worker = r.PathValue("name")
		}
	})
}

// logger is the request's logger: it carries request_id. Handlers log with
// it so that every line about a request can be found by its id.
func (s *Server) logger(r *http.Request) *slog.Logger {
	if info, ok := r.Context().Value(requestKey{}).(*requestInfo); ok {
		return info.log
	}
	return s.opt.Logger
}

// RequestID returns the id the middleware gave the request of ctx, or "".
func RequestID(ctx context.Context) string {
	if info, ok := ctx.Value(requestKey{}).(*requestInfo); ok {
		return info.id
	}
	return ""
}

// requestID returns the caller's id when it is short and made of safe
// characters (it goes into logs and a header), a new random one otherwise.
func requestID(given string) string {
	if n := len(given); n > 0 && n <= 128 && strings.IndexFunc(given, unsafeIDRune) < 0 {
		return given
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func unsafeIDRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	case r == '-', r == '_', r == '.', r == ':', r == '/', r == '+', r == '=':
		return false
	}
	return true
}

// statusWriter remembers the status a handler answered with. It passes
// Flush on (event streams need it) and unwraps for http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush sends buffered data to the client.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// metrics serves GET /metrics to any authenticated caller: the figures
// name queues, groups, endpoints and worker states but no job contents.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ReadMetrics) {
		return
	}
	if s.opt.Metrics == nil {
		writeError(w, http.StatusNotFound, api.Error{Code: api.CodeNotFound, Message: "this server exports no metrics"})
		return
	}
	s.opt.Metrics.ServeHTTP(w, r)
}
