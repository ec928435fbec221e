package control

import (
	"math"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/spec"
)

// Fairness over time survives a restart: a share's decayed usage is stored
// and handed back, aged over the downtime.
func TestPolicyHistorySurvivesARestart(t *testing.T) {
	const tau = 3600.0
	sched := spec.Scheduling{Queues: []spec.Queue{{Name: "batch", Policy: policy.Config{Kind: "fairshare",
		FairShare: &policy.FairShareConfig{ShareDecaySeconds: int(tau)}}}}}
	p := newPlaneWith(t, sched)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Share: "a", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	a := p.waitAssignment("w1", "t")
	p.clock.Add(10 * time.Minute)
	if err := p.report("w1", succeeded(a)); err != nil {
		t.Fatal(err)
	}
	before := p.shareUsage("a")
	// ran 600 s: decayed usage τ·(1 − e^(−600/τ))
	if want := tau * -math.Expm1(-600/tau); math.Abs(before-want) > 1 {
		t.Fatalf("usage of a before the restart %.1f, want %.1f", before, want)
	}
	p.stop()
	p.clock.Add(time.Hour) // the server is down for an hour
	p.open()
	p.register("w1", 1) // a round that reads the policy at the new time
	after := p.shareUsage("a")
	if want := before * math.Exp(-1); math.Abs(after-want) > 1 {
		t.Errorf("usage of a after an hour's restart %.1f, want %.1f (decayed over the downtime, not lost)", after, want)
	}
}

// shareUsage reads a fairshare share's decayed usage from the queue status.
func (p *plane) shareUsage(share string) float64 {
	p.t.Helper()
	qs, err := p.c.Queues(p.ctx())
	if err != nil {
		p.t.Fatal(err)
	}
	for _, q := range qs {
		if st, ok := q.Status.([]fairshare.ShareStatus); ok {
			for _, s := range st {
				if s.Share == share {
					return s.SlotSeconds
				}
			}
		}
	}
	return 0
}
