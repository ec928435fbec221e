package spec

import (
	"fmt"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

// Scheduling is the part of the configuration that the server's config file
// and a scenario file share: queues with their policies, and placement.
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
	Pool   map[string]string `yaml:"pool,omitempty" json:"pool,omitempty"`
	Policy policy.Config     `yaml:"policy,omitempty" json:"policy,omitempty"`
}

// DefaultQueue is the queue a configuration without queues gets.
const DefaultQueue = "default"

// EngineConfig checks s and turns it into the engine's configuration. A
// configuration without queues gets one fifo queue named "default".
func (s Scheduling) EngineConfig() (engine.Config, error) {
	var c errs
	cfg := engine.Config{Seed: s.Seed}
	if pc, err := s.Placement.Config(); err != nil {
		c.list = append(c.list, err.(Errors)...)
	} else {
		cfg.Placement = pc
	}
	queues := s.Queues
	if len(queues) == 0 {
		queues = []Queue{{Name: DefaultQueue}}
	}
	seen := map[string]bool{}
	for i, q := range queues {
		path := fmt.Sprintf("queues[%d]", i)
		switch {
		case q.Name == "":
			c.add(path+".name", "required")
		case !validName(q.Name):
			c.add(path+".name", "%.40q is not a valid name: %s", q.Name, model.NameRule)
		case seen[q.Name]:
			c.add(path+".name", "queue %q is defined twice", q.Name)
		}
		seen[q.Name] = true
		if _, err := policy.New(q.Policy); err != nil {
			c.addErr(path+".policy", err)
		}
		cfg.Queues = append(cfg.Queues, engine.QueueConfig{Name: q.Name, Priority: q.Priority,
			Pool: model.Selector(q.Pool), Policy: q.Policy})
	}
	cfg.Admission = s.admission(&c)
	if err := c.err(); err != nil {
		return engine.Config{}, err
	}
	return cfg, nil
}

// MaxNameLen bounds names; see model.ValidName.
const MaxNameLen = model.MaxNameLen

func validName(s string) bool { return model.ValidName(s) }
