// Package admit is the admission stage of the engine (seed 000): endpoints
// and their production variants, the load estimate of a job, weighted
// variant selection, load-balanced job selection and the capacity check
// with its single-job exception, plus Allot's anti-starvation rule. It is
// pure: no clock, no I/O; randomness comes from a seed. Checking a job's
// inputs is I/O, so the control plane or the simulator does it through an
// InputChecker before it hands the job to the engine.
package admit

import (
	"fmt"
	"math"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// The seed's defaults, under the names of its environment variables.
const (
	// DefaultInstanceConcurrency is the requests one instance takes at
	// once when neither the endpoint nor the variant says.
	DefaultInstanceConcurrency = 2
	// DefaultHTTPEndpointConcurrency is an HTTP endpoint's capacity.
	DefaultHTTPEndpointConcurrency = 10
	// DefaultTileWorkersPerInstance multiplies a job's region count into
	// its load.
	DefaultTileWorkersPerInstance = 4
	// DefaultCapacityTargetPercentage uses the full capacity.
	DefaultCapacityTargetPercentage = 1.0
	// MaxCapacityTargetPercentage is the highest target the seed allows.
	MaxCapacityTargetPercentage = model.MaxCapacityTargetPercentage
	// DefaultRegionCount is the region count of a job whose size is
	// unknown ("typical for large images" in the seed's code).
	DefaultRegionCount = 20
	// DefaultStarvationWait is how long a job may be throttled while
	// others are admitted before it reserves its variant's capacity.
	DefaultStarvationWait = 5 * time.Minute
)

// Bounds of the settings and endpoint definitions. Capacities and loads are
// summed over every job of a variant and scaled by the target percentage;
// these bounds, far beyond any endpoint, keep that arithmetic exact.
const (
	// MaxConcurrency bounds every concurrency, instance count, tile
	// worker count and admissions per cycle.
	MaxConcurrency = 1_000_000
	// MaxWeight bounds a variant's weight.
	MaxWeight = 1_000_000
	// MaxVariants bounds the variants of one endpoint.
	MaxVariants = 100
	// MaxEndpoints bounds the endpoints defined at once: the definitions
	// changed at run time are stored as one value, rewritten at each
	// change.
	MaxEndpoints = 1_000
	// MaxLoad bounds a job's load, regions and image size.
	MaxLoad = model.MaxLoad
)

// Settings are the throttling settings. The zero value disables throttling;
// start from Defaults.
type Settings struct {
	// Enabled turns the capacity check on (SCHEDULER_THROTTLING_ENABLED).
	// Off, every endpoint job is admitted at the next cycle; loads are
	// still tracked for the metrics.
	Enabled bool `json:"throttlingEnabled"`
	// CapacityTargetPercentage scales each variant's capacity into its
	// target (CAPACITY_TARGET_PERCENTAGE, 0.0-1.5).
	CapacityTargetPercentage float64 `json:"capacityTargetPercentage"`
	// DefaultInstanceConcurrency (DEFAULT_INSTANCE_CONCURRENCY); 0 means 2.
	DefaultInstanceConcurrency int `json:"defaultInstanceConcurrency"`
	// DefaultHTTPEndpointConcurrency (DEFAULT_HTTP_ENDPOINT_CONCURRENCY);
	// 0 means 10.
	DefaultHTTPEndpointConcurrency int `json:"defaultHttpEndpointConcurrency"`
	// TileWorkersPerInstance (TILE_WORKERS_PER_INSTANCE); 0 means 4.
	TileWorkersPerInstance int `json:"tileWorkersPerInstance"`
	// StarvationWait is how long the oldest waiting job of a variant may
	// be throttled before it reserves the variant: no other job is
	// admitted there until it is. 0 disables the rule.
	StarvationWait time.Duration `json:"starvationWait"`
	// AdmissionsPerCycle caps the jobs admitted in one cycle; 0 is no cap.
	// The seed's scheduler starts one image per call (a cap of 1), which
	// is when the least-loaded-endpoint order decides who goes first.
	AdmissionsPerCycle int `json:"admissionsPerCycle,omitempty"`
}

// Defaults returns the seed's settings: throttling on, target 1.0, instance
// concurrency 2, HTTP concurrency 10, 4 tile workers, and Allot's starvation
// wait of 5 minutes.
func Defaults() Settings {
	return Settings{Enabled: true, CapacityTargetPercentage: DefaultCapacityTargetPercentage,
		DefaultInstanceConcurrency: DefaultInstanceConcurrency, DefaultHTTPEndpointConcurrency: DefaultHTTPEndpointConcurrency,
		TileWorkersPerInstance: DefaultTileWorkersPerInstance, StarvationWait: DefaultStarvationWait}
}

// resolved fills the zero "use the default" values.
func (s Settings) resolved() Settings {
	if s.DefaultInstanceConcurrency == 0 {
		s.DefaultInstanceConcurrency = DefaultInstanceConcurrency
	}
	if s.DefaultHTTPEndpointConcurrency == 0 {
		s.DefaultHTTPEndpointConcurrency = DefaultHTTPEndpointConcurrency
	}
	if s.TileWorkersPerInstance == 0 {
		s.TileWorkersPerInstance = DefaultTileWorkersPerInstance
	}
	return s
}

// Config is the admission configuration: settings and the endpoints.
type Config struct {
	Settings
	Endpoints []model.Endpoint
}

// Problems lists every invalid setting of c, so that a user fixes them in
// one pass. Each names its path in the configuration file
// ("throttling.capacityTargetPercentage", "endpoints[1].variants[0].weight").
func (c Config) Problems() model.FieldErrors {
	out := c.Settings.problems()
	if len(c.Endpoints) > MaxEndpoints {
		out = append(out, model.Invalid("endpoints", "has %d entries, more than %d", len(c.Endpoints), MaxEndpoints))
		return out
	}
	seen := map[string]int{}
	for i, ep := range c.Endpoints {
		path := fmt.Sprintf("endpoints[%d]", i)
		if prev, dup := seen[ep.Name]; dup && ep.Name != "" {
			out = append(out, model.Invalid(path+".name", "endpoint %q is already defined at endpoints[%d]", ep.Name, prev))
		}
		seen[ep.Name] = i
		out = append(out, endpointProblems(path, ep)...)
	}
	return out
}

// Validate returns the first problem of c, or nil.
func (c Config) Validate() error {
	if ps := c.Problems(); len(ps) > 0 {
		return ps[0]
	}
	return nil
}

func (s Settings) problems() model.FieldErrors {
	var out model.FieldErrors
	add := func(f, format string, args ...any) {
		out = append(out, model.Invalid("throttling."+f, format, args...))
	}
	if p := s.CapacityTargetPercentage; math.IsNaN(p) || p < 0 || p > MaxCapacityTargetPercentage {
		add("capacityTargetPercentage", "must be between 0.0 and %.1f (got %g)", MaxCapacityTargetPercentage, p)
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"defaultInstanceConcurrency", s.DefaultInstanceConcurrency},
		{"defaultHttpEndpointConcurrency", s.DefaultHTTPEndpointConcurrency},
		{"tileWorkersPerInstance", s.TileWorkersPerInstance},
		{"admissionsPerCycle", s.AdmissionsPerCycle},
	} {
		if msg := outOfRange(f.v, MaxConcurrency); msg != "" {
			add(f.name, "%s", msg)
		}
	}
	if s.StarvationWait < 0 {
		add("starvationWait", "must not be negative (got %s)", s.StarvationWait)
	}
	return out
}

