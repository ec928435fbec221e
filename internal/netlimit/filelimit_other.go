//go:build !unix

package netlimit

// RaiseFileLimit reports 0, unknown: this system has no RLIMIT_NOFILE, and
// the limits take the defaults of an unknown file limit.
func RaiseFileLimit() (uint64, error) { return 0, nil }
