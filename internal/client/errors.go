package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// apiError lets Error embed api.Error: embedding it under its own name would
// give Error a field called Error, which cannot coexist with the Error method.
type apiError = api.Error

// Error is an error answer of the server: its HTTP status and the decoded
// api.Error (code, message, offending field). Callers branch on Code (or the
// Is helpers) rather than on message text, which is for people.
type Error struct {
	Status int
	apiError
	// RetryAfter is the server's Retry-After: how long to wait before
	// sending the request again (an overloaded answer); 0 if none.
	RetryAfter time.Duration
	// Location is where a redirect answer (3xx) points; the client does
	// not follow it (docs/security.md).
	Location string
	// Foreign is set when the body is not an error of the Allot API (a
	// web server's page, a proxy's): the URL may not reach an Allot server
	// at all. Code is then derived from Status.
	Foreign bool
}

// ErrNotAPI is wrapped by the error of a successful answer whose body is
// not the API's JSON: the URL reaches some other HTTP server.
var ErrNotAPI = errors.New("the answer is not JSON of the Allot API")

// IsForeign reports whether err is an answer that did not come from the
// Allot API: an error page that is not an API error, or a success whose
// body is not JSON. A gateway's or proxy's "try later" (5xx, 408, 429) is
// not counted: an Allot server may well stand behind it.
func IsForeign(err error) bool {
	if errors.Is(err, ErrNotAPI) {
		return true
	}
	var e *Error
	return errors.As(err, &e) && e.Foreign && !Retryable(err)
}

func (e *Error) Error() string {
	var b strings.Builder
	// The server's message is usually whole ("line 5: tasks[0].cpu: ...");
	// the field goes in front only when the message does not name it.
	if e.Field != "" && !strings.Contains(e.Message, e.Field+": ") {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	if e.Message != "" {
		b.WriteString(e.Message)
	} else {
		b.WriteString(http.StatusText(e.Status))
	}
	head := b.String()
	fmt.Fprintf(&b, " (%s, HTTP %d)", e.Code, e.Status)
	for _, d := range e.Details {
		if d := d.Error(); !strings.Contains(head, d) {
			b.WriteString("\n  ")
			b.WriteString(d)
		}
	}
	return b.String()
}

// API returns the decoded error body, for callers that print or forward it.
func (e *Error) API() api.Error { return e.apiError }

// maxErrorBody bounds how much of an error answer is read: an error from a
// proxy can be a whole HTML page.
const maxErrorBody = 64 << 10

// decodeError turns a non-2xx answer into *Error. A body that is not an
// api.ErrorBody (a proxy's page, a plain-text 404 of a wrong base URL) still
// yields a code derived from the status, so IsNotFound and Retryable work.
func decodeError(status int, body []byte) *Error {
	e := &Error{Status: status}
	var eb api.ErrorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
		e.apiError = eb.Error
		return e
	}
	e.Code, e.Foreign = codeForStatus(status), true
	e.Message = strings.TrimSpace(string(body))
	if len(e.Message) > 200 {
		e.Message = e.Message[:200] + "…"
	}
	return e
}

func codeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return api.CodeInvalid
	case http.StatusUnauthorized:
		return api.CodeUnauthorized
	case http.StatusForbidden:
		return api.CodeForbidden
	case http.StatusNotFound:
		return api.CodeNotFound
	case http.StatusConflict:
		return api.CodeConflict
	case http.StatusRequestEntityTooLarge:
		return api.CodeTooLarge
	case http.StatusRequestTimeout:
		return api.CodeTimeout
	case http.StatusUnsupportedMediaType:
		return api.CodeUnsupportedMediaType
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusTooManyRequests:
		return api.CodeUnavailable
	default:
		return api.CodeInternal
	}
}

func hasCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// IsNotFound reports whether err is a not_found answer: an unknown job, or
// a worker the server does not know (it must register again).
func IsNotFound(err error) bool { return hasCode(err, api.CodeNotFound) }

// IsInvalid reports whether the server rejected the request's content.
func IsInvalid(err error) bool { return hasCode(err, api.CodeInvalid) }

// IsTooLarge reports whether the request body was over the server's limit.
func IsTooLarge(err error) bool { return hasCode(err, api.CodeTooLarge) }

// IsConflict reports whether the request conflicts with the current state.
func IsConflict(err error) bool { return hasCode(err, api.CodeConflict) }

// IsUnauthorized reports whether the token is missing or wrong.
func IsUnauthorized(err error) bool { return hasCode(err, api.CodeUnauthorized) }

// IsForbidden reports whether the token's role may not do this.
func IsForbidden(err error) bool { return hasCode(err, api.CodeForbidden) }

// IsUnavailable reports whether the server (or a proxy before it) said it
// cannot answer now, e.g. its loop is shutting down.
func IsUnavailable(err error) bool { return hasCode(err, api.CodeUnavailable) }

// IsNotLeader reports whether the server is a replica that does not lead
// and did not handle the request; NotLeader names the leader.
func IsNotLeader(err error) bool { return hasCode(err, api.CodeNotLeader) }

// IsOverloaded reports whether the server refused the request at a
// connection limit, without handling it: it may be sent again after
// RetryAfter(err), whatever it was.
func IsOverloaded(err error) bool { return hasCode(err, api.CodeOverloaded) }

// RetryAfter returns how long the server asked the caller to wait before
// sending the request again (its Retry-After), or 0.
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// maxRetryAfter caps what a server (or a proxy before it) may ask a
// client to wait.
const maxRetryAfter = 10 * time.Minute

// parseRetryAfter reads a Retry-After header: seconds, or an HTTP date
// (relative to now); 0 when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter)
	}
	return 0
}

// Retryable reports whether the same request may succeed later unchanged:
// transport errors (server down, connection reset) and answers that say
// "not now" (5xx, 408, 429). Answers about the request itself (invalid,
// unauthorized, not found) are not retryable. A cancelled or expired
// context is not retryable either: the caller gave up.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Status >= 500 || e.Status == http.StatusRequestTimeout || e.Status == http.StatusTooManyRequests
	}
	return true
}