// outOfRange says why n is not between 0 and max, or "".
func outOfRange(n, max int) string {
	switch {
	case n < 0:
		return fmt.Sprintf("must not be negative (got %d)", n)
	case n > max:
		return fmt.Sprintf("must be at most %d (got %d)", max, n)
	}
	return ""
}

// MaxNameLen bounds names; see model.ValidName.
const MaxNameLen = model.MaxNameLen

func validName(s string) bool { return model.ValidName(s) }

func endpointProblems(path string, ep model.Endpoint) model.FieldErrors {
	var out model.FieldErrors
	add := func(f, format string, args ...any) {
		out = append(out, model.Invalid(path+"."+f, format, args...))
	}
	if !validName(ep.Name) {
		add("name", "%.40q is not a valid name: %s", ep.Name, model.NameRule)
	}
	switch ep.Type {
	case model.EndpointServerless, model.EndpointInstanceBacked, model.EndpointHTTP:
	case "":
		add("type", "required (serverless, instance-backed or http)")
	default:
		add("type", "unknown endpoint type %q (known: serverless, instance-backed, http)", ep.Type)
	}
	if len(ep.Variants) == 0 {
		out = append(out, capacityProblems(path, ep.Type, ep.MaxConcurrency, ep.Instances, ep.InstanceConcurrency)...)
		return out
	}
	if ep.MaxConcurrency != 0 {
		add("maxConcurrency", "set it per variant when the endpoint lists variants")
	}
	if ep.Instances != 0 {
		add("instances", "set it per variant when the endpoint lists variants")
	}
	if msg := outOfRange(ep.InstanceConcurrency, MaxConcurrency); msg != "" {
		add("instanceConcurrency", "%s", msg)
	}
	if len(ep.Variants) > MaxVariants {
		add("variants", "has %d entries, more than %d", len(ep.Variants), MaxVariants)
		return out
	}
	seen := map[string]int{}
	total := 0.0
	for i, v := range ep.Variants {
		vp := fmt.Sprintf("%s.variants[%d]", path, i)
		if !validName(v.Name) {
			out = append(out, model.Invalid(vp+".name", "%.40q is not a valid name: %s", v.Name, model.NameRule))
		} else if prev, dup := seen[v.Name]; dup {
			out = append(out, model.Invalid(vp+".name", "variant %q is already defined at variants[%d]", v.Name, prev))
		}
		seen[v.Name] = i
		if math.IsNaN(v.Weight) || math.IsInf(v.Weight, 0) || v.Weight < 0 || v.Weight > MaxWeight {
			out = append(out, model.Invalid(vp+".weight", "must be a number from 0 to %d (got %g)", MaxWeight, v.Weight))
		} else {
			total += v.Weight
		}
		out = append(out, capacityProblems(vp, ep.Type, v.MaxConcurrency, v.Instances, v.InstanceConcurrency)...)
	}
	if len(ep.Variants) > 1 && total == 0 {
		add("variants", "the weights of the variants are all zero: no variant could be selected")
	}
	return out
}

func capacityProblems(path string, t model.EndpointType, maxConc, instances, instConc int) model.FieldErrors {
	var out model.FieldErrors
	add := func(f, format string, args ...any) {
		out = append(out, model.Invalid(path+"."+f, format, args...))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"maxConcurrency", maxConc}, {"instances", instances}, {"instanceConcurrency", instConc}} {
		if msg := outOfRange(f.v, MaxConcurrency); msg != "" {
			add(f.name, "%s", msg)
		}
	}
	switch t {
	case model.EndpointServerless:
		if maxConc == 0 {
			add("maxConcurrency", "required for a serverless endpoint (its capacity, at least 1)")
		}
		if instances != 0 {
			add("instances", "only an instance-backed endpoint has instances")
		}
	case model.EndpointInstanceBacked:
		if maxConc != 0 {
			add("maxConcurrency", "an instance-backed endpoint's capacity is instances × instanceConcurrency")
		}
	case model.EndpointHTTP:
		if instances != 0 {
			add("instances", "only an instance-backed endpoint has instances")
		}
	}
	return out
}
