package model

// The job, endpoint and throttling documents as users write them (YAML or
// JSON) and the API shows them back. They live here, with the quantities
// they use, so that the API's bodies depend on model only; package spec
// names them (spec.Job, spec.Task, spec.Resources, spec.Endpoint,
// spec.Throttling) and holds their validation.

// JobSpec is a job as a user writes it (spec.Job).
type JobSpec struct {
	ID        string `yaml:"id,omitempty" json:"id,omitempty"`
	Queue     string `yaml:"queue,omitempty" json:"queue,omitempty"`
	Requestor string `yaml:"requestor,omitempty" json:"requestor,omitempty"`
	Share     string `yaml:"share,omitempty" json:"share,omitempty"`
	Priority  int    `yaml:"priority,omitempty" json:"priority,omitempty"`
	Urgent    bool   `yaml:"urgent,omitempty" json:"urgent,omitempty"`
	SLAGroup  string `yaml:"slaGroup,omitempty" json:"slaGroup,omitempty"`
	Endpoint  string `yaml:"endpoint,omitempty" json:"endpoint,omitempty"`
	Variant   string `yaml:"variant,omitempty" json:"variant,omitempty"`
	// Load, MaxSlots, Regions, RegionSize and TileSize read 0 as "not
	// set"; a document that writes 0 is refused (the zero tags), so a
	// written value always counts.
	Load     int               `yaml:"load,omitempty" json:"load,omitempty" zero:"must be at least 1|leave load out to estimate it from regions or the image"`
	Selector map[string]string `yaml:"selector,omitempty" json:"selector,omitempty"`
	// Labels are the job's own key/value metadata (team, pipeline, ...),
	// shown by the API; they do not affect scheduling.
	Labels   map[string]string `yaml:"labels,omitempty" json:"labels,omitempty"`
	MaxSlots int               `yaml:"maxSlots,omitempty" json:"maxSlots,omitempty" zero:"must be at least 1|leave maxSlots out for no limit"`
	Tasks    []TaskSpec        `yaml:"tasks" json:"tasks"`
	// DependsOn lists other jobs this job waits for, by ID and type
	// (after, afterok, afternotok, afterany; afterok when left out), as
	// Slurm's --dependency: no task starts until every one is met, and
	// one that can never be met fails the job (docs/jobs.md).
	DependsOn []JobDependency `yaml:"dependsOn,omitempty" json:"dependsOn,omitempty"`

	// Regions, or Image with RegionSize, TileSize and TileOverlap, estimate
	// the job's load on its endpoint when Load is not given
	// (docs/endpoints.md).
	Regions     int        `yaml:"regions,omitempty" json:"regions,omitempty" zero:"must be at least 1|leave regions out for the estimate from the image or the default of 20 regions, or set load"`
	Image       *ImageSize `yaml:"image,omitempty" json:"image,omitempty"`
	RegionSize  int        `yaml:"regionSize,omitempty" json:"regionSize,omitempty" zero:"must be at least 1|leave it out for the default, 10240"`
	TileSize    int        `yaml:"tileSize,omitempty" json:"tileSize,omitempty" zero:"must be at least 1|leave it out for the default, 1024"`
	TileOverlap *int       `yaml:"tileOverlap,omitempty" json:"tileOverlap,omitempty"`
	// Inputs are URLs the job reads; they are checked for access at
	// submission, and a job with an inaccessible input is dead-lettered.
	Inputs []string `yaml:"inputs,omitempty" json:"inputs,omitempty"`

	// User is the Unix user the job's tasks run as. A worker runs them as
	// that user only if its --allow-user list allows it, and fails the
	// attempt otherwise (docs/agent.md); empty runs them as the worker's
	// default user.
	User string `yaml:"user,omitempty" json:"user,omitempty"`

	// Gang asks that all the job's tasks start together, in one cycle, or
	// not at all; MinAvailable (which implies Gang) asks that at least that
	// many start together, the rest following as capacity frees. A stage
	// of a DAG job asks the same on its task entry instead
	// (docs/jobs.md#gangs).
	Gang         bool `yaml:"gang,omitempty" json:"gang,omitempty"`
	MinAvailable int  `yaml:"minAvailable,omitempty" json:"minAvailable,omitempty" zero:"must be at least 1|leave minAvailable out, or set gang: true, for all the tasks at once"`
}

