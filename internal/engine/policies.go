package engine

import (
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/classload"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/engine/policy/sla"
)

// The policies a queue may name, by kind. This is the one place a policy is
// registered: a new policy adds its package's Kind here (see
// docs/contributing.md).
func init() {
	for _, k := range []policy.Kind{
		policy.FIFOKind,
		fairshare.Kind,
		priority.Kind,
		sla.Kind,
		classload.Kind,
	} {
		policy.Register(k)
	}
}
