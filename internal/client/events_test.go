package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

func TestReadSSEParsesTheStreamFormat(t *testing.T) {
	tests := []struct {
		name    string
		stream  string
		want    []sseMessage
		retries []time.Duration
	}{
		{
			name:   "one event with id, kind and data",
			stream: "id: 1\nevent: task_started\ndata: {\"id\":1}\n\n",
			want:   []sseMessage{{id: "1", event: "task_started", data: `{"id":1}`}},
		},
		{
			name:   "data lines join with newlines",
			stream: "data: {\"id\":2,\ndata:  \"kind\":\"x\"}\n\n",
			want:   []sseMessage{{data: "{\"id\":2,\n \"kind\":\"x\"}"}},
		},
		{
			name:   "CRLF endings and comments",
			stream: ": ping\r\nid: 3\r\ndata: a\r\n\r\n: ping\r\n\r\n",
			want:   []sseMessage{{id: "3", data: "a"}},
		},
		{
			name:   "the id carries over, the kind does not",
			stream: "id: 4\nevent: k\ndata: a\n\ndata: b\n\n",
			want:   []sseMessage{{id: "4", event: "k", data: "a"}, {id: "4", data: "b"}},
		},
		{
			name:   "a blank line without data dispatches nothing",
			stream: "event: k\n\nid: 5\n\n",
		},
		{
			name:   "an event cut by the end of the stream is dropped",
			stream: "data: a\n\ndata: b\n",
			want:   []sseMessage{{data: "a"}},
		},
		{
			name:    "retry advice",
			stream:  "retry: 250\nretry: soon\ndata: a\n\n",
			want:    []sseMessage{{data: "a"}},
			retries: []time.Duration{250 * time.Millisecond},
		},
		{
			name:   "a field without a colon and unknown fields are ignored",
			stream: "data\nfoo: bar\n\n",
			want:   []sseMessage{{data: ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []sseMessage
			var retries []time.Duration
			err := readSSE(strings.NewReader(tt.stream), func(m sseMessage) error {
				got = append(got, m)
				return nil
			}, func(d time.Duration) { retries = append(retries, d) })
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) || !reflect.DeepEqual(retries, tt.retries) {
				t.Errorf("got %q retries %v, want %q retries %v", got, retries, tt.want, tt.retries)
			}
		})
	}
}

// sseServer answers each connection to /v1/events with the next script:
// a status and a stream body. It records the query and Last-Event-ID of
// each connection.
type sseServer struct {
	mu      sync.Mutex
	scripts []sseScript
	seen    []string
}

type sseScript struct {
	status int
	body   string
	hold   bool // keep the connection open after the body
}

func (s *sseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, r.URL.RawQuery+" last="+r.Header.Get("Last-Event-ID")+" accept="+r.Header.Get("Accept"))
	var sc sseScript
	if len(s.scripts) > 0 {
		sc, s.scripts = s.scripts[0], s.scripts[1:]
	} else {
		sc = sseScript{status: 200, hold: true}
	}
	s.mu.Unlock()
	if sc.status != 200 {
		w.WriteHeader(sc.status)
		_, _ = io.WriteString(w, sc.body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = io.WriteString(w, sc.body)
	w.(http.Flusher).Flush()
	if sc.hold {
		<-r.Context().Done()
	}
}

func (s *sseServer) connections() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func followClient(t *testing.T, s *sseServer) *Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c.reconnectMin, c.reconnectMax = 5*time.Millisecond, 20*time.Millisecond
	return c
}

func TestFollowEventsReconnectsAfterTheLastEvent(t *testing.T) {
	errDone := errors.New("done")
	s := &sseServer{scripts: []sseScript{
		// Multi-line data; an event whose data leaves its id to the id line;
		// then the connection drops.
		{status: 200, body: ": hello\nretry: 5\nid: 6\nevent: job_submitted\ndata: {\"id\":6,\ndata: \"kind\":\"job_submitted\",\"job\":\"j\"}\n\n" +
			"id: 7\nevent: task_started\ndata: {\"job\":\"j\",\"task\":\"t\"}\n\n: ping\n"},
		// The server is briefly unavailable.
		{status: 503, body: `{"error":{"code":"unavailable","message":"restarting"}}`},
		// It repeats event 7 (already delivered) and sends 8.
		{status: 200, body: "id: 7\ndata: {\"id\":7,\"kind\":\"task_started\"}\n\nid: 8\ndata: {\"id\":8,\"kind\":\"task_succeeded\"}\n\n", hold: true},
	}}
	c := followClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got []api.Event
	err := c.FollowEvents(ctx, 5, "j", func(ev api.Event) error {
		got = append(got, ev)
		if ev.ID == 8 {
			return errDone
		}
		return nil
	})
	if !errors.Is(err, errDone) {
		t.Fatalf("FollowEvents = %v, want fn's error", err)
	}
	want := []api.Event{
		{ID: 6, Kind: "job_submitted", Job: "j"},
		{ID: 7, Kind: "task_started", Job: "j", Task: "t"},
		{ID: 8, Kind: "task_succeeded"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events = %+v\nwant %+v", got, want)
	}
	wantConns := []string{
		"after=5&follow=1&job=j last=5 accept=text/event-stream",
		"after=7&follow=1&job=j last=7 accept=text/event-stream",
		"after=7&follow=1&job=j last=7 accept=text/event-stream",
	}
	if conns := s.connections(); !reflect.DeepEqual(conns, wantConns) {
		t.Errorf("connections = %q\nwant %q", conns, wantConns)
	}
}

func TestFollowEventsStopsOnErrorsRetryingCannotFix(t *testing.T) {
	tests := []struct {
		name    string
		scripts []sseScript
		check   func(error) bool
		conns   int
	}{
		{
			name:    "the first connection is refused",
			scripts: []sseScript{{status: 401, body: `{"error":{"code":"unauthorized","message":"bad token"}}`}},
			check:   IsUnauthorized,
			conns:   1,
		},
		{
			name:    "the first connection fails with a server error",
			scripts: []sseScript{{status: 503}},
			check:   IsUnavailable,
			conns:   1,
		},
		{
			name: "a later connection is refused",
			scripts: []sseScript{
				{status: 200, body: "data: {\"id\":1}\n\n"},
				{status: 403, body: `{"error":{"code":"forbidden","message":"revoked"}}`},
			},
			check: IsForbidden,
			conns: 2,
		},
		{
			name:    "data that is not an event",
			scripts: []sseScript{{status: 200, body: "data: {not json\n\n", hold: true}},
			check: func(err error) bool {
				var be badStreamError
				return errors.As(err, &be)
			},
			conns: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &sseServer{scripts: tt.scripts}
			c := followClient(t, s)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := c.FollowEvents(ctx, 0, "", func(api.Event) error { return nil })
			if err == nil || !tt.check(err) {
				t.Errorf("FollowEvents = %v (%T)", err, err)
			}
			if n := len(s.connections()); n != tt.conns {
				t.Errorf("%d connections, want %d", n, tt.conns)
			}
		})
	}
}

