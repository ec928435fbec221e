package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/spec"
)

func TestTailKeepsTheLastBytes(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		writes []string
		want   string
	}{
		{name: "short output is kept whole", limit: 8, writes: []string{"ab", "cd"}, want: "abcd"},
		{name: "exactly full", limit: 4, writes: []string{"ab", "cd"}, want: "abcd"},
		{name: "wraps across writes", limit: 4, writes: []string{"abc", "def", "g"}, want: "defg"},
		{name: "a write larger than the tail", limit: 4, writes: []string{"ab", "0123456789"}, want: "6789"},
		{name: "many small writes", limit: 5, writes: strings.Split("the quick brown fox", ""), want: "n fox"},
		{name: "zero keeps nothing", limit: 0, writes: []string{"abc"}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newTail(tt.limit)
			total := 0
			for _, w := range tt.writes {
				n, err := tl.Write([]byte(w))
				if err != nil || n != len(w) {
					t.Fatalf("Write = %d, %v", n, err)
				}
				total += n
			}
			if got := tl.String(); got != tt.want {
				t.Errorf("tail = %q, want %q", got, tt.want)
			}
			if tl.Total() != int64(total) {
				t.Errorf("Total = %d, want %d", tl.Total(), total)
			}
		})
	}
}

func TestBackoffDoublesUpToItsCapWithJitter(t *testing.T) {
	b := backoff{min: 100 * time.Millisecond, max: 800 * time.Millisecond}
	for round := 0; round < 2; round++ {
		for i, ceil := range []time.Duration{100, 200, 400, 800, 800, 800} {
			ceil *= time.Millisecond
			d := b.next()
			if d < ceil/2 || d > ceil {
				t.Errorf("round %d, retry %d: %v, want within [%v, %v]", round, i, d, ceil/2, ceil)
			}
		}
		b.reset()
	}
}

func TestParseMeminfo(t *testing.T) {
	tests := []struct {
		name, in string
		want     spec.Memory
		bad      bool
	}{
		{name: "MemTotal in kB", in: "MemFree:  100 kB\nMemTotal:       16316412 kB\n", want: 15933},
		{name: "no MemTotal", in: "MemFree: 1 kB\n", bad: true},
		{name: "another unit", in: "MemTotal: 16 MB\n", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMeminfo(strings.NewReader(tt.in))
			if (err != nil) != tt.bad || got != tt.want {
				t.Errorf("parseMeminfo = %d, %v; want %d, bad=%v", got, err, tt.want, tt.bad)
			}
		})
	}
}

func TestReporterDropsOnlyTheReportTheServerRejects(t *testing.T) {
	rep := func(task string) api.Report {
		return api.Report{Attempt: api.Attempt{Job: "j", Task: task, Attempt: 1}}
	}
	var delivered []string
	calls := 0
	send := func(_ context.Context, b []api.Report) error {
		calls++
		if calls == 1 {
			return errors.New("connection refused") // kept and retried
		}
		for _, r := range b {
			if r.Task == "bad" {
				return fmt.Errorf("%w: invalid", errRejected)
			}
		}
		for _, r := range b {
			delivered = append(delivered, r.Task)
		}
		return nil
	}
	r := newReporter(send, backoff{min: time.Millisecond, max: time.Millisecond}, slog.New(slog.DiscardHandler))
	for _, task := range []string{"a", "bad", "c"} {
		r.add(rep(task))
	}
	if err := r.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(delivered, ","); got != "a,c" || r.len() != 0 {
		t.Errorf("delivered %s, %d left; want a,c and none", got, r.len())
	}
}

func TestReporterFlushGivesUpWithItsContext(t *testing.T) {
	r := newReporter(func(context.Context, []api.Report) error { return errors.New("down") },
		backoff{min: time.Millisecond, max: 5 * time.Millisecond}, slog.New(slog.DiscardHandler))
	r.add(api.Report{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err := r.flush(ctx)
	if err == nil || !strings.Contains(err.Error(), "1 report(s) not delivered") || r.len() != 1 {
		t.Errorf("flush = %v with %d left; want the report kept", err, r.len())
	}
}

// Reports with large output tails go in several requests, each under the
// server's default body limit, instead of one request the server refuses
// with 413 (which the reporter would take for a rejection).
func TestReporterKeepsEachBatchUnderTheBodyLimit(t *testing.T) {
	const serverMaxBody = 8 << 20 // server.maxBody's default
	var sizes []int
	delivered := 0
	send := func(_ context.Context, b []api.Report) error {
		body, err := json.Marshal(b)
		if err != nil {
			return err
		}
		sizes = append(sizes, len(body))
		if len(body) > serverMaxBody {
			return fmt.Errorf("%w: 413 body too large", errRejected)
		}
		delivered += len(b)
		return nil
	}
	r := newReporter(send, backoff{min: time.Millisecond, max: time.Millisecond}, slog.New(slog.DiscardHandler))
	tail := strings.Repeat("x", MaxOutputTailBytes)
	for i := range 20 {
		r.add(api.Report{Attempt: api.Attempt{Job: "j", Task: fmt.Sprint("t", i), Attempt: 1}, Output: tail})
	}
	if err := r.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if delivered != 20 {
		t.Errorf("delivered %d of 20 reports (request sizes %v)", delivered, sizes)
	}
	for _, n := range sizes {
		if n > serverMaxBody {
			t.Errorf("a request of %d bytes, above the server's body limit of %d", n, serverMaxBody)
		}
	}
}

func TestReporterWaitsForTheServersRetryAfter(t *testing.T) {
	calls := 0
	send := func(context.Context, []api.Report) error {
		calls++
		if calls == 1 {
			e := &client.Error{Status: 503, RetryAfter: 300 * time.Millisecond}
			e.Code = api.CodeOverloaded
			return e
		}
		return nil
	}
	r := newReporter(send, backoff{min: time.Millisecond, max: time.Millisecond}, slog.New(slog.DiscardHandler))
	r.add(api.Report{Attempt: api.Attempt{Job: "j", Task: "a", Attempt: 1}})
	start := time.Now()
	if err := r.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); calls != 2 || took < 300*time.Millisecond {
		t.Errorf("sent %d times in %s; want the second send after the server's Retry-After of 300ms", calls, took)
	}
}

func TestBackoffAfterAnErrorHonoursRetryAfter(t *testing.T) {
	overloaded := &client.Error{Status: 503, RetryAfter: 2 * time.Second}
	cases := []struct {
		name     string
		err      error
		min, max time.Duration
	}{
		{"a server's Retry-After longer than the backoff", overloaded, 2 * time.Second, 2 * time.Second},
		{"a transport error: the backoff", errors.New("connection refused"), 5 * time.Millisecond, 10 * time.Millisecond},
	}
	for _, tc := range cases {
		b := backoff{min: 10 * time.Millisecond, max: 10 * time.Millisecond}
		if d := b.after(tc.err); d < tc.min || d > tc.max {
			t.Errorf("%s: %s, want within [%s, %s]", tc.name, d, tc.min, tc.max)
		}
	}
}
