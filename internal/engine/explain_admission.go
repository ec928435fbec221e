package engine

import (
	"fmt"
	"time"

	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/model"
)

// AdmissionExplain is where an endpoint job stands at admission (seed 000):
// the variant it was routed to, that variant's capacity and load, the job's
// own load and where the figure came from, and the anti-starvation
// reservation.
type AdmissionExplain struct {
	Endpoint   string `json:"endpoint"`
	Variant    string `json:"variant"`
	Admitted   bool   `json:"admitted"`
	Load       int    `json:"load"`
	LoadSource string `json:"loadSource"`
	// MaxCapacity and TargetCapacity are the variant's, in concurrent
	// requests; InUse is the load of its admitted jobs and Available
	// TargetCapacity − InUse.
	MaxCapacity    int `json:"maxCapacity"`
	TargetCapacity int `json:"targetCapacity"`
	InUse          int `json:"inUse"`
	Available      int `json:"available"`
	RunningJobs    int `json:"runningJobs"`
	WaitingJobs    int `json:"waitingJobs"`
	// ThrottledSince is when the job was first held back; zero if never.
	ThrottledSince time.Time `json:"throttledSince,omitzero"`
	AdmittedAt     time.Time `json:"admittedAt,omitzero"`
	// ReservedFor is the job holding the variant's starvation
	// reservation, if any (this job or another).
	ReservedFor        string       `json:"reservedFor,omitempty"`
	SingleJobException bool         `json:"singleJobException,omitempty"`
	Reason             model.Reason `json:"reason,omitzero"`
}

// explainAdmission reads the job's admission record and its variant's
// figures.
func (e *Engine) explainAdmission(j *job) *AdmissionExplain {
	info, ok := e.Admission(j.id)
	if !ok {
		return &AdmissionExplain{Endpoint: j.spec.Endpoint, Variant: j.spec.Variant, Admitted: j.admitted}
	}
	a := &AdmissionExplain{Endpoint: info.Endpoint, Variant: info.Variant, Admitted: info.Admitted, Load: info.Load,
		LoadSource: info.LoadSource, ThrottledSince: info.ThrottledAt, AdmittedAt: info.AdmittedAt,
		SingleJobException: info.Exception}
	if vs, ok := variantStats(e.EndpointStats(), info.Endpoint, info.Variant); ok {
		a.MaxCapacity, a.TargetCapacity, a.InUse, a.Available = vs.MaxCapacity, vs.TargetCapacity, vs.Load, vs.Available
		a.RunningJobs, a.WaitingJobs, a.ReservedFor = vs.RunningJobs, vs.Visible, vs.ReservedFor
	}
	if !info.Admitted {
		a.Reason = e.admissionReason(j)
	}
	return a
}

func variantStats(all []admit.EndpointStats, endpoint, variant string) (admit.VariantStats, bool) {
	for _, es := range all {
		if es.Endpoint != endpoint {
			continue
		}
		for _, vs := range es.Variants {
			if vs.Variant == variant {
				return vs, true
			}
		}
	}
	return admit.VariantStats{}, false
}

func admissionHelp(a *AdmissionExplain, j *job) []Help {
	if a.Admitted {
		return nil
	}
	where := a.Endpoint
	if a.Variant != "" {
		where += " variant " + a.Variant
	}
	var out []Help
	if a.Load > a.Available {
		out = append(out, Help{Kind: "endpoint_capacity", Message: fmt.Sprintf(
			"endpoint %s is at capacity: %d of %d in use (target %d of max %d); the job needs %d, %d more than is free",
			where, a.InUse, a.TargetCapacity, a.TargetCapacity, a.MaxCapacity, a.Load, a.Load-max(a.Available, 0))})
	}
	switch {
	case a.ReservedFor == j.id:
		out = append(out, Help{Kind: "starvation_reservation", Message: fmt.Sprintf(
			"the job holds the starvation reservation of %s: no smaller job is admitted there before it", where)})
	case a.ReservedFor != "":
		out = append(out, Help{Kind: "starvation_reservation", Message: fmt.Sprintf(
			"job %s holds the starvation reservation of %s: it is admitted first", a.ReservedFor, where)})
	}
	return out
}