// TaskSpec is a task, or with Count a group of identical tasks, as a user
// writes it (spec.Task).
type TaskSpec struct {
	Name string `yaml:"name" json:"name"`
	// Count expands the entry into Count tasks named name-0, name-1, ...
	// (zero-padded); a `needs` that names the entry means all of them.
	// A written count of 0 is refused (its zero tag): 0 is "not set",
	// one task, to Go code that builds a TaskSpec.
	Count       int          `yaml:"count,omitempty" json:"count,omitempty" zero:"must be at least 1|leave count out for one task, or remove the entry"`
	Resources   ResourceSpec `yaml:"resources,omitempty" json:"resources,omitempty"`
	Needs       []string     `yaml:"needs,omitempty" json:"needs,omitempty"`
	Duration    Duration     `yaml:"duration,omitempty" json:"duration,omitempty"`
	Category    string       `yaml:"category,omitempty" json:"category,omitempty"`
	MaxAttempts int          `yaml:"maxAttempts,omitempty" json:"maxAttempts,omitempty" zero:"must be at least 1|leave it out for one attempt"`
	Model       string       `yaml:"model,omitempty" json:"model,omitempty"`
	Dataset     string       `yaml:"dataset,omitempty" json:"dataset,omitempty"`
	// StickTo names a task this one needs whose checkpoint or adapter it
	// loads: with stage stickiness on, the task runs where that one ran.
	// When empty, a ${tasks.P.result.F} reference whose F names a
	// checkpoint or adapter sets it (docs/placement.md).
	StickTo string `yaml:"stickTo,omitempty" json:"stickTo,omitempty"`
	// Run is a shell script, run with `sh -c`. A server job sets Run or
	// Command; a scenario task sets neither.
	Run string `yaml:"run,omitempty" json:"run,omitempty"`
	// Command is a program and its arguments, run without a shell.
	Command []string `yaml:"command,omitempty" json:"command,omitempty"`
	// Env adds environment variables. Run, Command and Env may reference a
	// result of a task this one needs: ${tasks.NAME.result.FIELD}.
	Env     map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	WorkDir string            `yaml:"workdir,omitempty" json:"workdir,omitempty"`
	// Timeout stops the task when it runs longer; 0 means no limit.
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Running (scenarios only) says how many of the Count tasks are already
	// running at time zero of `allot plan`.
	Running int `yaml:"running,omitempty" json:"running,omitempty"`
	// RunningFor (scenarios only) says how long those tasks have run at
	// time zero; policies that pick victims by running time read it.
	RunningFor Duration `yaml:"runningFor,omitempty" json:"runningFor,omitempty"`
	// Fails (scenarios only) makes the simulator fail each task this many
	// times before it succeeds.
	Fails int `yaml:"fails,omitempty" json:"fails,omitempty"`

	// Gang asks that the Count tasks of this entry (a stage of the job)
	// start together, in one cycle, or not at all; MinAvailable (which
	// implies Gang) asks that at least that many start together, the rest
	// following as capacity frees (docs/jobs.md#gangs).
	Gang         bool `yaml:"gang,omitempty" json:"gang,omitempty"`
	MinAvailable int  `yaml:"minAvailable,omitempty" json:"minAvailable,omitempty" zero:"must be at least 1|leave minAvailable out, or set gang: true, for all the entry's tasks at once"`
}

// ResourceSpec is what a task asks for, or a worker offers, in the
// quantities users write (spec.Resources).
type ResourceSpec struct {
	CPU       CPU    `yaml:"cpu,omitempty" json:"cpu,omitempty"`
	Memory    Memory `yaml:"memory,omitempty" json:"memory,omitempty"`
	GPUs      int    `yaml:"gpus,omitempty" json:"gpus,omitempty"`
	GPUMemory Memory `yaml:"gpuMemory,omitempty" json:"gpuMemory,omitempty"`
}

// Model converts r to the engine's resources.
func (r ResourceSpec) Model() Resources {
	return Resources{MilliCPU: int64(r.CPU), MemoryMB: int64(r.Memory), GPUs: int64(r.GPUs), GPUMemoryMB: int64(r.GPUMemory)}
}

