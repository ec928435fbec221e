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
// not only the tail a report carries.
const (
	// DefaultStreamEvery is how often, at most, a running task's new
	// output is sent.
	DefaultStreamEvery = time.Second
	// streamBufferBytes bounds the output an attempt holds that the
	// server has not taken (it is down): beyond it the oldest is dropped,
	// and the server counts the gap as dropped output.
	streamBufferBytes = 8 << 20
	// streamChunkBytes bounds one chunk, and so one request's body (a
	// third more in base64), well under the server's body limit.
	streamChunkBytes = 256 << 10
	// streamFinishWait bounds how long an ended attempt's report waits
	// for the rest of its output to reach the server.
	streamFinishWait = 5 * time.Second
)

// outStream sends one attempt's output to the server as it is written.
// Write never blocks on the network: it buffers, and run sends.
type outStream struct {
	as    api.Assignment
	send  func(context.Context, []api.OutputChunk) error
	every time.Duration

	mu   sync.Mutex
	buf  []byte // written, not yet taken by the server
	off  int64  // offset of buf[0] in the attempt's output
	dead bool   // the server will not take this output: drop it

	wake chan struct{}
	end  chan struct{} // closed by finish
	done chan struct{} // closed when run returns
}

func newOutStream(as api.Assignment, every time.Duration, send func(context.Context, []api.OutputChunk) error) *outStream {
	return &outStream{as: as, send: send, every: every, wake: make(chan struct{}, 1),
		end: make(chan struct{}), done: make(chan struct{})}
}

// Write buffers p for the next send; it never fails.
func (s *outStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return len(p), nil
	}
	s.buf = append(s.buf, p...)
	if over := len(s.buf) - streamBufferBytes; over > 0 {
		s.buf = s.buf[over:]
		s.off += int64(over)
	}
	if len(s.buf) >= streamChunkBytes {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// run sends the buffered output every s.every (sooner when a chunk is
// full) until finish; then it sends what is left, trying for at most
// streamFinishWait.
func (s *outStream) run() {
	defer close(s.done)
	tick := time.NewTicker(s.every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-s.wake:
		case <-s.end:
			deadline := time.Now().Add(streamFinishWait)
			for s.pending() && time.Now().Before(deadline) {
				if !s.flush() {
					time.Sleep(200 * time.Millisecond)
				}
			}
			return
		}
		for s.pending() && s.flush() {
		}
	}
}

// finish sends what is left of the output and returns once it reached the
// server or streamFinishWait passed.
func (s *outStream) finish() {
	close(s.end)
	<-s.done
}

func (s *outStream) pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.dead && len(s.buf) > 0
}

// flush sends one chunk of the buffer and reports whether the server took
// it.
func (s *outStream) flush() bool {
	s.mu.Lock()
	n := min(len(s.buf), streamChunkBytes)
	if n == 0 {
		s.mu.Unlock()
		return false
	}
	ch := api.OutputChunk{Attempt: s.as.Attempt, Secret: s.as.Secret, Offset: s.off, Data: bytes.Clone(s.buf[:n])}
	s.mu.Unlock()

	err := s.send(context.Background(), []api.OutputChunk{ch})

	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		// Write may have dropped the oldest bytes meanwhile.
		if sent := ch.Offset + int64(n) - s.off; sent > 0 {
			s.buf = s.buf[min(int(sent), len(s.buf)):]
			s.off += sent
		}
		return true
	case client.IsNotFound(err), client.IsForbidden(err), client.IsInvalid(err), client.IsTooLarge(err):
		// A server without the route, or one that will never take this
		// attempt's output: the report's tail is what it gets.
		s.dead, s.buf = true, nil
	}
	return false
}
