package api

import "github.com/allot-sched/allot/internal/engine"

// Explanation is the body of GET /v1/jobs/{id}/explain: why a job's waiting
// tasks are not running (admission, allocation, placement, dependencies),
// what would help, and an estimated start. docs/explain.md describes every
// field.
//
// It is the engine's own explanation, not a copy: the engine builds it as a
// plain JSON value for the API, `allot explain -f` prints the same type
// offline, and two definitions would drift apart.
type Explanation = engine.Explanation
