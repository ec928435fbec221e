package engine

// The fairshare policy registers itself with the policy registry; linking it
// here makes "fairshare" available to every engine.
import _ "github.com/allot-sched/allot/internal/engine/policy/fairshare"
