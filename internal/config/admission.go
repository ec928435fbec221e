package config

import (
	"time"

	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/spec"
)

// ThrottlingSettings resolves the `throttling:` block t against the seed's
// defaults: the settings admission runs with.
func ThrottlingSettings(t spec.Throttling) admit.Settings {
	s := admit.Defaults()
	if t.ThrottlingEnabled != nil {
		s.Enabled = *t.ThrottlingEnabled
	}
	if t.CapacityTargetPercentage != nil {
		s.CapacityTargetPercentage = *t.CapacityTargetPercentage
	}
	if t.DefaultInstanceConcurrency != 0 {
		s.DefaultInstanceConcurrency = t.DefaultInstanceConcurrency
	}
	if t.DefaultHTTPEndpointConcurrency != 0 {
		s.DefaultHTTPEndpointConcurrency = t.DefaultHTTPEndpointConcurrency
	}
	if t.TileWorkersPerInstance != 0 {
		s.TileWorkersPerInstance = t.TileWorkersPerInstance
	}
	if t.StarvationWait != nil {
		s.StarvationWait = time.Duration(*t.StarvationWait)
	}
	s.AdmissionsPerCycle = t.AdmissionsPerCycle
	return s
}

// admission checks the throttling and endpoints blocks of s into c and
// returns the engine's admission configuration.
func admission(s spec.Scheduling, c *errs) admit.Config {
	cfg := admit.Config{Settings: ThrottlingSettings(s.Throttling)}
	for _, e := range s.Endpoints {
		cfg.Endpoints = append(cfg.Endpoints, e.Model())
	}
	c.list = append(c.list, cfg.Problems()...)
	return cfg
}
