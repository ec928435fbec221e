package spec

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
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
	// DataDir holds the embedded database, or, with Store set, only the
	// server's local files (its lock and the first admin token).
	DataDir string `yaml:"dataDir,omitempty" json:"dataDir,omitempty"`
	// Store is the database the server keeps its state in, when it is not
	// the SQLite file of DataDir: a postgres:// URL, which several servers
	// may share (flag --store, env ALLOT_STORE).
	Store string `yaml:"store,omitempty" json:"store,omitempty"`
	// LeaderTimeout is, with a shared store, how long a leader that
	// cannot confirm its leadership (frozen, or cut from the database)
	// keeps it: the database ends its lock's session after this much
	// silence and a standby takes over; 0 means the default (3s).
	LeaderTimeout Duration `yaml:"leaderTimeout,omitempty" json:"leaderTimeout,omitempty"`
	// Advertise is the URL the other replicas send clients to while this
	// one leads; empty means the URL of Listen (flag --advertise).
	Advertise string `yaml:"advertise,omitempty" json:"advertise,omitempty"`
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
	// MaxOutput is how much of each attempt's output the server keeps
	// (allot logs); the oldest output beyond it is dropped. 0 means the
	// default (8Mi).
	MaxOutput Memory `yaml:"maxOutput,omitempty" json:"maxOutput,omitempty"`
	// TLS serves the API over HTTPS (flags --tls-cert and --tls-key).
	TLS TLSSettings `yaml:"tls,omitempty" json:"tls,omitempty"`
	// Inputs limits what the server checks when a job declares inputs.
	Inputs InputSettings `yaml:"inputs,omitempty" json:"inputs,omitempty"`
	// Limits bound connections and the time a client may take (limits.go).
	Limits LimitSettings `yaml:"limits,omitempty" json:"limits,omitempty"`
}

// CheckStoreURL refuses a store setting that does not name PostgreSQL:
// the server's own database is SQLite in the data directory unless the
// setting says otherwise, so a SQLite path there would be a second,
// conflicting way to say it. The empty setting is accepted. The URL's
// details (host, port, options) are checked when the server connects.
func CheckStoreURL(s string) error {
	if s == "" {
		return nil
	}
	scheme, _, ok := strings.Cut(s, "://")
	if ok {
		switch strings.ToLower(scheme) {
		case "postgres", "postgresql":
			return nil
		}
	}
	return errors.New("want a postgres:// URL (postgres://user@host:5432/db?sslmode=verify-full); " +
		"leave it unset for the SQLite database in the data directory")
}

// InputSettings limit the inputs a job may declare. The server reads each
// input's header at submission (seed 000's request validation), so without
// a limit any submitter could make it probe any local path or any URL it
// can reach, internal addresses included.
type InputSettings struct {
	// Allow lists where inputs may be: absolute directories (or
	// file:///dir) for local files, and http(s)://host[:port][/path]
	// prefixes for URLs. An input elsewhere is refused at submission.
	// Empty allows every input.
	Allow []string `yaml:"allow,omitempty" json:"allow,omitempty"`
}

// TLSSettings name the server's certificate and private key files (PEM).
// Both or neither.
type TLSSettings struct {
	Cert string `yaml:"cert,omitempty" json:"cert,omitempty"`
	Key  string `yaml:"key,omitempty" json:"key,omitempty"`
}

// Check refuses settings that cannot mean anything, naming each field
// under "server"; config.LoadServer runs it after the engine's checks.
func (s ServerSettings) Check() error {
	var c errs
	for _, d := range []struct {
		field string
		v     Duration
	}{{"cycleEvery", s.CycleEvery}, {"stopGrace", s.StopGrace}, {"heartbeatTimeout", s.HeartbeatTimeout}, {"leaderTimeout", s.LeaderTimeout}} {
		if d.v < 0 {
			c.add("server."+d.field, "must not be negative")
		}
	}
	if s.MaxOutput < 0 {
		c.add("server.maxOutput", "must not be negative")
	}
	s.Limits.check(&c)
	if err := CheckStoreURL(s.Store); err != nil {
		c.add("server.store", "%v", err)
	}
	for i, a := range s.Inputs.Allow {
		if _, err := ParseInputPrefix(a); err != nil {
			c.add(fmt.Sprintf("server.inputs.allow[%d]", i), "%v", err)
		}
	}
	return c.err()
}

// InputPrefix is one entry of server.inputs.allow: a local directory, or a
// URL's scheme, host and path prefix.
type InputPrefix struct {
	Scheme string // "file", "http" or "https"
	Host   string // lower case; empty for files
	Path   string // cleaned, absolute
}

// ParseInputPrefix reads an allow entry: an absolute directory, file:///dir,
// or an http(s) URL with a host.
func ParseInputPrefix(s string) (InputPrefix, error) {
	if strings.HasPrefix(s, "/") {
		return InputPrefix{Scheme: "file", Path: path.Clean(s)}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return InputPrefix{}, fmt.Errorf("not a URL or an absolute directory: %v", err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" || !strings.HasPrefix(u.Path, "/") {
			return InputPrefix{}, errors.New("a file prefix is an absolute directory: file:///dir")
		}
		return InputPrefix{Scheme: "file", Path: path.Clean(u.Path)}, nil
	case "http", "https":
		if u.Host == "" {
			return InputPrefix{}, fmt.Errorf("%s prefix without a host", u.Scheme)
		}
		p := path.Clean("/" + u.Path)
		return InputPrefix{Scheme: u.Scheme, Host: strings.ToLower(u.Host), Path: p}, nil
	default:
		return InputPrefix{}, fmt.Errorf("%q: want an absolute directory, file:///dir, or an http(s) URL prefix", s)
	}
}

// Holds reports whether an input with this scheme, host and path lies under
// the prefix: the same scheme and host, and the path inside the prefix's
// path at a segment boundary (so /data does not hold /database).
func (p InputPrefix) Holds(scheme, host, inPath string) bool {
	if scheme != p.Scheme || !strings.EqualFold(host, p.Host) {
		return false
	}
	clean := path.Clean("/" + inPath)
	return p.Path == "/" || clean == p.Path || strings.HasPrefix(clean, p.Path+"/")
}
