package agent

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
)

// Streaming output: while a task runs, what it writes goes to the server
// in chunks (POST /v1/workers/{name}/output), so that allot logs -f shows
// it live and the server keeps all of it (up to its per-attempt limit),
// not only the tail a report carries. One streamer per agent sends the
// new output of all its running attempts in one request per interval, so
// a worker of many chatty tasks costs the server one request a second,
// not one per task.
const (
	// DefaultStreamEvery is how often, at most, running tasks' new output
	// is sent.
	DefaultStreamEvery = time.Second
	// streamBufferBytes bounds the output an attempt holds that the
	// server has not taken (it is down): beyond it the oldest is dropped,
	// and the server counts the gap as dropped output.
	streamBufferBytes = 8 << 20
	// streamChunkBytes bounds one attempt's chunk, and streamBatchBytes a
	// request's chunks together (a third more in base64), well under the
	// server's body limit.
	streamChunkBytes = 256 << 10
	streamBatchBytes = 1 << 20
	// streamFinishWait bounds how long an ended attempt's report waits
	// for the rest of its output to reach the server.
	streamFinishWait = 5 * time.Second
)

// streamer sends the output of the agent's running attempts.
type streamer struct {
	send  func(context.Context, []api.OutputChunk) error
	every time.Duration

	mu   sync.Mutex
	live []*outStream

	wake    chan struct{}
	stopped chan struct{} // closed when run returns
}

func newStreamer(every time.Duration, send func(context.Context, []api.OutputChunk) error) *streamer {
	return &streamer{send: send, every: every, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
}

// open starts streaming the output of the attempt as runs.
func (s *streamer) open(as api.Assignment) *outStream {
	st := &outStream{s: s, as: as, done: make(chan struct{})}
	s.mu.Lock()
	s.live = append(s.live, st)
	s.mu.Unlock()
	return st
}

func (s *streamer) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run sends every s.every (sooner when a chunk is full or an attempt
// ended) until ctx ends.
func (s *streamer) run(ctx context.Context) {
	defer close(s.stopped)
	tick := time.NewTicker(s.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			for _, st := range s.live {
				st.close()
			}
			s.live = nil
			s.mu.Unlock()
			return
		case <-tick.C:
		case <-s.wake:
		}
		for s.round() {
		}
	}
}

// round sends one request of chunks, at most one per attempt, and reports
// whether it sent something (more may be waiting). Attempts that ended
// with nothing left to send, or whose output the server will not take,
// are let go.
func (s *streamer) round() bool {
	s.mu.Lock()
	var (
		chunks []api.OutputChunk
		from   []*outStream
		size   int
		keep   = s.live[:0]
	)
	now := time.Now()
	for _, st := range s.live {
		ch, more := st.take(streamBatchBytes-size, now)
		if !more {
			st.close()
			continue
		}
		keep = append(keep, st)
		if ch != nil {
			chunks, from = append(chunks, *ch), append(from, st)
			size += len(ch.Data)
		}
	}
	s.live = keep
	s.mu.Unlock()
	if len(chunks) == 0 {
		return false
	}
	err := s.send(context.Background(), chunks)
	if err == nil {
		for i, st := range from {
			st.ack(chunks[i])
		}
		return true
	}
	if !refused(err) {
		return false // the server is away: the next tick tries again
	}
	if len(chunks) == 1 {
		from[0].drop()
		return true
	}
	// One chunk the server will never take: send them one by one, so the
	// others go through.
	for i, st := range from {
		switch err := s.send(context.Background(), chunks[i:i+1]); {
		case err == nil:
			st.ack(chunks[i])
		case refused(err):
			st.drop()
		}
	}
	return true
}

// refused reports whether the server will not take the chunks it answered
// err to: without the attempt's secret, malformed, too large, or not found
// (a server without the route, an older one; or one that forgot the worker
// after a restart, which the attempt's report then reaches with its tail).
func refused(err error) bool {
	return client.IsNotFound(err) || client.IsForbidden(err) || client.IsInvalid(err) || client.IsTooLarge(err)
}

// outStream is one attempt's output on its way to the server. Write never
// blocks on the network: it buffers, and the streamer sends.
type outStream struct {
	s  *streamer
	as api.Assignment

	mu       sync.Mutex
	buf      []byte    // written, not yet taken by the server
	off      int64     // offset of buf[0] in the attempt's output
	dead     bool      // the server will not take this output: drop it
	deadline time.Time // set by finish: give up sending after it
	closed   bool
	done     chan struct{} // closed once nothing more will be sent
}

// Write buffers p for the next send; it never fails.
func (st *outStream) Write(p []byte) (int, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.dead || st.closed {
		return len(p), nil
	}
	st.buf = append(st.buf, p...)
	if over := len(st.buf) - streamBufferBytes; over > 0 {
		st.buf = st.buf[over:]
		st.off += int64(over)
	}
	if len(st.buf) >= streamChunkBytes {
		st.s.poke()
	}
	return len(p), nil
}

// take returns the next chunk to send, at most room bytes (nil when there
// is nothing, or no room), and whether the stream is still to be served.
func (st *outStream) take(room int, now time.Time) (*api.OutputChunk, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	ended := !st.deadline.IsZero()
	if st.dead || (ended && (len(st.buf) == 0 || now.After(st.deadline))) {
		return nil, false
	}
	n := min(len(st.buf), streamChunkBytes, room)
	if n <= 0 {
		return nil, true
	}
	return &api.OutputChunk{Attempt: st.as.Attempt, Secret: st.as.Secret, Offset: st.off, Data: bytes.Clone(st.buf[:n])}, true
}

// ack forgets what the server took of ch. Write may have dropped the
// oldest bytes meanwhile.
func (st *outStream) ack(ch api.OutputChunk) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if sent := ch.Offset + int64(len(ch.Data)) - st.off; sent > 0 {
		st.buf = st.buf[min(int(sent), len(st.buf)):]
		st.off += sent
	}
}

// drop gives up on this attempt's output: the report's tail is what the
// server gets.
func (st *outStream) drop() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.dead, st.buf = true, nil
}

// close ends the stream: nothing more is sent. The streamer calls it.
func (st *outStream) close() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.closed {
		st.closed = true
		close(st.done)
	}
}

// finish sends what is left of the output and returns once it reached the
// server, streamFinishWait passed, or the streamer stopped.
func (st *outStream) finish() {
	st.mu.Lock()
	st.deadline = time.Now().Add(streamFinishWait)
	st.mu.Unlock()
	st.s.poke()
	select {
	case <-st.done:
	case <-st.s.stopped:
	}
}
