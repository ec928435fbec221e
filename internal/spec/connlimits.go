package spec

// LimitSettings bound the connections the server keeps and how long a client
// may take over each part of a request, so that no client, idle or slow,
// can hold the server's file descriptors or goroutines for ever
// (docs/security.md, "Connections and timeouts"). Every field is optional:
// zero takes the default, which for the connection counts is sized from the
// process's open-file limit at start. Flags of the same names override the
// connection and timeout fields; the live-task bounds have none.
type LimitSettings struct {
	// MaxConnections bounds the open client connections, reserved ones
	// included. A connection over it is answered 503 (overloaded) and
	// closed. It is kept below the open-file limit with headroom for the
	// store and the server's own files.
	MaxConnections int `yaml:"maxConnections,omitempty" json:"maxConnections,omitempty"`
	// MaxConnectionsPerAddress bounds the connections of one client
	// address (an IPv6 client by its /64). Behind a reverse proxy every
	// client has the proxy's address: set it to MaxConnections there.
	MaxConnectionsPerAddress int `yaml:"maxConnectionsPerAddress,omitempty" json:"maxConnectionsPerAddress,omitempty"`
	// ReservedConnections are kept, out of MaxConnections, for /healthz,
	// /readyz and the worker protocol (register, lease, reports,
	// heartbeat): once the others fill the rest, only those routes are
	// served on a new connection.
	ReservedConnections int `yaml:"reservedConnections,omitempty" json:"reservedConnections,omitempty"`
	// IdleTimeout closes a keep-alive connection that sends no new
	// request for this long.
	IdleTimeout Duration `yaml:"idleTimeout,omitempty" json:"idleTimeout,omitempty"`
	// HeaderTimeout bounds the time to send a request's line and headers
	// (and the TLS handshake).
	HeaderTimeout Duration `yaml:"headerTimeout,omitempty" json:"headerTimeout,omitempty"`
	// BodyTimeout is the time any request body may take; a larger body
	// gets one more second per MinBodyRate bytes.
	BodyTimeout Duration `yaml:"bodyTimeout,omitempty" json:"bodyTimeout,omitempty"`
	// MinBodyRate, in bytes per second, is the slowest upload accepted
	// once BodyTimeout has passed.
	MinBodyRate int64 `yaml:"minBodyRate,omitempty" json:"minBodyRate,omitempty"`
	// WriteTimeout bounds the time to send an answer to a client that
	// does not read it, from the end of the request's body. A lease long
	// poll gets it after its longest wait, an event stream for each batch
	// of events it sends.
	WriteTimeout Duration `yaml:"writeTimeout,omitempty" json:"writeTimeout,omitempty"`
	// MaxLiveTasks bounds the tasks of the unfinished jobs of the whole
	// server (DefaultMaxLiveTasks when zero): each is held in memory until
	// its job ends, and read back at every start while it has not. A
	// submission that would go past it is refused (429).
	MaxLiveTasks int `yaml:"maxLiveTasks,omitempty" json:"maxLiveTasks,omitempty"`
	// MaxLiveTasksPerSubmitter bounds the tasks of the unfinished jobs of
	// one submitter (a token's name, or its ID when it has none), so that
	// one tenant cannot take MaxLiveTasks alone
	// (DefaultMaxLiveTasksPerSubmitter when zero). Admin tokens are not
	// held to it, only to MaxLiveTasks.
	MaxLiveTasksPerSubmitter int `yaml:"maxLiveTasksPerSubmitter,omitempty" json:"maxLiveTasksPerSubmitter,omitempty"`
}

// Defaults of the live-task bounds (LimitSettings). A task of a live job
// costs the server a few KiB of memory, and its start-up reads each back:
// 5,000,000 is some GiB and a start of about a minute and a half, the
// most a server should be asked to carry.
const (
	DefaultMaxLiveTasks             = 5_000_000
	DefaultMaxLiveTasksPerSubmitter = 1_000_000
)

// Check refuses limits that cannot mean anything, naming the field; the
// server checks them again once flags are applied.
func (l LimitSettings) Check() error {
	var c errs
	l.check(&c)
	return c.err()
}

// check refuses limits that cannot mean anything, naming the field.
func (l LimitSettings) check(c *errs) {
	for _, n := range []struct {
		field string
		v     int64
	}{
		{"maxConnections", int64(l.MaxConnections)}, {"maxConnectionsPerAddress", int64(l.MaxConnectionsPerAddress)},
		{"reservedConnections", int64(l.ReservedConnections)}, {"minBodyRate", l.MinBodyRate},
		{"idleTimeout", int64(l.IdleTimeout)}, {"headerTimeout", int64(l.HeaderTimeout)},
		{"bodyTimeout", int64(l.BodyTimeout)}, {"writeTimeout", int64(l.WriteTimeout)},
		{"maxLiveTasks", int64(l.MaxLiveTasks)}, {"maxLiveTasksPerSubmitter", int64(l.MaxLiveTasksPerSubmitter)},
	} {
		if n.v < 0 {
			c.add("server.limits."+n.field, "must not be negative")
		}
	}
	if l.MaxConnections > 0 && l.ReservedConnections >= l.MaxConnections {
		c.add("server.limits.reservedConnections", "%d leaves no connection for the other routes out of maxConnections %d: reserve fewer",
			l.ReservedConnections, l.MaxConnections)
	}
	if l.MaxLiveTasks > 0 && l.MaxLiveTasksPerSubmitter > l.MaxLiveTasks {
		c.add("server.limits.maxLiveTasksPerSubmitter", "%d is more than maxLiveTasks %d, which holds every submitter: set it at most that",
			l.MaxLiveTasksPerSubmitter, l.MaxLiveTasks)
	}
}
