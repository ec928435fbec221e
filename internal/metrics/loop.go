package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// Buckets of the histograms. An engine cycle takes microseconds to tens of
// milliseconds (docs/performance.md); a commit is one SQLite transaction
// with an fsync; the candidate pool runs from one worker to a fleet of
// 10,000.
var (
	cycleBuckets  = []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}
	commitBuckets = []float64{250e-6, 500e-6, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
	poolBuckets   = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}
)

// loop holds what the scheduling loop reports through control.Observer.
// Its methods run on the loop goroutine.
type loop struct {
	cycles        prometheus.Counter
	cycleDuration prometheus.Histogram
	placements    *prometheus.CounterVec
	pool          *prometheus.HistogramVec
	reuseHits     *prometheus.CounterVec

	events         *prometheus.CounterVec
	starts         prometheus.Counter
	ends           *prometheus.CounterVec
	requeues       *prometheus.CounterVec
	failures       *prometheus.CounterVec
	preempts       *prometheus.CounterVec
	submitted      prometheus.Counter
	jobsEnded      *prometheus.CounterVec
	commitTime     prometheus.Histogram
	commitErrs     prometheus.Counter
	reportsRefused *prometheus.CounterVec
	// quarantined counts stored rows set aside at a start
	// (control.EventRowQuarantined), by kind.
	quarantined *prometheus.CounterVec
	degraded    prometheus.Gauge
}

func (l *loop) init(reg prometheus.Registerer) {
	f := newFactory(reg)
	l.cycles = f.counter("scheduling_cycles_total", "Engine scheduling cycles run (seed 000 Invocations counts the admission decisions inside them: allot_endpoint_invocations_total).")
	l.cycleDuration = f.histogram("scheduling_cycle_duration_seconds",
		"Time one engine cycle took to make its admission, allocation and placement decisions (seed 000 Duration).", cycleBuckets)
	l.placements = f.counterVec("placements_total", "Tasks placed on a worker, by dispatcher mode, selection strategy and how the worker was chosen (seed 002).",
		"mode", "strategy", "via")
	l.pool = f.histogramVec("placement_candidate_pool_size", "Candidate pool size of each placement: free workers able to run the task (seed 002).",
		poolBuckets, "mode")
	l.reuseHits = f.counterVec("placement_reuse_hits_total", "Contexts (model, dataset) the chosen worker held with a fresh hint, summed over placements (seed 002 reuse hits).", "mode")

	l.events = f.counterVec("events_total", "Events appended to the durable event log, by kind.", "kind")
	l.starts = f.counter("task_starts_total", "Task attempts started (task_started events).")
	l.ends = f.counterVec("task_ends_total", "Task attempts or tasks that ended, by outcome: succeeded, failed, retried, requeued, preempted, cancelled.", "outcome")
	l.requeues = f.counterVec("task_requeues_total",
		"Tasks put back in the ready queue, by reason code: retry, worker_lost, lease_lost, worker_stopped, preempted, rebalanced, sticky_worker_busy, ... (seed 002 TASK_REQUEUED).", "reason")
	l.failures = f.counterVec("task_failures_total", "Tasks that ended failed, by reason code: failed (attempts exhausted), dependency_failure, ... (seed 002 TASK_FAILED).", "reason")
	l.preempts = f.counterVec("preemptions_total", "Running tasks stopped by the scheduler and requeued, by reason code.", "reason")
	l.submitted = f.counter("jobs_submitted_total", "Jobs accepted.")
	l.jobsEnded = f.counterVec("jobs_ended_total", "Jobs that reached an end state, by state: succeeded, failed, cancelled.", "state")
	l.commitTime = f.histogram("store_commit_duration_seconds", "Time one store commit (a loop round's group commit) took.", commitBuckets)
	l.commitErrs = f.counter("store_commit_failures_total",
		"Store commits that failed. A failure the store may recover from (a full disk) holds the round and retries it: each retry that fails counts.")
	l.degraded = f.gauge("store_degraded",
		"1 while the store refuses writes (disk full, read-only or failing file system): changes are refused with 503 store_unavailable and /readyz is not ready; 0 otherwise.")
	l.reportsRefused = f.counterVec("reports_refused_total",
		"Worker reports refused without being applied, by reason code: secret_mismatch (the report lacked its attempt's secret: a forgery or a broken agent).", "reason")
	l.quarantined = f.counterVec("store_rows_quarantined_total",
		"Stored rows that could not be read back at a start and were set aside, by kind: job (failed), worker (dropped), setting (the configured value applies), token (authorises nothing).", "kind")

	// The common label values start at zero, so that rate() and
	// dashboards see a series before the first occurrence.
	for _, o := range []string{"succeeded", "failed", "retried", "requeued", "preempted", "cancelled"} {
		l.ends.WithLabelValues(o)
	}
	for _, r := range []string{model.ReasonRetry, model.ReasonWorkerLost, model.ReasonLeaseLost, model.ReasonWorkerStopped,
		model.ReasonPreempted, model.ReasonStickyWorkerBusy} {
		l.requeues.WithLabelValues(r)
	}
	for _, r := range []string{model.ReasonFailed, model.ReasonDependencyFailure, model.ReasonBatchFailure} {
		l.failures.WithLabelValues(r)
	}
	l.reportsRefused.WithLabelValues(control.ReasonBadSecret)
	for _, s := range []model.TaskState{model.TaskSucceeded, model.TaskFailed, model.TaskCancelled} {
		l.jobsEnded.WithLabelValues(string(s))
	}
	for _, k := range []string{control.QuarantinedJob, control.QuarantinedWorker, control.QuarantinedSetting, QuarantinedToken} {
		l.quarantined.WithLabelValues(k)
	}

}

