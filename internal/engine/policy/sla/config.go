package sla

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/engine/policy/perjob"
	"github.com/allot-sched/allot/internal/model"
)

// Config configures the sla policy (seed 001, SLA mode): each SLA group
// is guaranteed a number or a fraction of the pool's slots, provided enough
// slots are available. Every job must name one of the groups.
type Config struct {
	// Groups lists the SLA groups in order. Values are either all slot
	// counts (whole numbers) or all fractions 0 < x < 1 of the slots that
	// take work.
	Groups []Group `yaml:"groups" json:"groups"`
	// Preemption lets a group that gets work back preempt tasks of groups
	// running above their SLA, to restore its own.
	Preemption bool `yaml:"preemption,omitempty" json:"preemption,omitempty"`
	// UsageWindow is how far back usage counts. Default 10m.
	UsageWindow time.Duration `yaml:"usageWindow,omitempty" json:"usageWindow,omitempty" zero:"must be above 0|leave it out for the default, 10m"`
}

// Group is one SLA group and its target.
type Group struct {
	Name string `yaml:"name" json:"name"`
	// Value is a slot count (10) or a fraction of the slots (0.25).
	Value float64 `yaml:"value" json:"value"`
}

// WithDefaults returns c with every unset field at its default. It does not
// validate.
func (c *Config) WithDefaults() Config {
	var out Config
	if c != nil {
		out = *c
		out.Groups = append([]Group(nil), c.Groups...)
	}
	if out.UsageWindow == 0 {
		out.UsageWindow = perjob.DefaultUsageWindow
	}
	return out
}

// Fractional reports whether the group values are fractions of the slots
// rather than slot counts. Only meaningful on a valid config.
func (c *Config) Fractional() bool {
	return c != nil && len(c.Groups) > 0 && c.Groups[0].Value < 1
}

// Validate checks c and returns the first problem as a *model.FieldError
// naming the offending field from the block's key, e.g. "sla.groups" "mixes
// slot counts and fractions". The sla policy cannot run without groups, so a
// nil c is an error.
func (c *Config) Validate() error {
	if c == nil || len(c.Groups) == 0 {
		return model.Invalid("sla.groups", "at least one group is required")
	}
	seen := make(map[string]int, len(c.Groups))
	firstCount, firstFrac := -1, -1
	for i, g := range c.Groups {
		if g.Name == "" {
			return model.Invalid(fmt.Sprintf("sla.groups[%d].name", i), "required")
		}
		if prev, dup := seen[g.Name]; dup {
			return model.Invalid(fmt.Sprintf("sla.groups[%d].name", i), "group %q is already defined by groups[%d]", g.Name, prev)
		}
		seen[g.Name] = i
		v := g.Value
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return model.Invalid(fmt.Sprintf("sla.groups[%d].value", i), "must be a finite number")
		case v <= 0:
			return model.Invalid(fmt.Sprintf("sla.groups[%d].value", i), "must be positive (got %g)", v)
		case v < 1:
			if firstFrac < 0 {
				firstFrac = i
			}
		case v == math.Trunc(v):
			if firstCount < 0 {
				firstCount = i
			}
		default:
			return model.Invalid(fmt.Sprintf("sla.groups[%d].value", i), "a fraction must be between 0 and 1 (exclusive), and a slot count a whole number (got %g)", v)
		}
	}
	if firstCount >= 0 && firstFrac >= 0 {
		return model.Invalid("sla.groups", "mixes slot counts and fractions (groups[%d] %q is %g slots, groups[%d] %q the fraction %g)",
			firstCount, c.Groups[firstCount].Name, c.Groups[firstCount].Value,
			firstFrac, c.Groups[firstFrac].Name, c.Groups[firstFrac].Value)
	}
	return perjob.CheckWindow("sla.usageWindow", c.UsageWindow)
}

// CheckJob checks that j names one of the SLA groups. GridServer rejects a
// session without a valid SLA group, and so does Allot, at submission; the
// error is a *model.FieldError on the job's "slaGroup".
func (c *Config) CheckJob(j *model.Job) error {
	if c == nil {
		return model.Invalid("slaGroup", "the queue's sla policy has no groups")
	}
	for _, g := range c.Groups {
		if g.Name == j.SLAGroup {
			return nil
		}
	}
	if j.SLAGroup == "" {
		return model.Invalid("slaGroup", "required by the sla policy (groups: %s)", c.groupNames())
	}
	return model.Invalid("slaGroup", "%q is not an SLA group (groups: %s)", j.SLAGroup, c.groupNames())
}

func (c *Config) groupNames() string {
	names := make([]string, len(c.Groups))
	for i, g := range c.Groups {
		names[i] = g.Name
	}
	return strings.Join(names, ", ")
}
