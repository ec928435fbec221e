package admit

import (
	"math"

	"github.com/allot-sched/allot/internal/model"
)

// Variants returns ep's production variants: its own list, or one implicit
// variant named "" that carries the endpoint's capacity fields.
func Variants(ep model.Endpoint) []model.Variant {
	if len(ep.Variants) > 0 {
		return ep.Variants
	}
	return []model.Variant{{Weight: 1, MaxConcurrency: ep.MaxConcurrency, Instances: ep.Instances,
		InstanceConcurrency: ep.InstanceConcurrency}}
}

// MaxCapacity is the number of concurrent requests variant v of ep takes
// (seed 000): serverless, its MaxConcurrency; instance-backed, instances ×
// instance concurrency (the variant's, else the endpoint's, else
// DefaultInstanceConcurrency); HTTP, MaxConcurrency when set, else
// DefaultHTTPEndpointConcurrency.
func MaxCapacity(ep model.Endpoint, v model.Variant, s Settings) int {
	s = s.resolved()
	switch ep.Type {
	case model.EndpointServerless:
		return v.MaxConcurrency
	case model.EndpointInstanceBacked:
		ic := v.InstanceConcurrency
		if ic == 0 {
			ic = ep.InstanceConcurrency
		}
		if ic == 0 {
			ic = s.DefaultInstanceConcurrency
		}
		return satMul(v.Instances, ic)
	case model.EndpointHTTP:
		if v.MaxConcurrency > 0 {
			return v.MaxConcurrency
		}
		return s.DefaultHTTPEndpointConcurrency
	}
	return 0
}

// TargetCapacity is floor(max × pct): the load admission fills a variant up
// to. The product is rounded to the nearest integer first when it is within
// floating-point noise of it, so that 100 × 0.29 is 29, not 28.
func TargetCapacity(max int, pct float64) int {
	t := float64(max) * pct
	if r := math.Round(t); math.Abs(t-r) <= 1e-9*math.Max(1, math.Abs(t)) {
		return int(r)
	}
	return int(math.Floor(t))
}

// satMul multiplies non-negative ints, saturating instead of overflowing.
func satMul(a, b int) int {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt32 || b > math.MaxInt32 || a*b > math.MaxInt32 {
		return math.MaxInt32
	}
	return a * b
}
