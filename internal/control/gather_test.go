package control

import (
	"testing"
	"time"
)

// A round waits for the callers the last commit answered only when there
// were many, until as many are in, for at most that commit's time and
// DefaultGatherMax.
func TestGatherFor(t *testing.T) {
	for _, c := range []struct {
		answered, have int
		took, want     time.Duration
	}{
		{answered: 1, have: 0, took: time.Millisecond, want: 0},             // one caller: no wait
		{answered: gatherMin - 1, have: 0, took: time.Millisecond, want: 0}, // few
		{answered: 64, have: 20, took: 3 * time.Millisecond, want: 3 * time.Millisecond},
		{answered: 64, have: 64, took: 3 * time.Millisecond, want: 0},       // all back
		{answered: 64, have: 100, took: 3 * time.Millisecond, want: 0},      // more than answered
		{answered: 64, have: 20, took: time.Second, want: DefaultGatherMax}, // a slow commit: capped
		{answered: 0, have: 5, took: 0, want: 0},                            // nothing committed yet
	} {
		if got := gatherFor(c.answered, c.have, c.took, DefaultGatherMax); got != c.want {
			t.Errorf("gatherFor(%d, %d, %v) = %v, want %v", c.answered, c.have, c.took, got, c.want)
		}
	}
	if got := gatherFor(64, 20, 3*time.Millisecond, -1); got != 0 {
		t.Errorf("with the wait turned off: %v, want 0", got)
	}
}
