package rest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/netlimit"
)

// Defaults of Timeouts' zero fields (docs/security.md, "Connections and
// timeouts").
const (
	DefaultIdleTimeout   = 60 * time.Second
	DefaultHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout   = 30 * time.Second
	DefaultMinBodyRate   = 4 << 10 // bytes per second
	DefaultWriteTimeout  = 30 * time.Second
)

// Timeouts bound how long a client may take over each part of a request,
// so that a slow or silent one cannot hold a connection for ever. They are
// per request rather than the http.Server's ReadTimeout and WriteTimeout,
// which would cut lease long polls and event streams: those get theirs
// when they have something to send.
type Timeouts struct {
	// Idle closes a keep-alive connection without a new request for this
	// long (http.Server.IdleTimeout).
	Idle time.Duration
	// Header bounds the request line, the headers and the TLS handshake
	// (http.Server.ReadHeaderTimeout).
	Header time.Duration
	// Body is the time any request body may take; a larger one gets a
	// second more per MinBodyRate bytes.
	Body time.Duration
	// MinBodyRate is the slowest upload, in bytes per second, accepted
	// once Body has passed.
	MinBodyRate int64
	// Write bounds the sending of an answer: from the start of a request
	// or the end of its body, after a lease's longest wait, and for each
	// batch of an event stream.
	Write time.Duration
}

// WithDefaults fills the zero fields.
func (t Timeouts) WithDefaults() Timeouts {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&t.Idle, DefaultIdleTimeout)
	def(&t.Header, DefaultHeaderTimeout)
	def(&t.Body, DefaultBodyTimeout)
	def(&t.Write, DefaultWriteTimeout)
	if t.MinBodyRate <= 0 {
		t.MinBodyRate = DefaultMinBodyRate
	}
	return t
}

// reserveRoutes may be served on a connection from the listener's
// reserve (netlimit): the probes, the metrics scrape that shows the
// overload, and the worker protocol, so that a server full of other
// clients still looks alive and keeps its workers working. Every other
// route is answered 503 overloaded there.
var reserveRoutes = map[string]bool{
	"GET /healthz":                      true,
	"GET /readyz":                       true,
	"GET /metrics":                      true,
	"POST /v1/workers":                  true,
	"POST /v1/workers/{name}/lease":     true,
	"POST /v1/workers/{name}/reports":   true,
	"POST /v1/workers/{name}/heartbeat": true,
}

// leaseRoute is the worker's long poll: its answer may wait up to
// api.MaxLeaseWait before it is written.
const leaseRoute = "POST /v1/workers/{name}/lease"

// admitReserved refuses, on a reserved connection, the routes the reserve
// is not kept for: 503 overloaded with Retry-After, and the connection
// closes so that its slot returns to the reserve. It closes at once: the
// request's body is not waited for (net/http would otherwise read what is
// left of a small one, for as long as the client takes to send it).
func (s *Server) admitReserved(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if netlimit.Reserved(r.Context()) && !reserveRoutes[routeOf(r)] {
			netlimit.RefuseReserved(r.Context())
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
			w.Header().Set("Connection", "close")
			s.fail(w, errOverloaded) // 503 overloaded, with Retry-After
			return
		}
		next.ServeHTTP(w, r)
	})
}

// deadlines sets the request's write deadline and, for a request with a
// body, a read deadline that moves with the body's progress (pacedBody).
func (s *Server) deadlines(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := s.opt.Timeouts
		rc := http.NewResponseController(w)
		now := time.Now()
		// The time to answer: counted again once the body is in, so that
		// a long upload leaves the answer its full time.
		answerIn := t.Write
		switch {
		case routeOf(r) == leaseRoute:
			answerIn = api.MaxLeaseWait + t.Write
		case routeOf(r) == "GET /v1/events" && following(r):
			answerIn = 0 // streamEvents sets it before each batch it sends
		}
		var due *answerDue
		if answerIn > 0 {
			_ = rc.SetWriteDeadline(now.Add(answerIn))
			var ctx context.Context
			ctx, due = newAnswerDue(r.Context(), answerIn)
			defer due.stop()
			r = r.WithContext(ctx)
		}
		withBody := r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
		if withBody {
			if err := rc.SetReadDeadline(now.Add(t.Body)); err == nil {
				r.Body = &pacedBody{ReadCloser: r.Body, rc: rc, start: now, grace: t.Body, rate: t.MinBodyRate, answerIn: answerIn, due: due}
			} else {
				withBody = false
			}
		}
		if !withBody {
			due.start()
		}
		next.ServeHTTP(w, r)
	})
}

