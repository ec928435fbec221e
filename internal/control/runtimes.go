package control

import (
	"time"

	"github.com/allot-sched/allot/internal/whatif"
)

// observeRuntime records a succeeded attempt's runtime in its queue's
// window.
func (c *Controller) observeRuntime(queue string, started, ended time.Time) {
	if started.IsZero() || !ended.After(started) {
		return
	}
	if c.recent == nil {
		c.recent = map[string]*whatif.Window{}
	}
	w := c.recent[queue]
	if w == nil {
		w = &whatif.Window{}
		c.recent[queue] = w
	}
	w.Add(ended.Sub(started))
}