// ThrottlingSpec is the `throttling:` block (spec.Throttling): the settings
// of seed 000 under its names, each of which an environment variable of the
// seed's name can override (spec.Scheduling.ApplyEnv). Omitted fields take
// the seed's defaults.
type ThrottlingSpec struct {
	// ThrottlingEnabled (SCHEDULER_THROTTLING_ENABLED, default true).
	ThrottlingEnabled *bool `yaml:"throttlingEnabled,omitempty" json:"throttlingEnabled,omitempty"`
	// CapacityTargetPercentage (CAPACITY_TARGET_PERCENTAGE, default 1.0,
	// 0.0-1.5).
	CapacityTargetPercentage *float64 `yaml:"capacityTargetPercentage,omitempty" json:"capacityTargetPercentage,omitempty"`
	// DefaultInstanceConcurrency (DEFAULT_INSTANCE_CONCURRENCY, default 2).
	// The three integer defaults read 0 as "not set"; a document that
	// writes 0 is refused (the zero tags).
	DefaultInstanceConcurrency int `yaml:"defaultInstanceConcurrency,omitempty" json:"defaultInstanceConcurrency,omitempty" zero:"must be at least 1|leave it out for the default, 2"`
	// DefaultHTTPEndpointConcurrency (DEFAULT_HTTP_ENDPOINT_CONCURRENCY,
	// default 10).
	DefaultHTTPEndpointConcurrency int `yaml:"defaultHttpEndpointConcurrency,omitempty" json:"defaultHttpEndpointConcurrency,omitempty" zero:"must be at least 1|leave it out for the default, 10"`
	// TileWorkersPerInstance (TILE_WORKERS_PER_INSTANCE, default 4).
	TileWorkersPerInstance int `yaml:"tileWorkersPerInstance,omitempty" json:"tileWorkersPerInstance,omitempty" zero:"must be at least 1|leave it out for the default, 4"`
	// StarvationWait (SCHEDULER_STARVATION_WAIT, default 5m; 0 disables)
	// is Allot's anti-starvation rule.
	StarvationWait *Duration `yaml:"starvationWait,omitempty" json:"starvationWait,omitempty"`
	// AdmissionsPerCycle caps the jobs admitted per cycle (0: no cap).
	AdmissionsPerCycle int `yaml:"admissionsPerCycle,omitempty" json:"admissionsPerCycle,omitempty"`
}

// EndpointSpec is an entry of the `endpoints:` block (spec.Endpoint).
type EndpointSpec struct {
	Name string `yaml:"name" json:"name"`
	// Type is serverless, instance-backed or http.
	Type string `yaml:"type" json:"type"`
	// MaxConcurrency is a serverless endpoint's capacity, or overrides an
	// HTTP endpoint's default. 0 is "not set"; a document that writes 0 is
	// refused (its zero tag): no endpoint has a capacity of 0 requests.
	MaxConcurrency int `yaml:"maxConcurrency,omitempty" json:"maxConcurrency,omitempty" zero:"must be at least 1|the endpoint's capacity in concurrent requests (SageMaker serverless: 1 to 200); on an http endpoint, leave it out for throttling.defaultHttpEndpointConcurrency"`
	// Instances × InstanceConcurrency is an instance-backed endpoint's
	// capacity; InstanceConcurrency is the osml:instance-concurrency tag of
	// the seed, default throttling.defaultInstanceConcurrency.
	Instances           int           `yaml:"instances,omitempty" json:"instances,omitempty"`
	InstanceConcurrency int           `yaml:"instanceConcurrency,omitempty" json:"instanceConcurrency,omitempty" zero:"must be at least 1|leave it out for throttling.defaultInstanceConcurrency"`
	Variants            []VariantSpec `yaml:"variants,omitempty" json:"variants,omitempty"`
}

// VariantSpec is a production variant of an endpoint (spec.Variant).
type VariantSpec struct {
	Name string `yaml:"name" json:"name"`
	// Weight is the variant's CurrentWeight; default 1.
	Weight              *float64 `yaml:"weight,omitempty" json:"weight,omitempty"`
	MaxConcurrency      int      `yaml:"maxConcurrency,omitempty" json:"maxConcurrency,omitempty" zero:"must be at least 1|the endpoint's capacity in concurrent requests (SageMaker serverless: 1 to 200); on an http endpoint, leave it out for throttling.defaultHttpEndpointConcurrency"`
	Instances           int      `yaml:"instances,omitempty" json:"instances,omitempty"`
	InstanceConcurrency int      `yaml:"instanceConcurrency,omitempty" json:"instanceConcurrency,omitempty" zero:"must be at least 1|leave it out for the endpoint's"`
}

// Model converts e to the engine's endpoint.
func (e EndpointSpec) Model() Endpoint {
	out := Endpoint{Name: e.Name, Type: EndpointType(e.Type), MaxConcurrency: e.MaxConcurrency,
		Instances: e.Instances, InstanceConcurrency: e.InstanceConcurrency}
	for _, v := range e.Variants {
		w := 1.0
		if v.Weight != nil {
			w = *v.Weight
		}
		out.Variants = append(out.Variants, Variant{Name: v.Name, Weight: w, MaxConcurrency: v.MaxConcurrency,
			Instances: v.Instances, InstanceConcurrency: v.InstanceConcurrency})
	}
	return out
}
