//go:build !linux

package agent

// agentCPUs lists no CPU: without cgroups no attempt is pinned.
func agentCPUs() []int { return nil }
