package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// DefaultStreamIdle is how long FollowEvents waits on a silent stream: three
// of the server's 15 s keep-alive pings. A connection cut without a reset
// (a crashed proxy, a lost network path) would otherwise hang forever.
const DefaultStreamIdle = 45 * time.Second

// maxSSELine bounds one line of the event stream, so a broken server cannot
// make the client buffer without end.
const maxSSELine = 4 << 20

// FollowEvents streams the events after the one with ID after (of one job
// when job is not empty) and calls fn for each, in order. When the
// connection drops it reconnects, asking for the events after the last one
// it delivered, so fn sees every event once; it keeps doing so until ctx
// ends or fn returns an error. It returns fn's error as is, ctx.Err() when
// ctx ends, or the error of the first connection (a wrong URL or token is
// reported at once rather than retried) or of a later answer that retrying
// cannot fix (e.g. 401 after the token was revoked).
func (c *Client) FollowEvents(ctx context.Context, after int64, job string, fn func(api.Event) error) error {
	f := &follower{c: c, last: after, job: job, fn: fn, delay: c.reconnectMin}
	for {
		got, err := f.session(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ce callbackError
		switch {
		case errors.As(err, &ce):
			return ce.err
		case err != nil && !f.connected:
			return err
		case err != nil && !f.retryable(err):
			return err
		}
		if got > 0 {
			f.delay = f.base()
		}
		t := time.NewTimer(max(f.delay, RetryAfter(err)))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		f.delay = min(2*f.delay, c.reconnectMax)
	}
}

// follower is the state FollowEvents keeps across connections.
type follower struct {
	c         *Client
	last      int64 // ID of the last event delivered (or the caller's after)
	job       string
	fn        func(api.Event) error
	delay     time.Duration
	retry     time.Duration // the server's "retry:" advice, 0 if none
	connected bool          // some connection was answered with 2xx
}

func (f *follower) base() time.Duration {
	if f.retry > 0 {
		return f.retry
	}
	return f.c.reconnectMin
}

func (f *follower) retryable(err error) bool {
	var be badStreamError
	return !errors.As(err, &be) && Retryable(err)
}

// callbackError carries fn's error out of the stream reader untouched.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

// badStreamError is a stream the client cannot read; reconnecting would
// read the same again.
type badStreamError struct{ err error }

func (e badStreamError) Error() string { return "event stream: " + e.err.Error() }

// session reads one connection until it ends and returns how many events
// it delivered.
func (f *follower) session(ctx context.Context) (int, error) {
	q := eventQuery(f.last, f.job)
	q.Set("follow", "1")
	h := http.Header{"Accept": {"text/event-stream"}}
	if f.last > 0 {
		h.Set("Last-Event-ID", strconv.FormatInt(f.last, 10))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := f.c.send(ctx, &request{method: http.MethodGet, path: "/v1/events", query: q, header: h, resendable: true})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	f.connected = true
	// Anything read (an event, a ping) proves the connection alive; a
	// silence longer than streamIdle cancels it, which ends the read below
	// and makes FollowEvents reconnect.
	var silent atomic.Bool
	idle := time.AfterFunc(f.c.streamIdle, func() { silent.Store(true); cancel() })
	defer idle.Stop()
	body := readerFunc(func(p []byte) (int, error) {
		n, err := resp.Body.Read(p)
		if n > 0 {
			idle.Reset(f.c.streamIdle)
		}
		return n, err
	})
	n := 0
	err = readSSE(body, func(m sseMessage) error {
		ev, err := m.decode()
		if err != nil {
			return badStreamError{err}
		}
		if ev.ID != 0 && ev.ID <= f.last {
			return nil // already delivered before a reconnect
		}
		// The time fn takes is the caller's, not the stream's silence: a
		// slow consumer must not get its connection cut under it.
		idle.Stop()
		err = f.fn(ev)
		idle.Reset(f.c.streamIdle)
		if err != nil {
			return callbackError{err}
		}
		if ev.ID > f.last {
			f.last = ev.ID
		}
		n++
		return nil
	}, func(d time.Duration) { f.retry, f.delay = d, d })
	var ce callbackError
	switch {
	case errors.As(err, &ce):
		// fn's error stands, even if the idle timer fired meanwhile.
	case silent.Load():
		err = errStreamSilent
	case err == nil:
		err = io.ErrUnexpectedEOF // the server ended the stream; follow on
	}
	return n, err
}

// errStreamSilent ends a connection that sent nothing for streamIdle;
// FollowEvents reconnects.
var errStreamSilent = errors.New("event stream: silent for too long")

// readerFunc is an io.Reader made of a function.
type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// sseMessage is one dispatched server-sent event.
type sseMessage struct {
	id    string // the last "id:" seen on the stream, as the spec keeps it
	event string
	data  string
}

// decode decodes the message's data as an api.Event; the stream's id and
// event fields fill the ID and Kind the data leaves out.
func (m sseMessage) decode() (api.Event, error) {
	var ev api.Event
	if err := json.Unmarshal([]byte(m.data), &ev); err != nil {
		return ev, fmt.Errorf("event %q: data is not an event: %w", m.id, err)
	}
	if ev.ID == 0 && m.id != "" {
		id, err := strconv.ParseInt(m.id, 10, 64)
		if err != nil {
			return ev, fmt.Errorf("id %q is not a number", m.id)
		}
		ev.ID = id
	}
	if ev.Kind == "" {
		ev.Kind = m.event
	}
	return ev, nil
}

// readSSE parses a text/event-stream (the WHATWG server-sent events format)
// and calls on for every complete event: "data:" lines accumulate (joined
// by newlines), "event:" and "id:" set fields, "retry:" calls onRetry,
// lines starting with ':' are comments (keep-alives), and a blank line
// dispatches. Lines may end in LF or CRLF. It returns nil at the end of the
// stream (an event not closed by a blank line is dropped, as the spec
// says), or the first error of on or of the reader.
func readSSE(r io.Reader, on func(sseMessage) error, onRetry func(time.Duration)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		id, event string
		data      strings.Builder
		hasData   bool
	)
	for {
		line, err := readLine(br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if line == "" {
			if hasData {
				if err := on(sseMessage{id: id, event: event, data: data.String()}); err != nil {
					return err
				}
			}
			event, hasData = "", false
			data.Reset()
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		case "event":
			event = value
		case "id":
			if !strings.ContainsRune(value, 0) {
				id = value
			}
		case "retry":
			if ms, err := strconv.ParseUint(value, 10, 31); err == nil && onRetry != nil {
				onRetry(time.Duration(ms) * time.Millisecond)
			}
		}
	}
}

// readLine reads one line without its LF or CRLF ending. A last line
// without an ending is returned with io.EOF, which ends the stream anyway.
func readLine(br *bufio.Reader) (string, error) {
	var b []byte
	for {
		chunk, err := br.ReadSlice('\n')
		b = append(b, chunk...)
		if len(b) > maxSSELine {
			return "", badStreamError{fmt.Errorf("a line is longer than %d bytes", maxSSELine)}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return "", err
		}
		b = b[:len(b)-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
		return string(b), nil
	}
}
