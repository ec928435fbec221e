package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/api/rest"
	"github.com/allot-sched/allot/internal/netlimit"
	"github.com/allot-sched/allot/internal/spec"
)

// limitFlags are the flags of server.limits, on the commands that run a
// server. A flag that is given wins over the configuration file.
type limitFlags struct {
	maxConns, perAddress, reserved int
	idle, header, body, write      time.Duration
	minBodyRate                    int64
	cmd                            *cobra.Command
}

func (f *limitFlags) add(cmd *cobra.Command) {
	f.cmd = cmd
	fl := cmd.Flags()
	fl.IntVar(&f.maxConns, "max-connections", 0, "open client connections at most, reserved ones included (server.limits.maxConnections; default: sized from the open-file limit, at most 8192)")
	fl.IntVar(&f.perAddress, "max-connections-per-address", 0, "connections of one client address at most (server.limits.maxConnectionsPerAddress; default: an eighth of the general pool, 16 to 512)")
	fl.IntVar(&f.reserved, "reserved-connections", 0, "connections kept for /healthz, /readyz, /metrics and the worker protocol (server.limits.reservedConnections; default: a sixteenth of the maximum, at most 256)")
	fl.DurationVar(&f.idle, "idle-timeout", rest.DefaultIdleTimeout, "close a keep-alive connection idle this long (server.limits.idleTimeout)")
	fl.DurationVar(&f.header, "header-timeout", rest.DefaultHeaderTimeout, "time to send a request's headers and the TLS handshake (server.limits.headerTimeout)")
	fl.DurationVar(&f.body, "body-timeout", rest.DefaultBodyTimeout, "time any request body may take (server.limits.bodyTimeout)")
	fl.Int64Var(&f.minBodyRate, "min-body-rate", rest.DefaultMinBodyRate, "slowest upload accepted after --body-timeout, in bytes per second (server.limits.minBodyRate)")
	fl.DurationVar(&f.write, "write-timeout", rest.DefaultWriteTimeout, "time to send an answer to a client that does not read it (server.limits.writeTimeout)")
}

// apply overlays the flags that were given on the configuration's limits,
// and checks the result.
func (f *limitFlags) apply(l *spec.LimitSettings) error {
	changed := f.cmd.Flags().Changed
	ints := []struct {
		flag string
		v    int
		to   *int
	}{{"max-connections", f.maxConns, &l.MaxConnections}, {"max-connections-per-address", f.perAddress, &l.MaxConnectionsPerAddress},
		{"reserved-connections", f.reserved, &l.ReservedConnections}}
	for _, x := range ints {
		if changed(x.flag) {
			if x.v < 0 {
				return fmt.Errorf("--%s: must not be negative", x.flag)
			}
			*x.to = x.v
		}
	}
	durations := []struct {
		flag string
		v    time.Duration
		to   *spec.Duration
	}{{"idle-timeout", f.idle, &l.IdleTimeout}, {"header-timeout", f.header, &l.HeaderTimeout},
		{"body-timeout", f.body, &l.BodyTimeout}, {"write-timeout", f.write, &l.WriteTimeout}}
	for _, x := range durations {
		if changed(x.flag) {
			if x.v < 0 {
				return fmt.Errorf("--%s: must not be negative", x.flag)
			}
			*x.to = spec.Duration(x.v)
		}
	}
	if changed("min-body-rate") {
		if f.minBodyRate < 0 {
			return fmt.Errorf("--min-body-rate: must not be negative")
		}
		l.MinBodyRate = f.minBodyRate
	}
	return l.Check()
}

// serverLimits turns server.limits into the listener's limits, sized for
// the process's open-file limit (raised to its hard limit first), and the
// API's timeouts. It logs what it settled on, and any setting it had to
// lower.
func serverLimits(l spec.LimitSettings, log *slog.Logger) (netlimit.Limits, rest.Timeouts) {
	files, err := netlimit.RaiseFileLimit()
	if err != nil {
		log.Warn("cannot read the open-file limit; connection limits assume 1024 files", "err", err)
	}
	lim, notes := netlimit.Limits{Max: l.MaxConnections, PerAddress: l.MaxConnectionsPerAddress, Reserved: l.ReservedConnections}.Resolve(files)
	for _, n := range notes {
		log.Warn("server.limits: " + n)
	}
	to := rest.Timeouts{Idle: time.Duration(l.IdleTimeout), Header: time.Duration(l.HeaderTimeout), Body: time.Duration(l.BodyTimeout),
		MinBodyRate: l.MinBodyRate, Write: time.Duration(l.WriteTimeout)}.WithDefaults()
	log.Info("connection limits", "openFiles", files, "maxConnections", lim.Max, "reservedConnections", lim.Reserved,
		"maxConnectionsPerAddress", lim.PerAddress, "idleTimeout", to.Idle, "headerTimeout", to.Header, "bodyTimeout", to.Body,
		"minBodyRate", to.MinBodyRate, "writeTimeout", to.Write)
	return lim, to
}
