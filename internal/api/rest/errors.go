package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/netlimit"
	"github.com/allot-sched/allot/internal/store"
)

// errorKind is one row of errorKinds: the errors it matches, and the
// status and API error code they are answered with.
type errorKind struct {
	status int
	code   string
	// match reports whether err is of this kind; for a typed error it also
	// fills what the answer says beyond the code (the field, the details,
	// a message other than err's text).
	match func(err error, e *api.Error) bool
	// retryAfter, when set, gives the Retry-After header: the same request
	// may be sent again that many seconds later.
	retryAfter func() string
}

// is matches err when it wraps target.
func is(target error) func(error, *api.Error) bool {
	return func(err error, _ *api.Error) bool { return errors.Is(err, target) }
}

// errorKinds is the one table that maps the errors of the layers below
// (control, store, auth, spec, the request itself) to answers. fail looks
// the error up in order, first match wins: the typed errors that name a
// field come before the sentinels, which they may also wrap. An error no
// row matches is a 500 (see fail).
var errorKinds = []errorKind{
	{status: http.StatusForbidden, code: api.CodeForbidden, match: func(err error, e *api.Error) bool {
		var d *auth.Denied
		if !errors.As(err, &d) {
			return false
		}
		e.Message, e.Field = d.Message, d.Field
		return true
	}},
	{status: http.StatusServiceUnavailable, code: api.CodeNotLeader, match: func(err error, e *api.Error) bool {
		var nl *api.NotLeaderError
		if !errors.As(err, &nl) {
			return false
		}
		e.Message, e.Leader = nl.Error(), nl.Leader
		return true
	}},
	{status: http.StatusConflict, code: api.CodeConflict, match: func(err error, e *api.Error) bool {
		var dup *control.DuplicateError
		if !errors.As(err, &dup) {
			return false
		}
		e.Message, e.Field, e.Duplicate = dup.Error(), "id", &api.Duplicate{ID: dup.ID, State: dup.State}
		return true
	}},
	{status: http.StatusConflict, code: api.CodeConflict, match: func(err error, e *api.Error) bool {
		var taken *control.IDTakenError
		if !errors.As(err, &taken) {
			return false
		}
		e.Message, e.Field = taken.Error(), "id"
		return true
	}},
	{status: http.StatusTooManyRequests, code: api.CodeTooManyTasks, match: func(err error, e *api.Error) bool {
		var tm *control.TooManyTasksError
		if !errors.As(err, &tm) {
			return false
		}
		e.Message, e.Field = tm.Error(), "tasks"
		return true
	}},
	{status: http.StatusBadRequest, code: api.CodeInvalid, match: func(err error, e *api.Error) bool {
		var list model.FieldErrors
		if !errors.As(err, &list) || len(list) == 0 {
			return false
		}
		e.Message, e.Field, e.Line, e.Details = list.Error(), list[0].Path, list[0].Line, list
		return true
	}},
	{status: http.StatusBadRequest, code: api.CodeInvalid, match: func(err error, e *api.Error) bool {
		var fe *model.FieldError
		if !errors.As(err, &fe) {
			return false
		}
		e.Message, e.Field, e.Line = fe.Error(), fe.Path, fe.Line
		return true
	}},
	{status: http.StatusNotFound, code: api.CodeNotFound, match: is(control.ErrNotFound)},
	{status: http.StatusConflict, code: api.CodeConflict, match: is(control.ErrConflict)},
	{status: http.StatusForbidden, code: api.CodeForbidden, match: is(control.ErrForbidden)},
	{status: http.StatusBadRequest, code: api.CodeInvalid, match: is(control.ErrInvalid)},
	{status: http.StatusUnauthorized, code: api.CodeUnauthorized, match: is(auth.ErrUnauthenticated)},
	{status: http.StatusRequestEntityTooLarge, code: api.CodeTooLarge, match: func(err error, e *api.Error) bool {
		var mbe *http.MaxBytesError
		if !errors.As(err, &mbe) {
			return false
		}
		e.Message, e.Field = fmt.Sprintf("the request body is larger than the limit of %d bytes", mbe.Limit), "body"
		return true
	}},
	{status: http.StatusRequestTimeout, code: api.CodeTimeout, match: func(err error, e *api.Error) bool {
		e.Field = "body"
		return errors.Is(err, errBodyTooSlow)
	}},
	{status: http.StatusServiceUnavailable, code: api.CodeOverloaded, match: is(errOverloaded), retryAfter: netlimit.RetryAfterHeader},
	{status: http.StatusServiceUnavailable, code: api.CodeStoreUnavailable, match: is(store.ErrUnavailable),
		retryAfter: func() string { return storeRetryAfter }},
	{status: http.StatusServiceUnavailable, code: api.CodeHeld, match: is(control.ErrHeld),
		retryAfter: func() string { return storeRetryAfter }},
	{status: http.StatusServiceUnavailable, code: api.CodeUnavailable, match: is(control.ErrStopped)},
	{status: http.StatusServiceUnavailable, code: api.CodeUnavailable, match: is(context.Canceled)},
	{status: http.StatusServiceUnavailable, code: api.CodeUnavailable, match: is(context.DeadlineExceeded)},
}

