// Package config turns the documents package spec reads (the server's
// configuration file, a scenario's scheduling block) into the engine's
// configuration: queues and their policies, placement and the elastic
// coordinator, admission against endpoints. spec parses and checks the
// documents without the engine; the checks that need the engine's own
// rules (a policy's settings, placement's combinations, admission's
// bounds) run here, and their errors carry the same field paths.
package config

import (
	"fmt"

	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

// Engine checks s and turns it into the engine's configuration. A
// configuration without queues gets one fifo queue named "default"
// (spec.DefaultQueue). Every problem is reported, each with its field path.
func Engine(s spec.Scheduling) (engine.Config, error) {
	var c errs
	cfg := engine.Config{Seed: s.Seed}
	if pc, err := Placement(s.Placement); err != nil {
		c.list = append(c.list, err.(spec.Errors)...)
	} else {
		cfg.Placement = pc
	}
	queues := s.Queues
	if len(queues) == 0 {
		queues = []spec.Queue{{Name: spec.DefaultQueue}}
	}
	seen := map[string]bool{}
	for i, q := range queues {
		path := fmt.Sprintf("queues[%d]", i)
		switch {
		case q.Name == "":
			c.add(path+".name", "required")
		case !model.ValidName(q.Name):
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
	cfg.Admission = admission(s, &c)
	if err := c.err(); err != nil {
		return engine.Config{}, err
	}
	return cfg, nil
}

// errs collects field errors while a configuration is checked.
type errs struct {
	list spec.Errors
}

func (c *errs) add(path, format string, args ...any) {
	c.list = append(c.list, &spec.FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// addErr records the field errors of err under prefix (see
// model.FieldErrorsOf).
func (c *errs) addErr(prefix string, err error) {
	c.list = append(c.list, model.FieldErrorsOf(prefix, err)...)
}

func (c *errs) err() error { return c.list.Err() }
