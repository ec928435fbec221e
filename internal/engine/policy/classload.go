package policy

// ClassLoadConfig configures the classload policy (seed 004).
type ClassLoadConfig struct{}
