package agent

import (
	"sync"
	"unicode/utf8"
)

// tail keeps the last bytes written to it: a task's output can be any
// size, but only its end (where the error usually is) travels with the
// report. It is a ring, so a chatty task costs one copy per byte, not one
// shift of the whole buffer per write.
type tail struct {
	mu    sync.Mutex
	buf   []byte // allocated on the first write, len == max
	max   int
	w     int  // where the next byte goes
	full  bool // the ring has wrapped: buf[w:] is older than buf[:w]
	total int64
}

func newTail(limit int) *tail { return &tail{max: limit} }

// Write keeps the last max bytes of everything written; it never fails.
func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(n)
	if t.max <= 0 || n == 0 {
		return n, nil
	}
	if t.buf == nil {
		t.buf = make([]byte, t.max)
	}
	if n >= t.max {
		copy(t.buf, p[n-t.max:])
		t.w, t.full = 0, true
		return n, nil
	}
	k := copy(t.buf[t.w:], p)
	if k < n {
		copy(t.buf, p[k:])
	}
	t.w += n
	if t.w >= t.max {
		t.w -= t.max
		t.full = true
	}
	return n, nil
}

// String returns the kept bytes, oldest first. When older output was
// dropped, a character cut in half at the start is dropped too, so the
// tail is valid UTF-8 whenever the output was.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.full {
		return string(t.buf[:t.w])
	}
	b := make([]byte, 0, t.max)
	b = append(b, t.buf[t.w:]...)
	b = append(b, t.buf[:t.w]...)
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return string(b)
}

// Total is how many bytes were written, kept or not.
func (t *tail) Total() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}
