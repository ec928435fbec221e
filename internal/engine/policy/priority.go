package policy

// PriorityConfig configures the priority policy (seed 001, priority mode).
type PriorityConfig struct{}
