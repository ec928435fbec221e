package rest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/netlimit"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// newTimedServer runs the API with the given timeouts on a real
// controller, over real connections (deadlines need them).
func newTimedServer(t *testing.T, to Timeouts) *httptest.Server {
	t.Helper()
	return newServerOptions(t, spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}, Options{Timeouts: to})
}

// sendPaced posts body to path in pieces of chunk bytes, one every gap,
// and returns the answer's status and error code, and whether the server
// closed the connection within a second of answering (the sender goes on).
func sendPaced(t *testing.T, srv *httptest.Server, path, body string, chunk int, gap time.Duration) (int, api.Error, bool) {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/yaml\r\nContent-Length: %d\r\n\r\n", path, len(body))
	go func() {
		for i := 0; i < len(body); i += chunk {
			time.Sleep(gap)
			if _, err := io.WriteString(conn, body[i:min(i+chunk, len(body))]); err != nil {
				return
			}
		}
	}()
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	var eb api.ErrorBody
	_ = json.NewDecoder(resp.Body).Decode(&eb)
	resp.Body.Close()
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	_, err = io.Copy(io.Discard, br)
	ne, timedOut := err.(net.Error)
	return resp.StatusCode, eb.Error, !(timedOut && ne.Timeout())
}

func TestRequestBodiesAreHeldToTheMinimumRateAndAnsweredAfterThem(t *testing.T) {
	srv := newTimedServer(t, Timeouts{Body: 300 * time.Millisecond, MinBodyRate: 1000, Write: 200 * time.Millisecond})
	job := "id: %s\nqueue: batch\ntasks: [{name: x, run: 'true'}]\n" + strings.Repeat("# padding to make a larger body\n", 40)
	cases := []struct {
		name     string
		id       string
		chunk    int
		gap      time.Duration
		status   int
		code     string
		slowest  time.Duration // the body takes at least this long
		checkDur bool
	}{
		// 1.3 KB at 2.5 KB/s: longer than the grace, well above the rate.
		{"a body at a decent pace outlives the grace", "paced", 100, 40 * time.Millisecond, 201, "", 400 * time.Millisecond, true},
		// 10 bytes a second: cut once the grace and its few bytes' share are spent.
		{"a trickled body is cut with 408", "trickled", 1, 100 * time.Millisecond, 408, api.CodeTimeout, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			status, e, closed := sendPaced(t, srv, "/v1/jobs", fmt.Sprintf(job, tc.id), tc.chunk, tc.gap)
			took := time.Since(start)
			if status != tc.status || e.Code != tc.code {
				t.Fatalf("after %s: %d %+v, want %d %q", took, status, e, tc.status, tc.code)
			}
			if tc.checkDur && took < tc.slowest {
				t.Errorf("the body took %s: not longer than the grace, the case proves nothing", took)
			}
			if tc.code == api.CodeTimeout && (e.Field != "body" || took > 2*time.Second || !closed) {
				t.Errorf("cut after %s, field %q, connection closed %v: want field body, within the grace and a little, and the connection closed",
					took, e.Field, closed)
			}
		})
	}
}

func TestLongPollOutlivesTheBodyAndWriteTimeouts(t *testing.T) {
	srv := newTimedServer(t, Timeouts{Body: 200 * time.Millisecond, MinBodyRate: 1000, Write: 200 * time.Millisecond})
	if status, _, raw := call(t, srv, "POST", "/v1/workers", "application/json", `{"name":"w","resources":{"cpu":"1","memory":"1Gi"},"slots":1}`); status != 200 {
		t.Fatalf("register: %d %s", status, raw)
	}
	start := time.Now()
	status, _, raw := call(t, srv, "POST", "/v1/workers/w/lease", "application/json", `{"wait":"700ms"}`)
	if took := time.Since(start); status != 200 || took < 650*time.Millisecond {
		t.Errorf("lease of 700ms with a body deadline of 200ms: %d after %s: %s", status, took, raw)
	}
}

// The listener writes its refusals itself: they must carry the API's code.
func TestTheListenersRefusalIsTheAPIsOverloadedError(t *testing.T) {
	var eb api.ErrorBody
	if err := json.Unmarshal(netlimit.OverloadedBody("full"), &eb); err != nil || eb.Error.Code != api.CodeOverloaded || eb.Error.Message != "full" {
		t.Errorf("refusal body %s (%v): want code %q", netlimit.OverloadedBody("full"), err, api.CodeOverloaded)
	}
}

