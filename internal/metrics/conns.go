package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/allot-sched/allot/internal/netlimit"
)

// conns holds what the listener (internal/netlimit) reports: connections
// refused and shed under its limits.
type conns struct {
	refused *prometheus.CounterVec
	shed    *prometheus.CounterVec
}

func (c *conns) init(reg prometheus.Registerer) {
	f := newFactory(reg)
	c.refused = f.counterVec("connections_refused_total",
		"Connections (or requests on a reserved connection) answered 503 overloaded, by the limit that refused them: per_address, total, reserved.", "limit")
	c.shed = f.counterVec("connections_shed_total",
		"Idle keep-alive connections closed to make room for a new one, by the limit that was reached: per_address, total.", "limit")
	for _, l := range netlimit.LimitNames {
		c.refused.WithLabelValues(l)
		if l != netlimit.LimitReserved {
			c.shed.WithLabelValues(l)
		}
	}
}

// ConnectionRefused counts a refusal (netlimit.Observer).
func (c *conns) ConnectionRefused(limit string) { c.refused.WithLabelValues(limit).Inc() }

// ConnectionShed counts an idle connection shed (netlimit.Observer).
func (c *conns) ConnectionShed(limit string) { c.shed.WithLabelValues(limit).Inc() }

// ConnSource is what the connection gauges read at scrape time: the
// listener.
type ConnSource interface {
	Stats() netlimit.Stats
	Limits() netlimit.Limits
}

// WatchConnections registers the gauges of open connections and of the
// room in each pool, read from src at every scrape. Call it once.
func (m *Metrics) WatchConnections(src ConnSource) {
	pool := func(name string, open func(netlimit.Stats) int, room func(netlimit.Limits) int) {
		labels := prometheus.Labels{"pool": name}
		m.reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "connections_open", ConstLabels: labels,
				Help: "Open client connections, by pool: general, or reserved (kept for /healthz, /readyz, /metrics and the worker protocol)."},
				func() float64 { return float64(open(src.Stats())) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "connections_max", ConstLabels: labels,
				Help: "Connections each pool may hold (server.limits: maxConnections less reservedConnections, and reservedConnections)."},
				func() float64 { return float64(room(src.Limits())) }),
		)
	}
	pool("general", func(s netlimit.Stats) int { return s.General }, func(l netlimit.Limits) int { return l.Max - l.Reserved })
	pool("reserved", func(s netlimit.Stats) int { return s.Reserved }, func(l netlimit.Limits) int { return l.Reserved })
}

var _ netlimit.Observer = (*Metrics)(nil)
