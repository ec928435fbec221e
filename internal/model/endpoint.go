package model

// EndpointType says how an endpoint's capacity is known (seed 000).
type EndpointType string

// Endpoint types. The capacity of each, in concurrent requests, is
// computed by internal/engine/admit.
const (
	// EndpointServerless scales per request up to MaxConcurrency.
	EndpointServerless EndpointType = "serverless"
	// EndpointInstanceBacked runs Instances instances, each taking
	// InstanceConcurrency requests at once.
	EndpointInstanceBacked EndpointType = "instance-backed"
	// EndpointHTTP is any other service; its capacity is a configured
	// default unless MaxConcurrency says otherwise.
	EndpointHTTP EndpointType = "http"
)

// Endpoint is an external service that jobs call while they run (a model
// server, any rate-limited API). Jobs are admitted against its capacity, per
// production variant. An endpoint without Variants has one implicit variant
// named "" that takes the endpoint's own capacity fields.
type Endpoint struct {
	Name string       `json:"name"`
	Type EndpointType `json:"type"`
	// MaxConcurrency is a serverless endpoint's capacity, or an HTTP
	// endpoint's when set (0: the default HTTP concurrency).
	MaxConcurrency int `json:"maxConcurrency,omitempty"`
	// Instances and InstanceConcurrency give an instance-backed
	// endpoint's capacity; InstanceConcurrency 0 takes the default, and is
	// inherited by variants that set none (the osml:instance-concurrency
	// tag of the seed).
	Instances           int       `json:"instances,omitempty"`
	InstanceConcurrency int       `json:"instanceConcurrency,omitempty"`
	Variants            []Variant `json:"variants,omitempty"`
}

// Variant is a production variant of an endpoint: a version of the model
// with its own capacity, chosen for a job by weight.
type Variant struct {
	Name string `json:"name"`
	// Weight is the variant's CurrentWeight: the share of jobs routed to it
	// when a job names no variant.
	Weight              float64 `json:"weight"`
	MaxConcurrency      int     `json:"maxConcurrency,omitempty"`
	Instances           int     `json:"instances,omitempty"`
	InstanceConcurrency int     `json:"instanceConcurrency,omitempty"`
}

// ImageSize is the size of a job's image in pixels; with the job's region
// and tile geometry it gives the job's load on its endpoint.
type ImageSize struct {
	Width  int `yaml:"width" json:"width"`
	Height int `yaml:"height" json:"height"`
}

// Tiling defaults of the seed's system (OSML ModelRunner): REGION_SIZE
// (10240, 10240), and an image request's tile size (1024, 1024) and tile
// overlap (50, 50). Admission estimates loads with them and the job spec
// checks a job's geometry against them, so both read them here.
const (
	DefaultRegionSize  = 10240
	DefaultTileSize    = 1024
	DefaultTileOverlap = 50
)

// Bounds that admission enforces and the documents check first, so that a
// problem names its field and line.
const (
	// MaxCapacityTargetPercentage is the highest capacity target the seed
	// allows.
	MaxCapacityTargetPercentage = 1.5
	// MaxLoad bounds a job's load, regions and image size.
	MaxLoad = 1_000_000_000
)
