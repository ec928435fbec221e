// Package simtest builds the small fixtures the simulator's tests and its
// report's tests share: a fifo queue, identical workers, jobs and tasks on
// a fixed clock.
package simtest

import (
	"fmt"
	"time"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// T0 is the time every fixture starts at.
var T0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// FIFO is a one-queue fifo configuration, the queue named "default".
func FIFO() engine.Config {
	return engine.Config{Queues: []engine.QueueConfig{{Name: "default", Policy: policy.Config{Kind: "fifo"}}}}
}

// Workers returns n one-slot CPU workers w0….
func Workers(n int) []model.Worker {
	out := make([]model.Worker, n)
	for i := range out {
		out[i] = model.Worker{Name: fmt.Sprintf("w%d", i), Capacity: model.Resources{MilliCPU: 4000, MemoryMB: 8192}}
	}
	return out
}

// Job builds a job of the default queue arriving at offset at.
func Job(id, share string, at time.Duration, tasks ...model.Task) model.Job {
	return model.Job{ID: id, Queue: "default", Share: share, Submitted: T0.Add(at), Tasks: tasks}
}

// Task builds a one-slot task running for d after its needs.
func Task(name string, d time.Duration, needs ...string) model.Task {
	return model.Task{Name: name, Duration: d, Needs: needs}
}
