package client

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// overloadedServer answers the first refusals requests 503 overloaded with
// Retry-After: retryAfter (the body is an error body with code), then 201;
// it records the bodies it received.
type overloadedServer struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (o *overloadedServer) start(t *testing.T, refusals int, code, retryAfter string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		o.mu.Lock()
		o.bodies = append(o.bodies, b)
		n := len(o.bodies)
		o.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if n <= refusals {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":{"code":"`+code+`","message":"busy"}}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"j","queue":"q","state":"pending","counts":{}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (o *overloadedServer) received() [][]byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([][]byte(nil), o.bodies...)
}

func TestAnOverloadedSubmissionIsSentAgainAfterRetryAfter(t *testing.T) {
	var o overloadedServer
	srv := o.start(t, 1, "overloaded", "1")
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	job, err := c.SubmitJob(context.Background(), []byte("id: j\ntasks: [{name: x, run: 'true'}]\n"), "")
	if err != nil || job.ID != "j" {
		t.Fatalf("submission after one 503 overloaded: %+v, %v; want it sent again and accepted", job, err)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("sent again after %s, before the Retry-After of 1s", took)
	}
	got := o.received()
	if len(got) != 2 || !bytes.Equal(got[0], got[1]) {
		t.Errorf("the server received %q; want the same body twice", got)
	}
}

func TestOverloadedAnswersAreRetriedHonouringRetryAfter(t *testing.T) {
	cases := []struct {
		name       string
		refusals   int
		code       string
		retryAfter string
		opts       []Option
		timeout    time.Duration
		requests   int  // the server receives
		ok         bool // the call succeeds in the end
	}{
		{"overloaded twice, then accepted", 2, "overloaded", "3", nil, 0, 3, true},
		{"overloaded every time: the retries run out", 100, "overloaded", "3", nil, 0, 1 + DefaultOverloadRetries, false},
		{"a 503 that is not overloaded may have been handled: not sent again", 1, "unavailable", "3", nil, 0, 1, false},
		{"retries switched off", 1, "overloaded", "3", []Option{WithOverloadRetries(0)}, 0, 1, false},
		{"a context shorter than Retry-After gets the error at once", 1, "overloaded", "3", nil, 200 * time.Millisecond, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var o overloadedServer
			srv := o.start(t, tc.refusals, tc.code, tc.retryAfter)
			c, err := New(srv.URL, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			var waits []time.Duration
			c.pause = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			_, err = c.SubmitJob(ctx, []byte(`{"id":"j"}`), "")
			if got := len(o.received()); got != tc.requests {
				t.Errorf("the server received %d requests, want %d", got, tc.requests)
			}
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			for i, w := range waits {
				if w < 3*time.Second {
					t.Errorf("wait %d: %s, shorter than Retry-After 3s", i, w)
				}
			}
			if !tc.ok && tc.code == "overloaded" && (!IsOverloaded(err) || RetryAfter(err) != 3*time.Second || !Retryable(err)) {
				t.Errorf("err %v: IsOverloaded %v, RetryAfter %s, Retryable %v; want an overloaded, retryable error asking for 3s",
					err, IsOverloaded(err), RetryAfter(err), Retryable(err))
			}
		})
	}
}

func TestOverloadDelayGrowsWithJitterAndNeverUndercutsRetryAfter(t *testing.T) {
	for attempt := range 12 {
		for range 50 {
			d := overloadDelay(0, attempt)
			ceiling := min(500*time.Millisecond<<attempt, maxOverloadDelay)
			if d < ceiling/2 || d > ceiling {
				t.Fatalf("attempt %d: delay %s outside [%s, %s]", attempt, d, ceiling/2, ceiling)
			}
			if d := overloadDelay(time.Minute, attempt); d < time.Minute {
				t.Fatalf("attempt %d: delay %s below a Retry-After of 1m", attempt, d)
			}
		}
	}
}

func TestRetryAfterReadsSecondsAndDates(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"2", 2 * time.Second},
		{"0", 0},
		{"-5", 0},
		{"soon", 0},
		{"999999999999", maxRetryAfter},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
	}
	for _, tc := range cases {
		if got := parseRetryAfter(tc.header, now); got != tc.want {
			t.Errorf("Retry-After %q: %s, want %s", tc.header, got, tc.want)
		}
	}
}

func TestTheDefaultTransportBoundsConnectingAndClosesIdleConnectionsFirst(t *testing.T) {
	c, err := New("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := c.hc.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport %T, want an *http.Transport with timeouts", c.hc.Transport)
	}
	const serverIdle = 60 * time.Second // the server's default idle timeout
	if tr.IdleConnTimeout <= 0 || tr.IdleConnTimeout >= serverIdle {
		t.Errorf("IdleConnTimeout %s: want one below the server's %s", tr.IdleConnTimeout, serverIdle)
	}
	if tr.ResponseHeaderTimeout <= api.MaxLeaseWait {
		t.Errorf("ResponseHeaderTimeout %s: want one above the longest lease wait %s", tr.ResponseHeaderTimeout, api.MaxLeaseWait)
	}
	if tr.TLSHandshakeTimeout <= 0 || tr.DialContext == nil {
		t.Errorf("TLSHandshakeTimeout %s, DialContext set %v", tr.TLSHandshakeTimeout, tr.DialContext != nil)
	}
}
