package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/model"
)

// desc builds a description in the allot namespace.
func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
}

// The metrics read from the snapshot at scrape time.
var (
	snapAt         = desc("snapshot_timestamp_seconds", "When the scheduling loop published the snapshot that the queue, group, worker and endpoint gauges are read from (Unix time); it lags the clock by up to a cycle.")
	readyTasks     = desc("ready_tasks", "Tasks ready to run and not running, over all queues (the ready queue of seed 002).")
	liveTasks      = desc("live_tasks", "Tasks of the unfinished jobs, ended tasks of those jobs included: what server.limits.maxLiveTasks bounds.")
	waitingDesc    = desc("queue_waiting_tasks", "Queue depth: ready tasks not running, per queue and group.", "queue", "group")
	runningDesc    = desc("group_running_slots", "Slots the group's running tasks hold (one per task), per queue and group.", "queue", "group")
	targetDesc     = desc("group_target_slots", "The policy's target slot count for the group; absent when the policy sets none.", "queue", "group")
	pendingDesc    = desc("pending_tasks", "Waiting tasks by the reason they are not running (reason codes of GET /v1/jobs/{id}).", "reason")
	fleetWorkers   = desc("fleet_workers", "Workers that take or run tasks (ready or draining); disabled and lost workers are left out (seed 002).")
	fleetSlots     = desc("fleet_slots", "Slots of the workers in allot_fleet_workers.")
	fleetCost      = desc("fleet_cost_per_hour", "Cost per hour of the workers in allot_fleet_workers; disabled workers are excluded (seed 002).")
	disabledByDesc = desc("workers_disabled", "Disabled workers by who disabled them: the elastic coordinator or an operator (seed 002: elastic decisions stay auditable).", "by")
	workersDesc    = desc("workers", "Registered workers by state: ready, draining, disabled, lost (disabled ones are listed here but left out of allot_fleet_cost_per_hour).", "state")

	epLabels     = []string{"endpoint", "variant"}
	epUtil       = desc("endpoint_utilization_percent", "Current endpoint utilization, 100 × load / max capacity, per endpoint and variant (seed 000 Utilization).", epLabels...)
	epMax        = desc("endpoint_max_capacity", "Concurrent requests the variant can serve.", epLabels...)
	epTarget     = desc("endpoint_target_capacity", "Max capacity × the capacity target percentage: what admission fills up to.", epLabels...)
	epLoad       = desc("endpoint_load", "Load of the admitted jobs still running, in concurrent requests.", epLabels...)
	epAvailable  = desc("endpoint_available_capacity", "Target capacity − load; negative after the single-job exception.", epLabels...)
	epRunning    = desc("endpoint_running_jobs", "Admitted jobs that have not ended.", epLabels...)
	epVisible    = desc("endpoint_requests_visible", "Jobs waiting for admission (seed 000 ApproximateNumberOfRequestsVisible).", epLabels...)
	epBuffered   = desc("endpoint_requests_buffered", "Jobs received and not complete, waiting or running (seed 000 ApproximateNumberOfRequestsBuffered).", epLabels...)
	epReserved   = desc("endpoint_reserved", "1 while a starving job holds the variant's capacity reservation (anti-starvation rule), else 0.", epLabels...)
	epSubmitted  = desc("endpoint_submitted_total", "Jobs routed to the variant.", epLabels...)
	epAdmitted   = desc("endpoint_admitted_total", "Jobs admitted to the variant.", epLabels...)
	epExceptions = desc("endpoint_single_job_exceptions_total", "Jobs admitted by the single-job exception (larger than the target, endpoint idle).", epLabels...)
	epThrottles  = desc("endpoint_throttles_total", "Jobs delayed for insufficient capacity, each job once however long it waits (seed 000 Throttles).", epLabels...)
	epInvoke     = desc("endpoint_invocations_total", "Admission decisions made: each waiting job, each pass (seed 000 Invocations).", epLabels...)
	epReserve    = desc("endpoint_reservations_total", "Starvation reservations taken.", epLabels...)
	epErrors     = desc("endpoint_errors_total", "Failures on the endpoint: inaccessible inputs and failed capacity queries (seed 000 Errors); variant \"\" holds those of the endpoint as a whole.", epLabels...)
	epDead       = desc("endpoint_dead_letters_total", "Jobs put on the dead-letter list at validation for an inaccessible input.", "endpoint")
)

// knownWorkerStates are exported even at zero, so a dashboard shows a line
// for each.
var knownWorkerStates = []string{string(model.WorkerReady), string(model.WorkerDraining), string(model.WorkerDisabled), "lost"}

