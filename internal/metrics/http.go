package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// apiBuckets cover quick reads to lease long polls, which the server may
// hold up to api.MaxLeaseWait (60 s).
var apiBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// requests holds what the REST layer reports through rest.RequestObserver.
// Routes are ServeMux patterns ("GET /v1/jobs/{id}"), never raw paths, so
// the label set stays as small as the route table.
type requests struct {
	duration *prometheus.HistogramVec
	inFlight *prometheus.GaugeVec
}

func (q *requests) init(reg prometheus.Registerer) {
	f := newFactory(reg)
	q.duration = f.histogramVec("api_request_duration_seconds",
		"Time to answer an API request, by route pattern and status class (2xx, 4xx, ...).", apiBuckets, "route", "code")
	q.inFlight = f.gaugeVec("api_requests_in_flight",
		"Requests being answered, by route pattern; on \"GET /v1/events\" these are mostly event-stream (SSE) clients, on the lease route waiting long polls.", "route")
}

// RequestStarted counts a request in flight.
func (q *requests) RequestStarted(route string) { q.inFlight.WithLabelValues(route).Inc() }

// RequestDone records an answered request.
func (q *requests) RequestDone(route string, status int, took time.Duration) {
	q.inFlight.WithLabelValues(route).Dec()
	q.duration.WithLabelValues(route, statusClass(status)).Observe(took.Seconds())
}

// statusClass is "2xx" for 200-299 and so on.
func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status/100) + "xx"
}
