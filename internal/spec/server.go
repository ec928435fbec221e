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
	// HeartbeatTimeout is how long a worker may stay silent (no heartbeat,
	// lease request or report) before it is declared lost and its tasks
	// are requeued; 0 means the default (30s).
	HeartbeatTimeout Duration `yaml:"heartbeatTimeout,omitempty" json:"heartbeatTimeout,omitempty"`
	// MaxBodyBytes bounds request bodies.
	MaxBodyBytes Memory `yaml:"maxBody,omitempty" json:"maxBody,omitempty"`
	// TLS serves the API over HTTPS (flags --tls-cert and --tls-key).
	TLS TLSSettings `yaml:"tls,omitempty" json:"tls,omitempty"`
}

// TLSSettings name the server's certificate and private key files (PEM).
// Both or neither.
type TLSSettings struct {
	Cert string `yaml:"cert,omitempty" json:"cert,omitempty"`
	Key  string `yaml:"key,omitempty" json:"key,omitempty"`
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
	if err := c.Server.check(); err != nil {
		return c, WithLines(err, root)
	}
	return c, nil
}

// check refuses settings that cannot mean anything.
func (s ServerSettings) check() error {
	var c errs
	for _, d := range []struct {
		field string
		v     Duration
	}{{"cycleEvery", s.CycleEvery}, {"stopGrace", s.StopGrace}, {"heartbeatTimeout", s.HeartbeatTimeout}} {
		if d.v < 0 {
			c.add("server."+d.field, "must not be negative")
		}
	}
	return c.err()
}