// snapshotCollector reads the controller's last snapshot at every scrape:
// no loop round, and nothing kept between scrapes.
type snapshotCollector struct{ src Snapshotter }

// Describe sends every description.
func (c *snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{snapAt, readyTasks, liveTasks, waitingDesc, runningDesc, targetDesc, pendingDesc, workersDesc,
		fleetWorkers, fleetSlots, fleetCost, disabledByDesc,
		epUtil, epMax, epTarget, epLoad, epAvailable, epRunning, epVisible, epBuffered, epReserved,
		epSubmitted, epAdmitted, epExceptions, epThrottles, epInvoke, epReserve, epErrors, epDead} {
		ch <- d
	}
}

// Collect sends the snapshot's values.
func (c *snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Snapshot()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(snapAt, float64(s.At.UnixNano())/1e9)
	fc := c.src.FleetCost()
	gauge(fleetWorkers, float64(fc.EnabledWorkers))
	gauge(fleetSlots, float64(fc.EnabledSlots))
	gauge(fleetCost, fc.EnabledCostPerHour)
	gauge(disabledByDesc, float64(fc.DisabledByElastic), api.DisabledByElastic)
	gauge(disabledByDesc, float64(fc.DisabledByManual), api.DisabledByManual)
	gauge(readyTasks, float64(s.ReadyTasks))
	gauge(liveTasks, float64(s.LiveTasks))
	for _, g := range s.GroupPoints() { // per-job groups folded: the label set grows with the configuration only
		gauge(waitingDesc, float64(g.Waiting), g.Queue, g.Group)
		gauge(runningDesc, float64(g.Running), g.Queue, g.Group)
		if g.Target >= 0 {
			gauge(targetDesc, float64(g.Target), g.Queue, g.Group)
		}
	}
	for _, rc := range s.Pending.ByReason { // the engine's counts, kept as reasons change
		gauge(pendingDesc, float64(rc.Tasks), rc.Code)
	}
	// The registry sorts what it gathers, so maps are ranged over as they are.
	states := map[string]int{}
	for _, st := range knownWorkerStates {
		states[st] = 0
	}
	for st, n := range s.Workers {
		states[st] += n
	}
	for st, n := range states {
		gauge(workersDesc, float64(n), st)
	}
	for i := range s.Endpoints {
		collectEndpoint(&s.Endpoints[i], gauge, counter)
	}
}

// collectEndpoint sends one endpoint's rows, one per variant. The engine
// keeps the counters cumulatively, so they are exported as they are.
func collectEndpoint(es *admit.EndpointStats, gauge func(*prometheus.Desc, float64, ...string), counter func(*prometheus.Desc, uint64, ...string)) {
	ep := es.Endpoint
	// Errors of the endpoint as a whole (not of one variant) go to the
	// variant "" row: the one of an endpoint without variants, or a row
	// of their own.
	whole := es.Errors
	hasBlank := false
	for _, v := range es.Variants {
		whole -= min(whole, v.Errors)
		hasBlank = hasBlank || v.Variant == ""
	}
	for _, v := range es.Variants {
		gauge(epUtil, v.Utilization, ep, v.Variant)
		gauge(epMax, float64(v.MaxCapacity), ep, v.Variant)
		gauge(epTarget, float64(v.TargetCapacity), ep, v.Variant)
		gauge(epLoad, float64(v.Load), ep, v.Variant)
		gauge(epAvailable, float64(v.Available), ep, v.Variant)
		gauge(epRunning, float64(v.RunningJobs), ep, v.Variant)
		gauge(epVisible, float64(v.Visible), ep, v.Variant)
		gauge(epBuffered, float64(v.Buffered), ep, v.Variant)
		reserved := 0.0
		if v.ReservedFor != "" {
			reserved = 1
		}
		gauge(epReserved, reserved, ep, v.Variant)
		counter(epSubmitted, v.Submitted, ep, v.Variant)
		counter(epAdmitted, v.Admitted, ep, v.Variant)
		counter(epExceptions, v.SingleJobExceptions, ep, v.Variant)
		counter(epThrottles, v.Throttles, ep, v.Variant)
		counter(epInvoke, v.Invocations, ep, v.Variant)
		counter(epReserve, v.Reservations, ep, v.Variant)
		errs := v.Errors
		if v.Variant == "" {
			errs += whole
		}
		counter(epErrors, errs, ep, v.Variant)
	}
	if !hasBlank && (whole > 0 || len(es.Variants) == 0) {
		counter(epErrors, whole, ep, "")
	}
	counter(epDead, es.DeadLetters, ep)
}