// Cycle counts one engine cycle: its duration, its placements and its
// deferrals for a busy sticky worker.
func (l *loop) Cycle(d *engine.Decisions, took time.Duration) {
	l.cycles.Inc()
	l.cycleDuration.Observe(took.Seconds())
	for i := range d.Starts {
		p := &d.Starts[i].Placement
		mode := p.Mode.String()
		l.placements.WithLabelValues(mode, p.Strategy.String(), p.Via.String()).Inc()
		l.pool.WithLabelValues(mode).Observe(float64(p.Pool))
		if p.ReuseHits > 0 {
			l.reuseHits.WithLabelValues(mode).Add(float64(p.ReuseHits))
		}
	}
	for _, df := range d.Deferred {
		l.requeues.WithLabelValues(reasonOr(df.Reason.Code, model.ReasonStickyWorkerBusy)).Inc()
	}
}

// Commit counts the events a commit made durable: counters follow what is
// stored, so they agree with the event log.
func (l *loop) Commit(events []store.Event, took time.Duration, err error) {
	l.commitTime.Observe(took.Seconds())
	if err != nil {
		l.commitErrs.Inc()
		return
	}
	for i := range events {
		e := &events[i]
		l.events.WithLabelValues(e.Kind).Inc()
		switch e.Kind {
		case control.EventJobSubmitted:
			l.submitted.Inc()
		case control.EventJobEnded:
			l.jobsEnded.WithLabelValues(reasonOr(e.Reason, "unknown")).Inc()
		case control.EventTaskStarted:
			l.starts.Inc()
		case control.EventTaskSucceeded:
			l.ends.WithLabelValues("succeeded").Inc()
		case control.EventTaskFailed:
			l.ends.WithLabelValues("failed").Inc()
			l.failures.WithLabelValues(reasonOr(e.Reason, model.ReasonFailed)).Inc()
		case control.EventTaskRetry:
			l.ends.WithLabelValues("retried").Inc()
			l.requeues.WithLabelValues(reasonOr(e.Reason, model.ReasonRetry)).Inc()
		case control.EventTaskRequeued:
			l.ends.WithLabelValues("requeued").Inc()
			l.requeues.WithLabelValues(reasonOr(e.Reason, "unknown")).Inc()
		case control.EventTaskPreempted:
			l.ends.WithLabelValues("preempted").Inc()
			l.requeues.WithLabelValues(reasonOr(e.Reason, model.ReasonPreempted)).Inc()
			l.preempts.WithLabelValues(reasonOr(e.Reason, model.ReasonPreempted)).Inc()
		case control.EventTaskCancelled:
			l.ends.WithLabelValues("cancelled").Inc()
		case control.EventReportRefused:
			l.reportsRefused.WithLabelValues(reasonOr(e.Reason, "unknown")).Inc()
		case control.EventRowQuarantined:
			l.quarantined.WithLabelValues(reasonOr(e.Reason, "unknown")).Inc()
		}
	}
}

// QuarantinedToken is the kind of quarantined row for an API token whose
// stored record could not be read back (store.Token.Unreadable). Tokens are
// read by the server's authentication, not the loop, so the server counts
// them with TokensUnreadable at start.
const QuarantinedToken = "token"

// TokensUnreadable counts n tokens found unreadable at a start.
func (l *loop) TokensUnreadable(n int) {
	l.quarantined.WithLabelValues(QuarantinedToken).Add(float64(n))
}

// StoreState sets the degraded gauge: 1 while the store refuses writes.
func (l *loop) StoreState(cause string) {
	if cause != "" {
		l.degraded.Set(1)
		return
	}
	l.degraded.Set(0)
}

func reasonOr(code, fallback string) string {
	if code == "" {
		return fallback
	}
	return code
}

// factory makes metrics in the allot namespace, registered on its
// registry (promauto panics on a clash, as MustRegister does).
type factory struct{ auto promauto.Factory }

func newFactory(reg prometheus.Registerer) factory { return factory{promauto.With(reg)} }

func (f factory) counter(name, help string) prometheus.Counter {
	return f.auto.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return f.auto.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	return f.auto.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help})
}

func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return f.auto.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	return f.auto.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets})
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return f.auto.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, labels)
}
