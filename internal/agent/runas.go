package agent

// taskUser is a Unix user a task runs as: its IDs, groups and home.
type taskUser struct {
	Name     string
	UID, GID uint32
	Groups   []uint32
	Home     string
}
