//go:build !linux

package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// write writes value to the control file dir/file.
func write(dir, file, value string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
		return fmt.Errorf("cgroup: writing %q to %s: %w", value, filepath.Join(dir, file), err)
	}
	return nil
}

// read returns the content of dir/file without the trailing newline.
func read(dir, file string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, file))
	return strings.TrimSpace(string(b)), err
}
