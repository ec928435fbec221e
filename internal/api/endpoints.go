package api

import (
	"time"

	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

// The bodies of the endpoint, throttling and dead-letter routes (seed 000,
// docs/endpoints.md).

// EndpointList is the answer of GET /v1/endpoints: the throttling settings
// in force and every endpoint with its configuration and scheduling metrics.
type EndpointList struct {
	// At is when the metrics were taken: the end of the last scheduling
	// cycle. Reading them costs the scheduler nothing.
	At         time.Time       `json:"at"`
	Throttling spec.Throttling `json:"throttling"`
	Endpoints  []Endpoint      `json:"endpoints"`
}

// Endpoint is one endpoint: its definition, as in the configuration file
// (nil for an endpoint that was removed but still has jobs), and its
// metrics per variant (nil until a cycle has seen it).
type Endpoint struct {
	Name   string               `json:"name"`
	Config *spec.Endpoint       `json:"config,omitempty"`
	Stats  *admit.EndpointStats `json:"stats,omitempty"`
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
