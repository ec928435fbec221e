package sim

import (
	"context"
	"fmt"
	"sort"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/admit"
)

// EndpointResult is what a run measured on one endpoint variant: how high
// the concurrency (the Σ of admitted jobs' loads) went against the target,
// and what throttling cost in admission waits.
type EndpointResult struct {
	Endpoint string `json:"endpoint"`
	Variant  string `json:"variant,omitempty"`
	// MaxCapacity and TargetCapacity are the variant's at the end of the
	// run, in concurrent requests.
	MaxCapacity    int `json:"maxCapacity"`
	TargetCapacity int `json:"targetCapacity"`
	// Jobs counts jobs routed to the variant; Admitted those admitted.
	Jobs     int `json:"jobs"`
	Admitted int `json:"admitted"`
	// Throttled counts jobs delayed at least once for lack of capacity;
	// SingleJobExceptions the jobs admitted with a load above the
	// available capacity because nothing else ran; Reservations the
	// starvation reservations taken.
	Throttled           int `json:"throttled"`
	SingleJobExceptions int `json:"singleJobExceptions"`
	Reservations        int `json:"reservations"`
	// PeakLoad is the highest concurrency; PeakLoadShared the highest
	// while two or more jobs held load. With throttling on,
	// PeakLoadShared never exceeds TargetCapacity: only the single-job
	// exception goes above it, and then that job runs alone.
	PeakLoad       int `json:"peakLoad"`
	PeakLoadShared int `json:"peakLoadShared"`
	// MeanLoad is the time-averaged concurrency over the run.
	MeanLoad float64 `json:"meanLoad"`
	// AdmissionWait is, per admitted job, the time from its arrival to its
	// admission.
	AdmissionWait WaitStats `json:"admissionWait"`
}

// epAcc accumulates one endpoint variant during the run.
type epAcc struct {
	EndpointResult
	load, jobs int
	since      int64 // time of the last load change
	area       float64
	waits      []int64
}

// endpointAcc returns the accumulator of (endpoint, variant).
func (r *runner) endpointAcc(endpoint, variant string) *epAcc {
	key := endpoint + "\x00" + variant
	if r.eps == nil {
		r.eps = map[string]*epAcc{}
	}
	a, ok := r.eps[key]
	if !ok {
		a = &epAcc{EndpointResult: EndpointResult{Endpoint: endpoint, Variant: variant}}
		r.eps[key] = a
	}
	return a
}

func (a *epAcc) change(now int64, dLoad, dJobs int) {
	a.area += float64(a.load) * float64(now-a.since)
	a.since = now
	a.load += dLoad
	a.jobs += dJobs
	a.PeakLoad = max(a.PeakLoad, a.load)
	if a.jobs >= 2 {
		a.PeakLoadShared = max(a.PeakLoadShared, a.load)
	}
}

// admission mirrors one cycle's admission decisions: loads of ended jobs
// are released first, as the engine released them when the jobs ended, then
// the admitted jobs add theirs.
func (r *runner) admission(d *engine.Decisions) {
	for _, e := range d.JobsDone {
		ji, ok := r.jobIdx[e.Job]
		if !ok || r.jobs[ji].epLoad == 0 {
			continue
		}
		sj := &r.jobs[ji]
		sj.ep.change(r.now, -sj.epLoad, -1)
		sj.epLoad = 0
	}
	for _, id := range d.Admitted {
		info, ok := r.eng.Admission(id)
		ji, known := r.jobIdx[id]
		if !ok || !known {
			continue
		}
		a := r.endpointAcc(info.Endpoint, info.Variant)
		sj := &r.jobs[ji]
		sj.ep, sj.epLoad = a, info.Load // at least 1: every estimate is
		a.change(r.now, info.Load, 1)
		a.waits = append(a.waits, r.now-int64(info.Submitted.Sub(r.in.Start)))
		r.note("admit", id, "", "", fmt.Sprintf("endpoint %s load %d", endpointLabel(info.Endpoint, info.Variant), info.Load))
	}
	for _, th := range d.Throttled {
		r.note("throttle", th.Job, "", "", th.Reason.Message)
	}
	for _, id := range d.DeadLettered {
		r.note("deadletter", id, "", "", "")
	}
}

// Label names the endpoint variant as the timeline and the report do:
// "endpoint/variant", or the endpoint alone when it has no variants.
func (e EndpointResult) Label() string { return endpointLabel(e.Endpoint, e.Variant) }

func endpointLabel(endpoint, variant string) string {
	if variant == "" {
		return endpoint
	}
	return endpoint + "/" + variant
}

// checkInputs returns why the job must be dead-lettered, or "".
func (r *runner) checkInputs(ji int32) string {
	if r.in.Inputs == nil {
		return ""
	}
	if err := admit.CheckInputs(context.Background(), r.in.Inputs, r.in.Jobs[ji].Inputs); err != nil {
		return err.Error()
	}
	return ""
}

// endpointResults completes the endpoint metrics from the engine's
// counters, by endpoint and variant.
func (r *runner) endpointResults(res *Result) {
	for _, es := range r.eng.EndpointStats() {
		for _, vs := range es.Variants {
			a := r.endpointAcc(es.Endpoint, vs.Variant)
			a.MaxCapacity, a.TargetCapacity = vs.MaxCapacity, vs.TargetCapacity
			a.Jobs, a.Admitted, a.Throttled = int(vs.Submitted), int(vs.Admitted), int(vs.Throttles)
			a.SingleJobExceptions, a.Reservations = int(vs.SingleJobExceptions), int(vs.Reservations)
		}
	}
	keys := make([]string, 0, len(r.eps))
	for k := range r.eps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a := r.eps[k]
		a.change(r.end, 0, 0)
		if r.end > 0 {
			a.MeanLoad = a.area / float64(r.end)
		}
		a.AdmissionWait = waitStats(a.waits)
		res.Endpoints = append(res.Endpoints, a.EndpointResult)
	}
}
