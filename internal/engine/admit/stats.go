package admit

import (
	"github.com/allot-sched/allot/internal/model"
)

// EndpointStats are the scheduling metrics of one endpoint (seed 000), with
// a row per variant. Counters only grow; the server exports them (Prometheus)
// and `allot endpoints` shows them. Duration, the time scheduling decisions
// take, is not here: the engine reads no clock, so the caller times Cycle
// and relates it to Invocations.
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

// Stats returns the metrics of every endpoint, configured or still used by
// jobs after its removal, by name; variants in configured order, then
// left-over ones by name.
func (c *Controller) Stats() []EndpointStats {
	out := make([]EndpointStats, 0, len(c.epList))
	for _, ep := range c.epList {
		es := EndpointStats{Endpoint: ep.name, Configured: ep.configured, Errors: ep.errors, DeadLetters: ep.deadLetter,
			Variants: make([]VariantStats, 0, len(ep.pools))}
		if ep.configured {
			es.Type = ep.spec.Type
		}
		for _, p := range ep.pools {
			vs := VariantStats{Variant: p.name, Weight: p.weight, Configured: p.configured, MaxCapacity: p.max,
				TargetCapacity: p.target, Load: p.load, Available: p.available(), Utilization: utilization(p.load, p.max),
				RunningJobs: p.running, Visible: p.waiting, Buffered: p.waiting + p.running, Submitted: p.submitted,
				Admitted: p.admitted, SingleJobExceptions: p.exceptions, Throttles: p.throttles,
				Invocations: p.invocations, Reservations: p.reservations, Errors: p.errors}
			if p.reserved != nil {
				vs.ReservedFor = p.reserved.ID
			}
			es.MaxCapacity += p.max
			es.TargetCapacity += p.target
			es.Load += p.load
			es.RunningJobs += p.running
			es.Visible += p.waiting
			es.Buffered += p.waiting + p.running
			es.Errors += p.errors
			es.Variants = append(es.Variants, vs)
		}
		es.Utilization = utilization(es.Load, es.MaxCapacity)
		out = append(out, es)
	}
	return out
}

func utilization(load, capacity int) float64 {
	switch {
	case load <= 0:
		return 0
	case capacity <= 0:
		return 100
	}
	return 100 * float64(load) / float64(capacity)
}

// RecordDeadLetter counts a job refused at validation (an inaccessible
// input) as an error of its endpoint: of the variant it names, or the only
// one, else of the endpoint. A job naming no configured endpoint is not
// counted.
func (c *Controller) RecordDeadLetter(j model.Job) {
	ep, ok := c.eps[j.Endpoint]
	if !ok || !ep.configured {
		return
	}
	ep.deadLetter++
	c.RecordError(j.Endpoint, j.Variant)
}

// RecordError counts a failure the control plane met on an endpoint, such
// as a capacity query that failed (the seed then falls back to the
// configured capacity). variant "" attributes it to the endpoint, or to its
// only variant.
func (c *Controller) RecordError(endpoint, variant string) bool {
	ep, ok := c.eps[endpoint]
	if !ok {
		return false
	}
	if variant == "" && len(ep.pools) == 1 {
		variant = ep.pools[0].name
	}
	for _, p := range ep.pools {
		if p.name == variant {
			p.errors++
			return true
		}
	}
	ep.errors++
	return true
}
