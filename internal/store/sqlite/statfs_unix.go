//go:build linux || darwin

package sqlite

import "syscall"

// noSpace reports whether the file system of dir has no free blocks or no
// free inodes left, and says which; ok is false when it has both or cannot
// be asked.
func noSpace(dir string) (cause string, ok bool) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return "", false
	}
	switch {
	case fs.Bavail == 0:
		return "disk full", true
	case fs.Files > 0 && fs.Ffree == 0:
		return "disk full (no free inodes)", true
	}
	return "", false
}