// fail answers with the status and body err deserves (errorKinds). An
// error of no known kind is a fault of the server: its text, which may
// name files, queries or internal state, goes to the log with the
// request's id, and the caller gets a generic message with that id.
func (s *Server) fail(w http.ResponseWriter, err error) {
	if errors.Is(err, control.ErrStopped) {
		if follower, leader := s.notLeading(); follower {
			// The loop stopped because this replica lost the lead while
			// the request was on its way: the new leader takes it.
			err = &api.NotLeaderError{Leader: leader}
		}
	}
	k, e, ok := errorOf(err)
	if !ok {
		id := w.Header().Get(RequestIDHeader) // set by observe before any handler runs
		s.opt.Logger.Error("request failed", "request_id", id, "err", err)
		writeError(w, http.StatusInternalServerError, api.Error{Code: api.CodeInternal, Message: internalMessage(id)})
		return
	}
	if k.code == api.CodeStoreUnavailable {
		s.opt.Logger.Debug("request refused: the store refuses writes", "err", err)
	}
	if k.retryAfter != nil {
		w.Header().Set("Retry-After", k.retryAfter())
	}
	if e.Leader != "" {
		w.Header().Set(api.LeaderHeader, e.Leader)
	}
	writeError(w, k.status, e)
}

// errorOf looks err up in errorKinds: its kind and the error the answer
// carries, or false for an error of no known kind.
func errorOf(err error) (errorKind, api.Error, bool) {
	for _, k := range errorKinds {
		e := api.Error{Code: k.code, Message: err.Error()}
		if k.match(err, &e) {
			return k, e, true
		}
	}
	return errorKind{}, api.Error{}, false
}

// internalMessage is what the caller of a request that failed inside the
// server is told: nothing of the failure, the id to find it in the log.
func internalMessage(id string) string {
	if id == "" {
		return "internal error; the server's log has the details"
	}
	return fmt.Sprintf("internal error (request id %s); the server's log has the details", id)
}

// reply answers a read or a change: the error as fail maps it, else v with
// 200.
func (s *Server) reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// maxErrorMessage bounds the message of an error answer: messages quote
// what was sent, and a refused 1 MiB value need not come back whole.
const maxErrorMessage = 4 << 10

func writeError(w http.ResponseWriter, status int, e api.Error) {
	writeJSON(w, status, api.ErrorBody{Error: shortened(e)})
}

// shortened is e with its message, field and details cut to
// maxErrorMessage each.
func shortened(e api.Error) api.Error {
	e.Message = shorten(e.Message)
	if len(e.Details) > 0 {
		details := make([]*model.FieldError, len(e.Details))
		for i, d := range e.Details {
			c := *d
			c.Path, c.Msg = shorten(c.Path), shorten(c.Msg)
			details[i] = &c
		}
		e.Details = details
	}
	e.Field = shorten(e.Field)
	return e
}

func shorten(s string) string {
	if len(s) <= maxErrorMessage {
		return s
	}
	cut := maxErrorMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
