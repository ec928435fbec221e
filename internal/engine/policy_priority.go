package engine

// The priority and sla policies (seed 001) register themselves.
import _ "github.com/allot-sched/allot/internal/engine/policy/priority"
