package control

import (
	"slices"
	"time"
)

// runtimeWindow keeps the runtimes of a queue's last succeeded attempts, so
// that explain's start estimate has a figure for a task nothing else
// estimates (no earlier run of its stage in its job, no declared duration):
// what tasks of that queue took lately. Loop-owned.
type runtimeWindow struct {
	ring []time.Duration
	next int
}

// runtimeWindowLen bounds a queue's window: enough for a stable median,
// small enough to copy for each explain.
const runtimeWindowLen = 256

// minRuntimeSamples is how many runtimes a window needs before its median
// is used; fewer say too little about the queue.
const minRuntimeSamples = 5

func (w *runtimeWindow) add(d time.Duration) {
	if len(w.ring) < runtimeWindowLen {
		w.ring = append(w.ring, d)
		return
	}
	w.ring[w.next] = d
	w.next = (w.next + 1) % runtimeWindowLen
}

// median returns the window's median runtime, or false with too few
// samples.
func (w *runtimeWindow) median() (time.Duration, bool) {
	if w == nil || len(w.ring) < minRuntimeSamples {
		return 0, false
	}
	s := slices.Clone(w.ring)
	slices.Sort(s)
	return s[len(s)/2], true
}

// observeRuntime records a succeeded attempt's runtime in its queue's
// window.
func (c *Controller) observeRuntime(queue string, started, ended time.Time) {
	if started.IsZero() || !ended.After(started) {
		return
	}
	if c.recent == nil {
		c.recent = map[string]*runtimeWindow{}
	}
	w := c.recent[queue]
	if w == nil {
		w = &runtimeWindow{}
		c.recent[queue] = w
	}
	w.add(ended.Sub(started))
}
