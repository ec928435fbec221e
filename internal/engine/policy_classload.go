package engine

// The classload policy registers itself with the policy registry from init;
// importing it here makes "classload" a valid policy kind wherever the
// engine is used.
import _ "github.com/allot-sched/allot/internal/engine/policy/classload"
