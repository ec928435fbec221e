package priority

import (
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
)

var _ policy.AffinityPolicy = (*Priority)(nil)

// Affinity implements policy.AffinityPolicy: intrinsic affinity is on with
// the Usage algorithm unless configured off; the Time algorithm never uses
// it (seed 001). The sla policy does not implement the interface.
func (p *Priority) Affinity() (enabled bool, wait time.Duration) {
	if !p.cfg.AffinityOn() {
		return false, 0
	}
	return true, p.cfg.AffinityWait
}
