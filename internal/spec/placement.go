package spec

import (
	"regexp"
	"slices"
	"sort"
)

// Placement is the `placement:` block: how tasks find workers (seed 002).
// docs/placement.md explains each setting; docs/scenario.md lists them.
// config.Placement checks it and turns it into the engine's placement
// configuration.
type Placement struct {
	// Mode is the dispatcher mode: adaptive (default), static-worker,
	// fixed-pipeline or round-robin.
	Mode string `yaml:"mode,omitempty" json:"mode,omitempty"`
	// Strategy selects among candidates: best (the adaptive mode's
	// default), first-fit (the other modes' default) or min-satisfying.
	Strategy string `yaml:"strategy,omitempty" json:"strategy,omitempty"`
	// EnableContextReuse prefers workers with a fresh cache hint of the
	// task's model or dataset (default true).
	EnableContextReuse *bool `yaml:"enableContextReuse,omitempty" json:"enableContextReuse,omitempty"`
	// CacheTTL is how long a cache hint stays fresh (default 1h).
	CacheTTL *Duration `yaml:"cacheTTL,omitempty" json:"cacheTTL,omitempty"`
	// Lambda weighs throughput against cost per task category.
	Lambda Lambda `yaml:"lambda,omitempty" json:"lambda,omitempty"`
	// Jitter scales the deterministic tie-breaking term (default 0.001).
	Jitter *float64 `yaml:"jitter,omitempty" json:"jitter,omitempty"`
	// EnableStageStickiness pins a task to the worker that ran the task
	// whose checkpoint or adapter it loads (default false).
	EnableStageStickiness bool `yaml:"enableStageStickiness,omitempty" json:"enableStageStickiness,omitempty"`
	// MergeMax bounds a merged batch (default 4; 1 turns merging off).
	MergeMax *int `yaml:"mergeMax,omitempty" json:"mergeMax,omitempty"`
	// Elastic configures the elastic coordinator.
	Elastic Elastic `yaml:"elastic,omitempty" json:"elastic,omitempty"`
	// DensityBucket is the bucket size of the server's task/worker density
	// series (GET /v1/density; default 60s, 1s to 24h). allot sim takes
	// --density-bucket instead.
	DensityBucket *Duration `yaml:"densityBucket,omitempty" json:"densityBucket,omitempty"`
}

// Lambda holds λ per task category, each in [0, 1].
type Lambda struct {
	Inference *float64 `yaml:"inference,omitempty" json:"inference,omitempty"`
	Training  *float64 `yaml:"training,omitempty" json:"training,omitempty"`
	Other     *float64 `yaml:"other,omitempty" json:"other,omitempty"`
}

// Elastic is the `placement.elastic:` block: the six settings of seed 002
// and the switch. Unset settings take the seed's defaults.
type Elastic struct {
	Enabled                 bool     `yaml:"enabled,omitempty" json:"enabled,omitempty"`
	IdleSeconds             *float64 `yaml:"idleSeconds,omitempty" json:"idleSeconds,omitempty"`
	QueueMaxForDisable      *int     `yaml:"queueMaxForDisable,omitempty" json:"queueMaxForDisable,omitempty"`
	QueueThresholdForEnable *int     `yaml:"queueThresholdForEnable,omitempty" json:"queueThresholdForEnable,omitempty"`
	MinActiveWorkers        *int     `yaml:"minActiveWorkers,omitempty" json:"minActiveWorkers,omitempty"`
	PollIntervalSeconds     *float64 `yaml:"pollIntervalSeconds,omitempty" json:"pollIntervalSeconds,omitempty"`
	ToggleCooldownSeconds   *float64 `yaml:"toggleCooldownSeconds,omitempty" json:"toggleCooldownSeconds,omitempty"`
}

// stickyFieldRE matches the result fields that carry weights a later stage
// loads: a checkpoint or an adapter (seed 002's stage stickiness).
var stickyFieldRE = regexp.MustCompile(`(?i)checkpoint|adapter`)

// stickTo resolves a task's stickTo: the explicit field, or else the first
// task whose checkpoint or adapter result the task references
// (${tasks.P.result.checkpoint...} in run, command or env, in that order).
// It checks that the parent is a single task the task needs; problems are
// recorded under tp.
func stickTo(c *errs, tp string, t Task, counts map[string]int) string {
	if t.StickTo != "" {
		switch {
		case !slices.Contains(t.Needs, t.StickTo):
			c.add(tp+".stickTo", "%q is not among the task's needs", t.StickTo)
			return ""
		case counts[t.StickTo] > 1:
			c.add(tp+".stickTo", "%q stands for %d tasks; a task can only stick to one", t.StickTo, counts[t.StickTo])
			return ""
		}
		return t.StickTo
	}
	texts := append([]string{t.Run}, t.Command...)
	keys := make([]string, 0, len(t.Env))
	for k := range t.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		texts = append(texts, t.Env[k])
	}
	for _, s := range texts {
		for _, m := range refRE.FindAllStringSubmatch(s, -1) {
			parent := m[1]
			if stickyFieldRE.MatchString(m[2]) && slices.Contains(t.Needs, parent) && counts[parent] <= 1 {
				return parent
			}
		}
	}
	return ""
}

// stageOf returns the stage a task of entry name gets: empty when the
// entry is not expanded (the task's own name is its stage).
func stageOf(entry string, count int) string {
	if count <= 1 {
		return ""
	}
	return entry
}
