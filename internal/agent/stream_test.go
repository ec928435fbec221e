package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
)

// chunkSink records the chunks a stream sends; fail makes the next sends
// fail as an unreachable server would.
type chunkSink struct {
	mu     sync.Mutex
	chunks []api.OutputChunk
	fail   int
}

func (s *chunkSink) send(_ context.Context, cs []api.OutputChunk) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		return errors.New("connection refused")
	}
	s.chunks = append(s.chunks, cs...)
	return nil
}

// received is the output as the server would assemble it, with the
// offset each chunk carried checked against what came before.
func (s *chunkSink) received(t *testing.T) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, c := range s.chunks {
		if c.Offset != int64(b.Len()) {
			t.Fatalf("chunk at offset %d after %d bytes", c.Offset, b.Len())
		}
		b.Write(c.Data)
	}
	return b.String()
}

// What a task writes reaches the server in order, once, byte for byte (a
// character split across writes, bytes that are not UTF-8), with its
// secret; a send that failed is sent again; finish sends the rest.
func TestOutputStreamSendsEverythingInOrderAcrossFailures(t *testing.T) {
	sink := &chunkSink{fail: 2}
	as := api.Assignment{Attempt: api.Attempt{Job: "j", Task: "t", Attempt: 1}, Secret: "s3cret"}
	s := newStreamer(5*time.Millisecond, sink.send)
	go s.run(t.Context())
	st := s.open(as)
	var want strings.Builder
	for i := range 50 {
		line := strings.Repeat("é", i%7) + "line\xff\n"
		want.WriteString(line)
		// Split a two-byte character across writes now and then.
		b := []byte(line)
		cut := len(b) / 2
		_, _ = st.Write(b[:cut])
		_, _ = st.Write(b[cut:])
		time.Sleep(time.Millisecond)
	}
	st.finish()
	if got := sink.received(t); got != want.String() {
		t.Errorf("received %d bytes, want %d:\n%q", len(got), want.Len(), got)
	}
	for _, c := range sink.chunks {
		if c.Secret != "s3cret" || c.Attempt != as.Attempt {
			t.Fatalf("chunk %+v", c)
		}
	}
}

// While the server does not take output, the stream keeps its last
// streamBufferBytes, and the offset of what it sends says what was
// dropped.
func TestOutputStreamKeepsTheTailWhileTheServerIsAway(t *testing.T) {
	sink := &chunkSink{}
	s := newStreamer(time.Hour, sink.send)
	st := s.open(api.Assignment{})
	big := strings.Repeat("x", streamBufferBytes)
	_, _ = st.Write([]byte("lost "))
	_, _ = st.Write([]byte(big))
	_, _ = st.Write([]byte(" end"))
	go s.run(t.Context())
	st.finish()
	var total int
	for i, c := range sink.chunks {
		if i == 0 && c.Offset != 9 {
			t.Errorf("first chunk at offset %d, want 9 (5 + 4 bytes dropped)", c.Offset)
		}
		total += len(c.Data)
	}
	last := sink.chunks[len(sink.chunks)-1]
	if total != streamBufferBytes || !strings.HasSuffix(string(last.Data), "x end") {
		t.Errorf("sent %d bytes ending %q", total, last.Data[max(0, len(last.Data)-8):])
	}
}

// One request carries the new output of every running attempt; an
// attempt whose chunks the server refuses stops streaming, the others go
// on.
func TestOutputStreamsOfAllAttemptsShareARequest(t *testing.T) {
	var mu sync.Mutex
	var requests [][]api.OutputChunk
	send := func(_ context.Context, cs []api.OutputChunk) error {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cs {
			if c.Task == "bad" {
				e := &client.Error{Status: 403}
				e.Code, e.Message = api.CodeForbidden, "no secret"
				return e
			}
		}
		requests = append(requests, cs)
		return nil
	}
	s := newStreamer(time.Hour, send) // no tick: finish wakes it
	var sts []*outStream
	for _, task := range []string{"a", "b", "bad", "c"} {
		st := s.open(api.Assignment{Attempt: api.Attempt{Job: "j", Task: task, Attempt: 1}})
		_, _ = st.Write([]byte("out of " + task + "\n"))
		sts = append(sts, st)
	}
	go s.run(t.Context())
	sts[0].finish() // sends all four; "bad" is refused, then the others one by one
	for _, st := range sts[1:] {
		st.finish()
	}
	mu.Lock()
	defer mu.Unlock()
	got := map[string]string{}
	for _, r := range requests {
		for _, c := range r {
			got[c.Task] += string(c.Data)
		}
	}
	if len(got) != 3 || got["a"] != "out of a\n" || got["c"] != "out of c\n" || got["bad"] != "" {
		t.Errorf("received %v in %d requests", got, len(requests))
	}
}
