//go:build !(linux || darwin)

package sqlite

// noSpace cannot ask the file system here.
func noSpace(string) (string, bool) { return "", false }
