// Package metrics exports Allot's Prometheus metrics. It has three sources,
// so that looking at the scheduler never slows it down:
//
//   - the scheduling loop tells it, through control.Observer, about every
//     cycle (placements, requeues for a sticky worker, the cycle's duration)
//     and every store commit (the durable events: task starts and ends by
//     outcome, requeues and failures by reason, preemptions, job ends);
//   - at scrape time it reads Controller.Snapshot() for the gauges (queue
//     depth, running slots against target, workers by state, pending
//     reasons) and the endpoint counters of seed 000, which the engine keeps
//     cumulatively;
//   - the REST layer tells it about every request (rest.RequestObserver),
//     and the listener about connections it refuses or sheds
//     (netlimit.Observer); the open connections are read at scrape time.
//
// Every metric is registered on the Metrics' own registry, never on the
// global one, so that two servers in one process (tests) do not collide.
// docs/metrics.md documents each metric.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
)

// namespace prefixes every metric name.
const namespace = "allot"

// Metrics is the server's metrics: it implements control.Observer,
// rest.RequestObserver and netlimit.Observer, and serves the exposition
// format.
type Metrics struct {
	reg *prometheus.Registry
	loop
	requests
	conns
}

// New builds the metrics on a new registry, with the Go runtime and process
// collectors. Attach the controller with Watch once it exists (it needs the
// Metrics as its observer first).
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.loop.init(m.reg)
	m.requests.init(m.reg)
	m.conns.init(m.reg)
	return m
}

// Snapshotter is what the scrape-time collector reads: the controller's
// last published snapshot and what its workers cost.
type Snapshotter interface {
	Snapshot() *control.Snapshot
	FleetCost() api.FleetCost
}

// Watch registers the gauges read from src's snapshot at every scrape. Call
// it once.
func (m *Metrics) Watch(src Snapshotter) {
	m.reg.MustRegister(&snapshotCollector{src: src})
}

// Registry returns the registry, for tests and for adding collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format (text, or
// protobuf/OpenMetrics when the scraper asks).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true})
}

var (
	_ control.Observer = (*Metrics)(nil)
)
