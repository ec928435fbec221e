package api

import "time"

// Placement (seed 002) as the API shows it: cache hints workers report,
// manual elastic toggles, the fleet's cost and the task/worker density
// series. docs/placement.md ("In the server") explains them.

// Cache hint kinds: what a worker holds that a task may name.
const (
	CacheModel   = "model"
	CacheDataset = "dataset"
)

// CacheHint says a worker holds a model or dataset, so that a task naming
// it prefers that worker (context reuse). A hint is fresh for the server's
// placement.cacheTTL after At.
type CacheHint struct {
	Kind string `json:"kind"` // model or dataset
	Name string `json:"name"`
	// At is when the worker last loaded or used it; omitted, the time the
	// server receives the report (the worker holds it now).
	At time.Time `json:"at,omitzero"`
	// Expires is when the hint stops counting; set in answers only.
	Expires time.Time `json:"expires,omitzero"`
}

// Heartbeat is the optional body of POST /v1/workers/{name}/heartbeat.
type Heartbeat struct {
	// Cache, when set, lists cache hints the worker holds. They are merged
	// with what the server knows (the later time wins); hints the worker
	// leaves out expire with their TTL.
	Cache []CacheHint `json:"cache,omitempty"`
}

// ElasticToggle is the body of POST /v1/workers/{name}/elastic: switch a
// worker off (false) or on (true) by hand, held to the elastic
// coordinator's toggle cooldown.
type ElasticToggle struct {
	Enabled *bool `json:"enabled"`
}

// Who disabled a worker (Worker.DisabledBy).
const (
	DisabledByElastic = "elastic"
	DisabledByManual  = "manual"
)

// FleetCost is what the registered, not lost, workers cost per hour. A
// disabled worker is listed but left out of the enabled figures (seed
// 002: disabled workers are excluded from aggregated cost metrics).
type FleetCost struct {
	EnabledWorkers      int     `json:"enabledWorkers"`
	EnabledSlots        int     `json:"enabledSlots"`
	EnabledCostPerHour  float64 `json:"enabledCostPerHour"`
	DisabledWorkers     int     `json:"disabledWorkers"`
	DisabledCostPerHour float64 `json:"disabledCostPerHour"`
	// DisabledByElastic and DisabledByManual split DisabledWorkers by who
	// disabled them.
	DisabledByElastic int `json:"disabledByElastic"`
	DisabledByManual  int `json:"disabledByManual"`
}

// Density is the answer of GET /v1/density: the task/worker density series
// of seed 002, the oldest bucket first, the current (still filling) one
// last.
type Density struct {
	BucketSeconds float64         `json:"bucketSeconds"`
	Buckets       []DensityBucket `json:"buckets"`
}

// DensityBucket is one bucket [Start, Start + BucketSeconds).
type DensityBucket struct {
	Start time.Time `json:"start"`
	// Submitted counts the tasks of the jobs submitted in the bucket;
	// Started the task starts in it (restarts included).
	Submitted int `json:"submitted"`
	Started   int `json:"started"`
	// ActiveWorkers counts workers running at least one task at the end
	// of the bucket (so far, for the current one), PeakActiveWorkers the
	// most seen at once in it.
	ActiveWorkers     int `json:"activeWorkers"`
	PeakActiveWorkers int `json:"peakActiveWorkers"`
	// EnabledWorkers counts registered workers that are not disabled or
	// lost at the end of the bucket.
	EnabledWorkers int `json:"enabledWorkers"`
}