// A request refused on a reserved connection (a route the reserve is not
// for, or no token) is answered without reading its body, and the
// connection closes at once, whether or not the client sends the body: a
// client that never does must not keep the slot the reserve holds for
// probes and workers.
func TestARefusalInTheReserveDoesNotWaitForTheBody(t *testing.T) {
	addr := serveReserveOnly(t, 4)

	for _, tc := range []struct {
		name, path string
		status     int
	}{
		{"a route the reserve is not kept for", "/v1/jobs", 503},
		{"a worker route without a token", "/v1/workers/w/reports", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: allot\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", tc.path)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("%s on a reserved connection: %s, want %d", tc.path, resp.Status, tc.status)
			}
			if open := openAfterAnswer(conn, br); open > 0 {
				t.Errorf("the refused connection was still open %s after its answer: it waits for a body it will not use", open)
			}
		})
	}
}

// A route that takes no body (a probe, a scrape, any GET, HEAD or DELETE)
// does not wait for one: a request that announces a body there is refused
// at once with 400 naming body, and its connection closed, whether or not
// the body comes. Otherwise a client without a token holds a reserved
// connection until the body timeout with "GET /healthz" and a
// Content-Length, and a few of those leave no reserve for the probes and
// workers.
func TestARouteWithoutABodyDoesNotWaitForOne(t *testing.T) {
	const slots = 2
	addr := serveReserveOnly(t, slots)

	for _, tc := range []struct{ name, request string }{
		{"a probe with a Content-Length", "GET /healthz HTTP/1.1\r\nHost: allot\r\nContent-Length: 200000\r\n\r\n{"},
		{"a readiness probe with a chunked body", "GET /readyz HTTP/1.1\r\nHost: allot\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n"},
		{"a scrape with a Content-Length", "GET /metrics HTTP/1.1\r\nHost: allot\r\nContent-Length: 1000\r\n\r\n"},
		{"a HEAD with a Content-Length", "HEAD /healthz HTTP/1.1\r\nHost: allot\r\nContent-Length: 1000\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// As many as the reserve holds, at once: each must be let go.
			conns := make([]net.Conn, slots)
			for i := range conns {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(conn, tc.request)
				conns[i] = conn
			}
			for _, conn := range conns {
				br := bufio.NewReader(conn)
				method, _, _ := strings.Cut(tc.request, " ")
				resp, err := http.ReadResponse(br, &http.Request{Method: method})
				if err != nil {
					t.Fatalf("no answer: %v", err)
				}
				var eb api.ErrorBody
				_ = json.NewDecoder(resp.Body).Decode(&eb)
				resp.Body.Close()
				if resp.StatusCode != 400 || (method != "HEAD" && eb.Error.Field != "body") {
					t.Fatalf("%s: %s %+v, want 400 naming body", strings.SplitN(tc.request, "\r\n", 2)[0], resp.Status, eb.Error)
				}
				if open := openAfterAnswer(conn, br); open > 0 {
					t.Fatalf("the connection was still open %s after its answer: it waits for a body the route does not read", open)
				}
			}
			// The reserve is free again for a plain probe.
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: allot\r\nConnection: close\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("a plain probe after them: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("a plain probe after them: %s, want 200", resp.Status)
			}
		})
	}
}

// serveReserveOnly serves the API on a real controller behind a listener
// whose slots connections are all reserved (for probes and workers), and
// returns its address.
func serveReserveOnly(t *testing.T, slots int) string {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctrl, err := control.New(ctx, control.Config{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}}, st)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := netlimit.Wrap(inner, netlimit.Limits{Max: slots, Reserved: slots}, netlimit.Options{})
	opt := Options{Auth: auth.NewAuthenticator(st, nil, 0), Timeouts: Timeouts{Body: 30 * time.Second}}
	hs := &http.Server{Handler: New(ctrl, opt).Handler(), ConnState: ln.ConnState, ConnContext: netlimit.ConnContext}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		_ = hs.Close()
		cancel()
		<-done
		st.Close()
	})
	return inner.Addr().String()
}

// openAfterAnswer reads what is left of an answered connection for up to 2
// s: how long it stayed open if the server did not close it, else 0.
func openAfterAnswer(conn net.Conn, br *bufio.Reader) time.Duration {
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(2 * time.Second))
	_, err := io.Copy(io.Discard, br)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return time.Since(start).Round(time.Millisecond)
	}
	return 0
}
