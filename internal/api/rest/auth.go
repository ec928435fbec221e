package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/netlimit"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

// openPaths answer without a token: probes (load balancers, Kubernetes)
// and the API description carry no secrets and must work before anyone has
// a token.
var openPaths = map[string]bool{"/healthz": true, "/readyz": true, "/openapi.json": true}

// dashboardPattern is the route of the dashboard: every path no API route
// matches. Its pages check tokens with the same Authenticator, but accept
// the login cookie a browser keeps, which the API never does.
const dashboardPattern = "/"

// authenticate runs before every route: it puts the caller's principal in
// the request context, or answers 401. With authentication off
// (Options.Auth nil) every caller is auth.Anonymous, an admin.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if openPaths[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		if _, pattern := s.mux.Handler(r); pattern == dashboardPattern {
			next.ServeHTTP(w, r) // the dashboard authenticates its pages itself: a bearer header or its login cookie
			return
		}
		if s.opt.Auth == nil {
			next.ServeHTTP(w, r.WithContext(auth.NewContext(r.Context(), auth.Anonymous)))
			return
		}
		p, err := s.opt.Auth.Authenticate(r.Context(), r.Header.Get("Authorization"))
		if err != nil {
			if netlimit.Reserved(r.Context()) {
				// As for a refusal in the reserve (admitReserved): the slot
				// is not held for a body nobody will read.
				w.Header().Set("Connection", "close")
				_ = http.NewResponseController(w).SetReadDeadline(time.Now())
			}
			s.unauthenticated(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.NewContext(r.Context(), p)))
	})
}

// unauthenticated answers a failed authentication: 401 with a
// WWW-Authenticate challenge (RFC 6750) for a missing or bad token, the
// store's failure otherwise.
func (s *Server) unauthenticated(w http.ResponseWriter, err error) {
	if !errors.Is(err, auth.ErrUnauthenticated) {
		s.fail(w, err)
		return
	}
	challenge := `Bearer realm="allot"`
	if !errors.Is(err, auth.ErrMissing) {
		challenge += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	writeError(w, http.StatusUnauthorized, api.Error{Code: api.CodeUnauthorized, Message: err.Error()})
}

// stillAuthenticated re-checks the request's token, for long-lived
// answers (event streams) that must end once their token is revoked.
func (s *Server) stillAuthenticated(r *http.Request) bool {
	if s.opt.Auth == nil {
		return true
	}
	_, err := s.opt.Auth.Authenticate(r.Context(), r.Header.Get("Authorization"))
	return err == nil
}

// principal is the caller of r, as authenticate found it.
func principal(r *http.Request) auth.Principal { return auth.FromContext(r.Context()) }

// allow answers 403 and returns false unless the caller may do a.
func (s *Server) allow(w http.ResponseWriter, r *http.Request, a auth.Action) bool {
	if err := principal(r).Allow(a); err != nil {
		s.fail(w, err)
		return false
	}
	return true
}

// check answers 403 (or whatever err deserves) and returns false when err
// is not nil.
func (s *Server) check(w http.ResponseWriter, err error) bool {
	if err != nil {
		s.fail(w, err)
		return false
	}
	return true
}

// visible answers 404, as for a job that does not exist, and returns false
// when the caller may not see job id: a submitter neither reads nor cancels
// another team's jobs, nor learns which IDs they use. An admin needs no
// lookup.
func (s *Server) visible(w http.ResponseWriter, r *http.Request, id string) bool {
	p := principal(r)
	if p.Role == auth.Admin {
		return true
	}
	j, err := s.jobReads().Store().JobHeader(r.Context(), id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.fail(w, err)
		return false
	}
	if err != nil || !p.Sees(j.Queue, j.Share) {
		s.fail(w, fmt.Errorf("%w: job %q", control.ErrNotFound, id))
		return false
	}
	return true
}

// queueDefault is the queue a job that names none goes to, as the
// controller decides it (the only queue, or spec.DefaultQueue), read once
// from the controller: the queues are fixed while the server runs.
type queueDefault struct {
	mu   sync.Mutex
	name string
}

func (q *queueDefault) get(ctx context.Context, ctrl Queues) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.name != "" {
		return q.name, nil
	}
	qs, err := ctrl.Queues(ctx)
	if err != nil {
		return "", err
	}
	q.name = spec.DefaultQueue
	if len(qs) == 1 {
		q.name = qs[0].Name
	}
	return q.name, nil
}

// allowSubmit answers 403 and returns false unless the caller may submit
// js (submitDenied).
func (s *Server) allowSubmit(w http.ResponseWriter, r *http.Request, js spec.Job) bool {
	return s.check(w, s.submitDenied(r, js))
}

// submitDenied returns why the caller of r may not submit js, or nil: its
// queue (or the default one) and its share must be the token's, and its
// priority, urgency, requestor and SLA group within the token's limits.
func (s *Server) submitDenied(r *http.Request, js spec.Job) error {
	p := principal(r)
	if p.Role == auth.Admin {
		return nil
	}
	queue := js.Queue
	if queue == "" {
		var err error
		if queue, err = s.defaultQueue.get(r.Context(), s.ctrl); err != nil {
			return err
		}
	}
	if err := p.AllowSubmit(queue, js.Share); err != nil {
		return err
	}
	return p.AllowScheduling(jobScheduling(js))
}

// jobScheduling is what js asks of the scheduler, for the token's limits.
func jobScheduling(js spec.Job) auth.Scheduling {
	return auth.Scheduling{Priority: js.Priority, Urgent: js.Urgent, Requestor: js.Requestor, SLAGroup: js.SLAGroup, User: js.User}
}
