package policy

import "github.com/allot-sched/allot/internal/model"

// Config is the `policy:` block of a queue (model.PolicyConfig): kind and
// the policies' own blocks. Its decoding lives in model so that documents
// carrying it are read without the engine; Register makes each policy's
// block known to it.
type Config = model.PolicyConfig

// Settings is one policy's own configuration block
// (model.PolicySettings).
type Settings = model.PolicySettings

// kindOf returns the policy kind of cfg, fifo when unset.
func kindOf(cfg Config) string {
	if cfg.Kind == "" {
		return "fifo"
	}
	return cfg.Kind
}
