package control

import (
	"encoding/json"
	"fmt"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/admit"
)

// The API's bodies are plain types of package api, which depends on model
// only, so that its clients (the CLI, the worker agent) do not link the
// scheduler. The engine's answers become those bodies here, at the
// server's edge; apibody_test.go holds each pair to the same JSON.

// APIExplanation converts the engine's explanation of a job into the body
// of GET /v1/jobs/{id}/explain. Both types have the same fields and JSON;
// the conversion goes through JSON so that it copies every field the
// explanation has, however deep, and the test that compares the two types
// finds a field added to one and not the other. It fails only on a value
// JSON cannot carry (a NaN figure), which the API could not send either.
func APIExplanation(x engine.Explanation) (api.Explanation, error) {
	var out api.Explanation
	b, err := json.Marshal(x)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		return api.Explanation{}, fmt.Errorf("explanation of job %q: %w", x.Job, err)
	}
	return out, nil
}

// apiEndpointStats converts an endpoint's scheduling metrics into the API's.
func apiEndpointStats(s admit.EndpointStats) *api.EndpointStats {
	out := &api.EndpointStats{Endpoint: s.Endpoint, Type: s.Type, Configured: s.Configured, MaxCapacity: s.MaxCapacity,
		TargetCapacity: s.TargetCapacity, Load: s.Load, RunningJobs: s.RunningJobs, Visible: s.Visible, Buffered: s.Buffered,
		Errors: s.Errors, DeadLetters: s.DeadLetters, Utilization: s.Utilization}
	if s.Variants != nil {
		out.Variants = make([]api.VariantStats, 0, len(s.Variants))
	}
	for _, v := range s.Variants {
		out.Variants = append(out.Variants, api.VariantStats{Variant: v.Variant, Weight: v.Weight, Configured: v.Configured,
			MaxCapacity: v.MaxCapacity, TargetCapacity: v.TargetCapacity, Load: v.Load, Available: v.Available,
			Utilization: v.Utilization, RunningJobs: v.RunningJobs, Visible: v.Visible, Buffered: v.Buffered,
			Submitted: v.Submitted, Admitted: v.Admitted, SingleJobExceptions: v.SingleJobExceptions, Throttles: v.Throttles,
			Invocations: v.Invocations, Reservations: v.Reservations, ReservedFor: v.ReservedFor, Errors: v.Errors})
	}
	return out
}