// routeOf is the route pattern the middleware found for r.
func routeOf(r *http.Request) string {
	if info, ok := r.Context().Value(requestKey{}).(*requestInfo); ok {
		return info.route
	}
	return ""
}

// errOverloaded is a request refused on a reserved connection.
var errOverloaded = errors.New("the server is at its connection limit; its last connections are kept for health checks and workers: retry later")

// errBodyTooSlow is a body that did not arrive in time.
var errBodyTooSlow = errors.New("the request body arrived too slowly")

// pacedBody reads a request body under a read deadline that is grace from
// the start of the request plus a second per rate bytes received: a body
// trickled slower than that is cut, a large one at a decent pace is not.
// Once the body is read the deadline is lifted, so that a long poll that
// follows it is not cut: net/http then watches the connection for the
// client going away, and a deadline there would cancel the request
// (net/http lifts it too as it starts watching; this does not rely on it).
// Once the body is read, or cut, the answer gets answerIn from then.
type pacedBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	start    time.Time
	grace    time.Duration
	rate     int64
	answerIn time.Duration
	due      *answerDue
	n        int64
	done     bool
}

// answerDue ends a request's context a tenth before its answer's write
// deadline, counted like that deadline from the end of the body: a change
// the loop holds while the store refuses writes is then answered
// (control.ErrHeld) while the client can still read the answer, instead
// of being answered after the connection gave up. A nil answerDue does
// nothing (a stream sets its deadlines as it goes).
type answerDue struct {
	in     time.Duration
	cancel context.CancelFunc
	timer  *time.Timer
}

func newAnswerDue(parent context.Context, answerIn time.Duration) (context.Context, *answerDue) {
	ctx, cancel := context.WithCancel(parent)
	return ctx, &answerDue{in: answerIn - answerIn/10, cancel: cancel}
}

// start runs the clock from now; the body's end starts it again.
func (d *answerDue) start() {
	if d == nil {
		return
	}
	if d.timer == nil {
		d.timer = time.AfterFunc(d.in, d.cancel)
		return
	}
	d.timer.Reset(d.in)
}

func (d *answerDue) stop() {
	if d.timer != nil {
		d.timer.Stop()
	}
	d.cancel()
}

// finish restarts the answer's time and, for a body read whole, lifts the
// read deadline. A body cut for its pace keeps its passed deadline: after
// the answer, net/http reads what is left of a body to reuse the
// connection, and the trickle must not go on there.
func (b *pacedBody) finish(whole bool) {
	b.done = true
	if whole {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	if b.answerIn > 0 {
		_ = b.rc.SetWriteDeadline(time.Now().Add(b.answerIn))
	}
	b.due.start()
}

func (b *pacedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	switch {
	case b.done:
	case err == io.EOF:
		b.finish(true)
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.finish(false)
		return n, fmt.Errorf("%w: %d bytes in %s, under %d bytes a second after the first %s: %w",
			errBodyTooSlow, b.n, time.Since(b.start).Round(time.Millisecond), b.rate, b.grace, err)
	case n > 0:
		extra := time.Duration(float64(b.n) / float64(b.rate) * float64(time.Second))
		_ = b.rc.SetReadDeadline(b.start.Add(b.grace + extra))
	}
	return n, err
}

// following reports whether an events request asks to follow the log
// (?follow=1): an event stream rather than one page.
func following(r *http.Request) bool {
	f := r.URL.Query().Get("follow")
	return f != "" && f != "0" && f != "false"
}
