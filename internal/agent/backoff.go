package agent

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/allot-sched/allot/internal/client"
)

// backoff spaces out retries against a server that is down: the delay
// doubles from min up to max, and each wait is drawn from its upper half
// so a fleet of workers that lost the server together does not come back
// in lockstep.
type backoff struct {
	min, max time.Duration
	cur      time.Duration
}

// next returns the delay before the next retry.
func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	if b.cur <= 0 {
		return 0
	}
	half := b.cur / 2
	return half + rand.N(b.cur-half+1)
}

// after returns the delay before retrying a request that failed with err:
// the next delay, or the server's Retry-After when it asks for longer (a
// server at its connection limit answers 503 overloaded with one).
func (b *backoff) after(err error) time.Duration {
	return max(b.next(), client.RetryAfter(err))
}

// reset starts over after a success.
func (b *backoff) reset() { b.cur = 0 }

// sleep waits d or until ctx ends; it reports whether the full wait passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
