package rest

import (
	"fmt"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// screen runs in front of every route, before a body is read or a token
// checked, and refuses what no route should take:
//
//   - with authentication off, a request a web page made a browser send
//     (localOnly): every caller is an admin then, and a page of any site
//     could otherwise submit jobs, that is run commands, on the machine
//     (a job's media type alone does not stop it: DNS rebinding makes the
//     page the server's own site);
//   - a body sent to a route that reads none (GET, HEAD, DELETE,
//     OPTIONS): the server would otherwise wait for it after answering,
//     and a probe with a Content-Length would hold a reserved connection
//     until the body timeout.
//
// Each refusal closes the connection at once, without reading the body.
// (mediaTypes, after authentication, refuses the bodies an API route does
// not parse.)
func (s *Server) screen(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opt.Auth == nil {
			if e, ok := s.localOnly(r); !ok {
				refuseAtOnce(w, http.StatusForbidden, e)
				return
			}
		}
		if bodyless[r.Method] && hasBody(r) {
			refuseAtOnce(w, http.StatusBadRequest, api.Error{Code: api.CodeInvalid, Field: "body",
				Message: fmt.Sprintf("%s %s takes no body, and this request announces one (Content-Length or Transfer-Encoding): it is refused without being read", r.Method, r.URL.Path)})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// mediaTypes refuses, on an API route, a body of a media type the route
// does not parse (mediaTypeAllowed): a browser sends text/plain, a form's
// types or a body without a type to any site without asking it first (no
// CORS preflight), but never application/json or YAML. It runs after
// authentication, so that a caller without a token learns only that.
func (s *Server) mediaTypes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if route := routeOf(r); s.apiRoutes[route] && bodied[r.Method] {
			if e, ok := mediaTypeAllowed(route, r); !ok {
				refuseAtOnce(w, http.StatusUnsupportedMediaType, e)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// refuseAtOnce answers status and e and closes the connection without
// reading what is left of the request's body (as admitReserved does).
func refuseAtOnce(w http.ResponseWriter, status int, e api.Error) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	w.Header().Set("Connection", "close")
	writeError(w, status, e)
}

// bodyless are the methods whose routes read no body; bodied those whose
// API routes may.
var (
	bodyless = map[string]bool{http.MethodGet: true, http.MethodHead: true, http.MethodDelete: true, http.MethodOptions: true}
	bodied   = map[string]bool{http.MethodPost: true, http.MethodPut: true, http.MethodPatch: true}
)

// hasBody reports whether r announces a body.
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 || len(r.TransferEncoding) > 0
}

// The media types the API parses. A job is YAML or JSON (JSON is YAML
// too); a bulk body is NDJSON or a YAML stream; every other route reads
// JSON.
var (
	jsonTypes = []string{"application/json"}
	jobTypes  = []string{"application/json", "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"}
	bulkTypes = append(slices.Sorted(maps.Keys(ndjsonTypes)), jobTypes...)
)

// routeMediaTypes are the routes that read more than JSON.
var routeMediaTypes = map[string][]string{
	"POST /v1/jobs":      jobTypes,
	"POST /v1/jobs/bulk": bulkTypes,
}

// browserSimpleTypes are the media types a page may make a browser send
// to any site without asking it first (the CORS-safelisted ones): the API
// takes none of them, with a body or without (a form with no fields posts
// an empty one).
var browserSimpleTypes = map[string]bool{"text/plain": true, "application/x-www-form-urlencoded": true, "multipart/form-data": true}

// mediaTypeAllowed checks the Content-Type of a request to an API route
// that may carry a body. A body must be of a type the route parses; a body
// without a type is refused, since a browser sends a Blob without one to
// any site without asking. A request without a body needs no type (the
// CLI sends none with a cancel), and any but browserSimpleTypes is let
// through: nothing is parsed.
func mediaTypeAllowed(route string, r *http.Request) (api.Error, bool) {
	types, ok := routeMediaTypes[route]
	if !ok {
		types = jsonTypes
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		if !hasBody(r) {
			return api.Error{}, true
		}
		return api.Error{Code: api.CodeUnsupportedMediaType, Field: "Content-Type",
			Message: fmt.Sprintf("the request has a body but no Content-Type header: send Content-Type: %s", strings.Join(types, ", or "))}, false
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && !hasBody(r) && !browserSimpleTypes[mt] {
		return api.Error{}, true
	}
	for _, t := range types {
		if err == nil && mt == t {
			return api.Error{}, true
		}
	}
	return api.Error{Code: api.CodeUnsupportedMediaType, Field: "Content-Type",
		Message: fmt.Sprintf("Content-Type %q is not a media type %s reads: send %s", ct, route, strings.Join(types, ", or "))}, false
}

// localOnly checks, with authentication off, that r was not sent by a web
// page of some site: its Host must be a loopback name or address, or one
// of Options.Hosts, so that a page cannot reach the server under a name
// of its own that it points at this machine (DNS rebinding); and an
// Origin, which browsers send with every cross-site POST, must be the
// server's own. Programs (the CLI, agents, curl) send no Origin and the
// Host they were given.
func (s *Server) localOnly(r *http.Request) (api.Error, bool) {
	if !s.hostAllowed(r.Host) {
		return api.Error{Code: api.CodeForbidden, Field: "Host",
			Message: fmt.Sprintf("Host %q is not a name this server answers to: with authentication off it serves only requests to a loopback address (localhost, 127.0.0.1, [::1]) or to its own listen and advertised addresses, so that no web page can reach it through a name of its own (DNS rebinding); use one of those, or turn authentication on", r.Host)}, false
	}
	if o, ok := r.Header["Origin"]; ok && !sameOriginHost(strings.Join(o, ","), r.Host) {
		return api.Error{Code: api.CodeForbidden, Field: "Origin",
			Message: fmt.Sprintf("Origin %q is not this server's own: with authentication off every caller is an admin, so the server refuses what a web page of another site makes a browser send", strings.Join(o, ","))}, false
	}
	return api.Error{}, true
}

// hostAllowed reports whether a request's Host (with or without a port)
// names this server while authentication is off. An empty one (an
// HTTP/1.0 client) is no browser's.
func (s *Server) hostAllowed(hostport string) bool {
	if hostport == "" {
		return true
	}
	host := hostOnly(hostport)
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	if ip != nil && ip.IsLoopback() {
		return true
	}
	for _, h := range s.opt.Hosts {
		allowed := hostOnly(h)
		if allowed == host {
			return true
		}
		// Listening on every address: a browser names an address only
		// when it connects to that very address.
		if a := net.ParseIP(allowed); ip != nil && (allowed == "" || a != nil && a.IsUnspecified()) {
			return true
		}
	}
	return false
}

// hostOnly is the lower-case host of "host", "host:port", "[v6]" or
// "[v6]:port".
func hostOnly(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
}

// sameOriginHost reports whether origin (scheme://host[:port]) names the
// host and port of the request, a default port written or not.
func sameOriginHost(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" && u.Path != "/" {
		return false
	}
	norm := func(hp string) string {
		hp = strings.ToLower(hp)
		if h, port, err := net.SplitHostPort(hp); err == nil && (u.Scheme == "http" && port == "80" || u.Scheme == "https" && port == "443") {
			return net.JoinHostPort(h, "") // the default port dropped: "h:" for both
		}
		if _, _, err := net.SplitHostPort(hp); err != nil {
			return net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(hp, "["), "]"), "")
		}
		return hp
	}
	return norm(u.Host) == norm(host)
}