func TestFollowEventsEndsWithItsContext(t *testing.T) {
	s := &sseServer{} // holds every connection open, sending nothing
	c := followClient(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(s.connections()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	err := c.FollowEvents(ctx, 0, "", func(api.Event) error { return fmt.Errorf("no events expected") })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("FollowEvents = %v, want context.Canceled", err)
	}
}

// A stream that goes silent (no event, no ping) for longer than streamIdle
// is taken for dead: FollowEvents reconnects after the last event it
// delivered instead of waiting forever.
func TestFollowEventsReconnectsWhenTheStreamGoesSilent(t *testing.T) {
	errDone := errors.New("done")
	s := &sseServer{scripts: []sseScript{
		{status: 200, body: "id: 1\ndata: {\"id\":1,\"kind\":\"job_submitted\"}\n\n", hold: true}, // then silence
		{status: 200, body: "id: 2\ndata: {\"id\":2,\"kind\":\"job_ended\"}\n\n", hold: true},
	}}
	c := followClient(t, s)
	c.streamIdle = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var ids []int64
	err := c.FollowEvents(ctx, 0, "", func(ev api.Event) error {
		ids = append(ids, ev.ID)
		if ev.ID == 2 {
			return errDone
		}
		return nil
	})
	if !errors.Is(err, errDone) {
		t.Fatalf("FollowEvents = %v, want fn's error after a reconnect", err)
	}
	if !slices.Equal(ids, []int64{1, 2}) {
		t.Errorf("events %v, want [1 2]", ids)
	}
	if conns := s.connections(); len(conns) != 2 || !strings.Contains(conns[1], "last=1") {
		t.Errorf("connections %q, want a second one after event 1", conns)
	}
}

// The time fn takes is not the stream's silence: a consumer slower than
// streamIdle keeps its connection, and its error is returned as is rather
// than taken for a dead stream and followed on.
func TestFollowEventsGivesASlowConsumerTime(t *testing.T) {
	const idle = 50 * time.Millisecond
	errDone := errors.New("done")
	for _, tc := range []struct {
		name string
		fn   func(ev api.Event) error // the consumer, slow on event 1
	}{
		{"slow on an event, then stops", func(ev api.Event) error {
			time.Sleep(4 * idle)
			return errDone
		}},
		{"slow on an event, then goes on", func(ev api.Event) error {
			if ev.ID == 1 {
				time.Sleep(4 * idle)
				return nil
			}
			return errDone
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			released := make(chan struct{})
			var mu sync.Mutex
			conns := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				conns++
				first := conns == 1
				mu.Unlock()
				w.Header().Set("Content-Type", "text/event-stream")
				if first {
					_, _ = io.WriteString(w, "id: 1\ndata: {\"id\":1,\"kind\":\"job_submitted\"}\n\n")
					w.(http.Flusher).Flush()
					select { // event 2 only once the consumer is done with 1
					case <-released:
					case <-r.Context().Done():
						return
					}
				}
				_, _ = io.WriteString(w, "id: 2\ndata: {\"id\":2,\"kind\":\"job_ended\"}\n\n")
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}))
			t.Cleanup(srv.Close)
			c, err := New(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			c.reconnectMin, c.reconnectMax, c.streamIdle = 5*time.Millisecond, 20*time.Millisecond, idle
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = c.FollowEvents(ctx, 0, "", func(ev api.Event) error {
				err := tc.fn(ev)
				if ev.ID == 1 {
					close(released)
				}
				return err
			})
			if !errors.Is(err, errDone) {
				t.Errorf("FollowEvents = %v, want the consumer's error", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if conns != 1 {
				t.Errorf("%d connections, want 1: the consumer's pace is no silence of the stream", conns)
			}
		})
	}
}
