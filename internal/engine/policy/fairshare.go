package policy

// FairShareConfig configures the fairshare policy (seed 003).
type FairShareConfig struct{}
