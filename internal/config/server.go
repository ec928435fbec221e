package config

import (
	"os"

	"github.com/allot-sched/allot/internal/spec"
)

// LoadServer reads and checks a server configuration file: the document
// (spec.Decode), then the scheduling block against the engine's rules
// (Engine), then the server's own settings. Errors carry the field's line.
func LoadServer(path string) (spec.ServerConfig, error) {
	var c spec.ServerConfig
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	root, err := spec.Decode(data, &c)
	if err != nil {
		return c, err
	}
	if _, err := Engine(c.Scheduling); err != nil {
		return c, spec.WithLines(err, root)
	}
	if err := c.Server.Check(); err != nil {
		return c, spec.WithLines(err, root)
	}
	return c, nil
}
