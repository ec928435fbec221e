package spec

import "github.com/allot-sched/allot/internal/model"

// Scheduling is the part of the configuration that the server's config file
// and a scenario file share: queues with their policies, and placement.
// config.Engine checks it and turns it into the engine's configuration.
type Scheduling struct {
	// Seed feeds every random choice of the engine; the same seed and input
	// give the same decisions.
	Seed      uint64    `yaml:"seed,omitempty" json:"seed,omitempty"`
	Queues    []Queue   `yaml:"queues" json:"queues"`
	Placement Placement `yaml:"placement,omitempty" json:"placement,omitempty"`
	// Throttling and Endpoints configure admission against endpoint
	// capacity (seed 000; docs/endpoints.md).
	Throttling Throttling `yaml:"throttling,omitempty" json:"throttling,omitempty"`
	Endpoints  []Endpoint `yaml:"endpoints,omitempty" json:"endpoints,omitempty"`
}

// Queue is one queue.
type Queue struct {
	Name string `yaml:"name" json:"name"`
	// Priority orders queues that share workers: higher goes first.
	Priority int `yaml:"priority,omitempty" json:"priority,omitempty"`
	// Pool is a label selector choosing the workers this queue uses.
	Pool map[string]string `yaml:"pool,omitempty" json:"pool,omitempty"`
	// Policy is the queue's `policy:` block; its blocks are those of the
	// policies the engine registers (model.RegisterPolicyBlock).
	Policy model.PolicyConfig `yaml:"policy,omitempty" json:"policy,omitempty"`
}

// DefaultQueue is the queue a configuration without queues gets.
const DefaultQueue = "default"

// MaxNameLen bounds names; see model.ValidName.
const MaxNameLen = model.MaxNameLen

func validName(s string) bool { return model.ValidName(s) }
