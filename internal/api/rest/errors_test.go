package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// failWith answers err as the API does and returns the status, the
// decoded error and the answer's headers.
func failWith(t *testing.T, s *Server, err error) (int, api.Error, http.Header) {
	t.Helper()
	w := httptest.NewRecorder()
	w.Header().Set(RequestIDHeader, "req-42")
	s.fail(w, err)
	var body api.ErrorBody
	if jerr := json.Unmarshal(w.Body.Bytes(), &body); jerr != nil {
		t.Fatalf("answer %q: %v", w.Body.String(), jerr)
	}
	return w.Code, body.Error, w.Header()
}

func TestErrorsAreAnsweredWithTheirStatusCodeAndField(t *testing.T) {
	s := &Server{opt: Options{Logger: slog.New(slog.DiscardHandler)}}
	cases := []struct {
		name   string
		err    error
		status int
		code   string
		field  string
	}{
		{"a list of field errors names the first field", fmt.Errorf("submit: %w", model.FieldErrors{model.Invalid("tasks[0].run", "must not be empty"), model.Invalid("id", "bad")}),
			http.StatusBadRequest, api.CodeInvalid, "tasks[0].run"},
		{"one field error", model.Invalid("state", "unknown state"), http.StatusBadRequest, api.CodeInvalid, "state"},
		{"a field error wrapping a sentinel is still invalid", &model.FieldError{Path: "endpoint", Msg: "unknown", Err: control.ErrNotFound},
			http.StatusBadRequest, api.CodeInvalid, "endpoint"},
		{"a refusal of auth", &auth.Denied{Message: "no", Field: "queue"}, http.StatusForbidden, api.CodeForbidden, "queue"},
		{"a taken id", &control.IDTakenError{ID: "j1"}, http.StatusConflict, api.CodeConflict, "id"},
		{"a duplicate submission", &control.DuplicateError{IDTakenError: control.IDTakenError{ID: "j1"}, State: "running"}, http.StatusConflict, api.CodeConflict, "id"},
		{"not the leader", fmt.Errorf("lease: %w", &api.NotLeaderError{Leader: "http://b:7070"}), http.StatusServiceUnavailable, api.CodeNotLeader, ""},
		{"not found", fmt.Errorf("%w: job %q", control.ErrNotFound, "x"), http.StatusNotFound, api.CodeNotFound, ""},
		{"conflict", fmt.Errorf("%w: ended", control.ErrConflict), http.StatusConflict, api.CodeConflict, ""},
		{"forbidden", control.ErrForbidden, http.StatusForbidden, api.CodeForbidden, ""},
		{"invalid", control.ErrInvalid, http.StatusBadRequest, api.CodeInvalid, ""},
		{"too large", &http.MaxBytesError{Limit: 10}, http.StatusRequestEntityTooLarge, api.CodeTooLarge, "body"},
		{"too slow", fmt.Errorf("%w: 3 bytes", errBodyTooSlow), http.StatusRequestTimeout, api.CodeTimeout, "body"},
		{"overloaded", errOverloaded, http.StatusServiceUnavailable, api.CodeOverloaded, ""},
		{"store unavailable", fmt.Errorf("write: %w", store.ErrUnavailable), http.StatusServiceUnavailable, api.CodeStoreUnavailable, ""},
		{"stopped", control.ErrStopped, http.StatusServiceUnavailable, api.CodeUnavailable, ""},
		{"canceled", context.Canceled, http.StatusServiceUnavailable, api.CodeUnavailable, ""},
		{"anything else", errors.New("disk I/O error at /var/lib/allot/allot.db"), http.StatusInternalServerError, api.CodeInternal, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, e, _ := failWith(t, s, tc.err)
			if status != tc.status || e.Code != tc.code || e.Field != tc.field {
				t.Errorf("answer %d %s field %q, want %d %s field %q", status, e.Code, e.Field, tc.status, tc.code, tc.field)
			}
		})
	}
}

func TestAnInternalErrorIsLoggedWithTheRequestIDAndNotSent(t *testing.T) {
	var log bytes.Buffer
	s := &Server{opt: Options{Logger: slog.New(slog.NewTextHandler(&log, nil))}}
	secret := "open /var/lib/allot/allot.db: permission denied"
	status, e, _ := failWith(t, s, errors.New(secret))
	if status != http.StatusInternalServerError || e.Code != api.CodeInternal {
		t.Fatalf("answer %d %s, want 500 internal", status, e.Code)
	}
	if strings.Contains(e.Message, "allot.db") || !strings.Contains(e.Message, "req-42") {
		t.Errorf("message %q: want the request id and nothing of the failure", e.Message)
	}
	if !strings.Contains(log.String(), "req-42") || !strings.Contains(log.String(), "permission denied") {
		t.Errorf("log %q: want the failure with the request id", log.String())
	}
}

func TestRefusalsThatMayBeRetriedSayWhen(t *testing.T) {
	s := &Server{opt: Options{Logger: slog.New(slog.DiscardHandler)}}
	for _, err := range []error{store.ErrUnavailable, errOverloaded} {
		if _, _, h := failWith(t, s, err); h.Get("Retry-After") == "" {
			t.Errorf("%v: no Retry-After", err)
		}
	}
}

func TestANotLeaderAnswerNamesTheLeaderInItsBodyAndHeader(t *testing.T) {
	s := &Server{opt: Options{Logger: slog.New(slog.DiscardHandler)}}
	status, e, h := failWith(t, s, &api.NotLeaderError{Leader: "https://b.example:7070"})
	if status != http.StatusServiceUnavailable || e.Leader != "https://b.example:7070" || h.Get(api.LeaderHeader) != e.Leader {
		t.Errorf("answer %d %+v, header %q: want 503 naming the leader in both", status, e, h.Get(api.LeaderHeader))
	}
	if _, e, h := failWith(t, s, &api.NotLeaderError{}); e.Leader != "" || h.Get(api.LeaderHeader) != "" {
		t.Errorf("no leader known: %+v %v, want neither body nor header to name one", e, h)
	}
}
