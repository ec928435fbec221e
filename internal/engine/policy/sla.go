package policy

// SLAConfig configures the sla policy (seed 001, SLA mode).
type SLAConfig struct{}
