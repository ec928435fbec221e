// Package hook declares the points of the scheduling loop where a feature
// kept in a package of its own does its part: at recovery, on a tick, with a
// cycle's decisions, at the end of a round and when the loop stops. The loop (internal/control) stays
// the only writer: a feature sees a narrow view of the round (its time, its
// events, key-value writes into the round's one transaction, the engine
// reads it needs), never the transaction or the loop's maps, so what it
// writes is stored by the round's commit and retried with it while the store
// refuses writes. The loop runs the features it registered in a fixed order
// (internal/control/features.go).
package hook

import (
	"context"
	"log/slog"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// Feature is a part of the loop kept out of it. It implements one or more
// of Recoverer, Ticker, DecisionsWatcher, RoundEnder and Stopper; the loop calls each only on
// its own goroutine.
type Feature interface {
	// Name names the feature in logs and docs.
	Name() string
}

// Recoverer rebuilds what the feature keeps in the engine from the store
// when the server starts, before the workers and jobs are rebuilt.
type Recoverer interface {
	Feature
	// Recover returns an error only when the store cannot be read; a row
	// it cannot use goes to Recovery.Quarantine.
	Recover(ctx context.Context, r Recovery) error
}

// Ticker runs on the loop's tick (Config.CycleEvery), before the cycle.
type Ticker interface {
	Feature
	Tick(r Round)
}

// RoundEnder runs at the end of every round, after the round's records are
// flushed into its batch and before the commit.
type RoundEnder interface {
	Feature
	RoundEnd(r Round)
}

// DecisionsWatcher runs with each cycle's decisions, after the loop recorded
// them (record, internal/control/cycle.go): a round may run more than one
// cycle, and each cycle's decisions come once.
type DecisionsWatcher interface {
	Feature
	Decisions(r Round, d *engine.Decisions)
}

// Stopper runs once as the loop stops; what it writes is committed on its
// own, since no round follows.
type Stopper interface {
	Feature
	Stop(r Round)
}

// Engine is what a feature reads from the engine, and applies to it at
// recovery. *engine.Engine implements it.
type Engine interface {
	// Now is the engine's time.
	Now() time.Time
	// History is what a queue's policy remembers.
	History(queue string) (policy.History, bool)
	// Apply applies an engine event.
	Apply(ev engine.Event) error
}

// Round is a feature's view of the loop round it runs in.
type Round interface {
	// Now is the round's time.
	Now() time.Time
	// Events lists the events the round appends so far.
	Events() []store.Event
	// Event appends an event to the round's log.
	Event(kind, job, task, worker string, reason model.Reason)
	// KV writes a key in the round's transaction; a nil value deletes it.
	KV(key string, value []byte)
	// Queues lists the queues with the policy in force.
	Queues() []engine.QueueConfig
	// Engine reads the engine.
	Engine() Engine
	// JobTasks is how many tasks an unfinished job has (0 if unknown).
	JobTasks(job string) int
	// BusyWorkers is how many workers run a task.
	BusyWorkers() int
}

// Recovery is a feature's view of the server's start.
type Recovery interface {
	// Clock reads the loop's clock.
	Clock() time.Time
	// KV reads a stored key; store.ErrNotFound if it is not set.
	KV(ctx context.Context, key string) ([]byte, error)
	// Quarantine sets aside a stored key that cannot be read back.
	Quarantine(key string, raw []byte, err error)
	// Queues lists the queues with the policy in force.
	Queues() []engine.QueueConfig
	// Engine reads and changes the engine being rebuilt.
	Engine() Engine
	// Logger is the server's logger.
	Logger() *slog.Logger
}

// Event kinds a feature reads in Round.Events. The event log's full list is
// internal/control's (state.go), which takes these from here so that the
// two cannot drift apart.
const (
	// EventJobSubmitted is appended once per accepted job.
	EventJobSubmitted = "job_submitted"
	// EventTaskStarted is appended once per attempt started.
	EventTaskStarted = "task_started"
	// EventTaskDeferred says a task waits for a sticky worker.
	EventTaskDeferred = "task_deferred"
)
