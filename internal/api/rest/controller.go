package rest

import (
	"context"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/web"
)

// The server declares what it needs of the scheduling loop, grouped by the
// routes that use it, instead of holding the concrete control.Controller:
// a route reads as the few calls it makes, and a test or a future
// front end can stand in for one group without the whole loop.

// Jobs is what the job routes need: submission, reads, changes, explain
// and the dead-letter list.
type Jobs interface {
	CheckJob(js spec.Job) error
	SubmitCheckedBy(ctx context.Context, submitter string, specs []spec.Job) ([]control.Submission, error)
	SubmitCheckedWith(ctx context.Context, submitter string, specs []spec.Job, opts control.SubmitOptions) ([]control.Submission, error)
	Job(ctx context.Context, id string) (api.Job, error)
	Jobs(ctx context.Context, f store.JobFilter) (api.JobList, error)
	Logs(ctx context.Context, id string, q api.LogQuery) (api.Logs, error)
	Cancel(ctx context.Context, id string) (api.Job, error)
	Hold(ctx context.Context, id, by string) (api.Job, error)
	Release(ctx context.Context, id string) (api.Job, error)
	SetResources(ctx context.Context, id string, ch api.ResourcesChange) (api.Job, error)
	CancelTask(ctx context.Context, id, task string) (api.Job, error)
	Requeue(ctx context.Context, id, task string) (api.Job, error)
	SetPriority(ctx context.Context, id string, priority int, urgent bool) (api.Job, error)
	Explain(ctx context.Context, id string) (api.Explanation, error)
	DeadLetters(ctx context.Context) (api.DeadLetterList, error)
	Redrive(ctx context.Context, id string) (api.Redriven, error)
}

// WorkerProtocol is what the agent routes need: registration, leases,
// reports and cache hints.
type WorkerProtocol interface {
	Register(ctx context.Context, reg api.Register) (api.Worker, error)
	Lease(ctx context.Context, worker string, wait time.Duration, holds *[]api.Attempt) (api.Lease, error)
	Report(ctx context.Context, worker string, reports []api.Report) error
	AppendOutput(ctx context.Context, worker string, chunks []api.OutputChunk) error
	Stopping(ctx context.Context, worker string) error
	Leave(ctx context.Context, worker string) error
	HeartbeatCache(ctx context.Context, worker string, hb api.Heartbeat) error
}

// Fleet is what the worker and placement routes need.
type Fleet interface {
	Workers(ctx context.Context) ([]api.Worker, error)
	SetWorkerState(ctx context.Context, worker string, state model.WorkerState) (api.Worker, error)
	ToggleElastic(ctx context.Context, worker string, enabled bool) (api.Worker, error)
	Density() api.Density
}

// Admission is what the endpoint and throttling routes need.
type Admission interface {
	Endpoints() api.EndpointList
	SetEndpoint(ctx context.Context, name string, e spec.Endpoint) (api.Endpoint, error)
	RemoveEndpoint(ctx context.Context, name string) error
	Throttling() spec.Throttling
	SetThrottling(ctx context.Context, th spec.Throttling) (spec.Throttling, error)
}

// Queues is what the queue routes need.
type Queues interface {
	Queues(ctx context.Context) ([]api.Queue, error)
	SetPolicy(ctx context.Context, queue string, pc policy.Config) (api.Queue, error)
}

// Loop is what readiness, the event stream and the store reads need of
// the loop itself.
type Loop interface {
	Ping(ctx context.Context) error
	Changed() <-chan struct{}
	Closing() <-chan struct{}
	StoreHealth() control.StoreHealth
	Store() store.Store
}

// Controller is everything the server serves, the dashboard's reads
// (web.Controller) included: control.Controller is one.
type Controller interface {
	web.Controller
	Jobs
	WorkerProtocol
	Fleet
	Admission
	Queues
	Loop
}

var _ Controller = (*control.Controller)(nil)
