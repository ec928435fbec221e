// Package hooktest gives a loop feature's tests a round without the loop: a
// hook.Round that records what the feature wrote.
package hooktest

import (
	"time"

	"github.com/allot-sched/allot/internal/control/hook"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// Round is a hook.Round whose reads are its fields and whose writes land in
// them.
type Round struct {
	At      time.Time
	Log     []store.Event // Events; Event appends to it
	Written map[string][]byte
	Qs      []engine.QueueConfig
	Eng     hook.Engine
	Tasks   map[string]int
	Busy    int
}

// Now is At.
func (r *Round) Now() time.Time { return r.At }

// Events is Log.
func (r *Round) Events() []store.Event { return r.Log }

// Event appends to Log.
func (r *Round) Event(kind, job, task, worker string, reason model.Reason) {
	r.Log = append(r.Log, store.Event{At: r.At, Kind: kind, Job: job, Task: task, Worker: worker, Reason: reason.Code, Message: reason.Message})
}

// KV writes into Written.
func (r *Round) KV(key string, value []byte) {
	if r.Written == nil {
		r.Written = map[string][]byte{}
	}
	r.Written[key] = value
}

// Queues is Qs.
func (r *Round) Queues() []engine.QueueConfig { return r.Qs }

// Engine is Eng.
func (r *Round) Engine() hook.Engine { return r.Eng }

// JobTasks reads Tasks.
func (r *Round) JobTasks(job string) int { return r.Tasks[job] }

// BusyWorkers is Busy.
func (r *Round) BusyWorkers() int { return r.Busy }

var _ hook.Round = (*Round)(nil)
