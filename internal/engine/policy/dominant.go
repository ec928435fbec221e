package policy

import (
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// Usage is how a queue's policy measures a group's usage and entitlement
// (the `usage` field of a policy block).
type Usage string

const (
	// UsageSlots counts slots: one running task is one slot, whatever it
	// asks for (every seed's rule, and the default).
	UsageSlots Usage = "slots"
	// UsageDominant measures a group by its dominant share: the largest
	// fraction it holds of any resource kind of the queue's pool (slots,
	// CPU, memory, GPUs, GPU memory), as dominant resource fairness
	// (Ghodsi et al., 2011) and Armada, YuniKorn and Kueue do.
	UsageDominant Usage = "dominant"
)

// Capacity is what a queue's pool offers, in slots and in each resource
// kind: the ready workers of the pool.
type Capacity struct {
	Slots   int
	Amounts model.Amounts
}

// DominantShare returns the dominant share of a holder of tasks tasks
// holding held out of pool c: the largest of tasks/slots and held/c over
// each resource kind the pool offers. Slots count as a kind because a task
// always takes one, so a task that asks for no resources still holds a
// share, and a pool of slots-only workers measures as under UsageSlots. A
// kind the pool does not offer (0 in c) is skipped: no task holding it can
// have been placed there. The result is 0 for an empty pool.
func DominantShare(tasks int, held model.Amounts, c Capacity) float64 {
	s := 0.0
	if c.Slots > 0 {
		s = float64(tasks) / float64(c.Slots)
	}
	for _, k := range [...][2]int64{
		{held.MilliCPU, c.Amounts.MilliCPU},
		{held.MemoryMB, c.Amounts.MemoryMB},
		{held.GPUs, c.Amounts.GPUs},
		{held.GPUMemoryMB, c.Amounts.GPUMemoryMB},
	} {
		if k[1] > 0 {
			s = max(s, float64(k[0])/float64(k[1]))
		}
	}
	return s
}

// DominantPolicy is a policy that can measure usage by dominant share.
// policy.New calls Dominant on a policy whose block says usage: dominant,
// before its first Account; the engine then fills View.Capacity and each
// Group's Held, tells the allocator what each start holds (SizedAllocator)
// and reports what running tasks hold (AmountsAccounter).
type DominantPolicy interface {
	Policy
	AmountsAccounter
	Dominant()
}

// AmountsAccounter is told, beside Account, what a group's running tasks
// hold: delta is added to the group's holding at time at (subtracted when
// a task stops, with delta negated). pool is the queue's pool at that
// moment, which the usage from then on is measured against.
type AmountsAccounter interface {
	AccountAmounts(group string, delta model.Amounts, pool Capacity, at time.Time)
}

// SizedAllocator is an Allocator that measures usage by dominant share: the
// engine tells it what each task it starts holds, just before Started.
type SizedAllocator interface {
	Took(group int, a model.Amounts)
}
