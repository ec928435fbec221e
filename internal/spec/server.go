package spec

import (
	"os"
)

// ServerConfig is the server's configuration file: the scheduling blocks a
// scenario also has, plus the server's own settings.
type ServerConfig struct {
	Scheduling `yaml:",inline"`
	Server     ServerSettings `yaml:"server,omitempty" json:"server,omitempty"`
}

// ServerSettings are the server's own settings. Flags override them.
type ServerSettings struct {
	// Listen is the address the API listens on.
	Listen string `yaml:"listen,omitempty" json:"listen,omitempty"`
	// DataDir holds the embedded database.
	DataDir string `yaml:"dataDir,omitempty" json:"dataDir,omitempty"`
	// CycleEvery runs a scheduling cycle at least this often.
	CycleEvery Duration `yaml:"cycleEvery,omitempty" json:"cycleEvery,omitempty"`
	// StopGrace is the time between SIGTERM and SIGKILL when a task is
	// stopped.
	StopGrace Duration `yaml:"stopGrace,omitempty" json:"stopGrace,omitempty"`
	// MaxBodyBytes bounds request bodies.
	MaxBodyBytes Memory `yaml:"maxBody,omitempty" json:"maxBody,omitempty"`
}

// LoadServerConfig reads and checks a server configuration file.
func LoadServerConfig(path string) (ServerConfig, error) {
	var c ServerConfig
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	root, err := Decode(data, &c)
	if err != nil {
		return c, err
	}
	if _, err := c.EngineConfig(); err != nil {
		return c, WithLines(err, root)
	}
	return c, nil
}
