package spec

// MaxUserNameLen bounds a job's user: the longest name most Unix systems
// accept (utmp's 32 bytes).
const MaxUserNameLen = 32

// ValidUserName reports whether s may name a Unix user: it starts with a
// letter or '_', goes on with letters, digits, '_', '-' and '.', may end
// with '$' (machine accounts), and has at most MaxUserNameLen bytes. A
// name of digits alone is refused, since tools read it as a user ID, and
// so is a leading '-', which they read as an option.
func ValidUserName(s string) bool {
	if s == "" || len(s) > MaxUserNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case i > 0 && (c >= '0' && c <= '9' || c == '-' || c == '.'):
		case i > 0 && i == len(s)-1 && c == '$':
		default:
			return false
		}
	}
	return true
}
