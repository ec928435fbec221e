package api

import (
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// The bodies of the endpoint, throttling and dead-letter routes (seed 000,
// docs/endpoints.md).

// EndpointList is the answer of GET /v1/endpoints: the throttling settings
// in force and every endpoint with its configuration and scheduling metrics.
type EndpointList struct {
	// At is when the metrics were taken: the end of the last scheduling
	// cycle. Reading them costs the scheduler nothing.
	At         time.Time            `json:"at"`
	Throttling model.ThrottlingSpec `json:"throttling"`
	Endpoints  []Endpoint           `json:"endpoints"`
}

// Endpoint is one endpoint: its definition, as in the configuration file
// (nil for an endpoint that was removed but still has jobs), and its
// metrics per variant (nil until a cycle has seen it).
type Endpoint struct {
	Name   string              `json:"name"`
	Config *model.EndpointSpec `json:"config,omitempty"`
	Stats  *EndpointStats      `json:"stats,omitempty"`
}

// Admission is what admission against endpoint capacity says about a job:
// its endpoint, the variant chosen once at submission, its load, and the
// state of admission.
type Admission struct {
	Endpoint string `json:"endpoint,omitempty"`
	Variant  string `json:"variant,omitempty"`
	Load     int    `json:"load,omitempty"`
	// LoadSource says where the load came from: load, regions, image or
	// default (20 regions).
	LoadSource string `json:"loadSource,omitempty"`
	// State is waiting (not evaluated yet), throttled, admitted or
	// dead_lettered.
	State string `json:"state"`
	// ThrottledSince is when the job was first throttled.
	ThrottledSince *time.Time `json:"throttledSince,omitempty"`
	AdmittedAt     *time.Time `json:"admittedAt,omitempty"`
	// SingleJobException says the job was admitted although its load
	// exceeded the available capacity, because nothing else ran on its
	// variant.
	SingleJobException bool `json:"singleJobException,omitempty"`
	// Reason says why a dead-lettered job was refused.
	Reason *model.Reason `json:"reason,omitempty"`
}

// Admission states.
const (
	AdmissionWaiting      = "waiting"
	AdmissionThrottled    = "throttled"
	AdmissionAdmitted     = "admitted"
	AdmissionDeadLettered = "dead_lettered"
)

// DeadLetter is a job on the dead-letter list: one of its inputs could not
// be read at submission (or at its last redrive), so it takes no capacity
// until it is redriven.
type DeadLetter struct {
	Job      string       `json:"job"`
	Queue    string       `json:"queue"`
	Share    string       `json:"share,omitempty"`
	Endpoint string       `json:"endpoint,omitempty"`
	Variant  string       `json:"variant,omitempty"`
	Inputs   []string     `json:"inputs,omitempty"`
	Reason   model.Reason `json:"reason"`
	At       time.Time    `json:"at"`
}

// DeadLetterList is the answer of GET /v1/deadletters, oldest first.
type DeadLetterList struct {
	DeadLetters []DeadLetter `json:"deadLetters"`
}

// Redriven is the answer of POST /v1/deadletters/{id}/redrive: the job,
// and whether it was submitted again or went back to the list (with the
// new reason in Job.Admission).
type Redriven struct {
	Redriven bool `json:"redriven"`
	Job      Job  `json:"job"`
}

// EndpointStats are the scheduling metrics of one endpoint (seed 000), with
// a row per variant, as the engine counts them (admit.EndpointStats, with
// the same JSON; the server converts them). Counters only grow; the server
// exports them (Prometheus) and `allot endpoints` shows them. The time
// scheduling decisions take is the cycle duration metric, not a field here.
type EndpointStats struct {
	Endpoint   string             `json:"endpoint"`
	Type       model.EndpointType `json:"type,omitempty"`
	Configured bool               `json:"configured"`
	// MaxCapacity, TargetCapacity, Load, RunningJobs, Visible and Buffered
	// sum the variants.
	MaxCapacity    int `json:"maxCapacity"`
	TargetCapacity int `json:"targetCapacity"`
	Load           int `json:"load"`
	RunningJobs    int `json:"runningJobs"`
	Visible        int `json:"visible"`
	Buffered       int `json:"buffered"`
	// Errors counts failures on the endpoint: inaccessible inputs (each a
	// dead letter) and failed capacity queries the control plane reports,
	// the variants' included.
	Errors      uint64 `json:"errors"`
	DeadLetters uint64 `json:"deadLetters"`
	// Utilization is 100 × Load / MaxCapacity.
	Utilization float64        `json:"utilization"`
	Variants    []VariantStats `json:"variants"`
}

// VariantStats are the metrics of one production variant.
type VariantStats struct {
	// Variant is "" for an endpoint without variants.
	Variant    string  `json:"variant"`
	Weight     float64 `json:"weight"`
	Configured bool    `json:"configured"`
	// MaxCapacity and TargetCapacity are in concurrent requests;
	// Available is TargetCapacity − Load, negative after the single-job
	// exception admitted a job larger than the target.
	MaxCapacity    int `json:"maxCapacity"`
	TargetCapacity int `json:"targetCapacity"`
	Load           int `json:"load"`
	Available      int `json:"available"`
	// Utilization is the current endpoint utilization in percent, 100 ×
	// Load / MaxCapacity: at most the target percentage under throttling,
	// except for the single-job exception (and 100 when a job runs on a
	// variant of capacity 0).
	Utilization float64 `json:"utilization"`
	// RunningJobs counts admitted jobs that have not ended.
	RunningJobs int `json:"runningJobs"`
	// Visible is ApproximateNumberOfRequestsVisible: jobs waiting for
	// admission. Buffered is ApproximateNumberOfRequestsBuffered: jobs
	// received and not complete (waiting or running).
	Visible  int `json:"visible"`
	Buffered int `json:"buffered"`
	// Submitted counts jobs routed to the variant; Admitted those
	// admitted, SingleJobExceptions of them by the single-job exception.
	Submitted           uint64 `json:"submitted"`
	Admitted            uint64 `json:"admitted"`
	SingleJobExceptions uint64 `json:"singleJobExceptions"`
	// Throttles counts jobs delayed for insufficient capacity (each job
	// once, however many passes it waits).
	Throttles uint64 `json:"throttles"`
	// Invocations counts admission decisions: each waiting job, each pass.
	Invocations uint64 `json:"invocations"`
	// Reservations counts starvation reservations taken; ReservedFor is
	// the job holding one now.
	Reservations uint64 `json:"reservations"`
	ReservedFor  string `json:"reservedFor,omitempty"`
	Errors       uint64 `json:"errors"`
}
