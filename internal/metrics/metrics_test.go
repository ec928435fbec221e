package metrics

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/netlimit"
	"github.com/allot-sched/allot/internal/store"
)

type fixedSnapshot struct {
	s     *control.Snapshot
	fleet api.FleetCost
}

func (f fixedSnapshot) Snapshot() *control.Snapshot { return f.s }
func (f fixedSnapshot) FleetCost() api.FleetCost    { return f.fleet }

func ev(kind, reason string) store.Event { return store.Event{Kind: kind, Reason: reason, Job: "j"} }

func TestCommittedEventsDriveTaskAndJobCounters(t *testing.T) {
	m := New()
	m.Commit([]store.Event{
		ev(control.EventJobSubmitted, ""),
		ev(control.EventTaskStarted, ""),
		ev(control.EventTaskRetry, model.ReasonRetry),
		ev(control.EventTaskStarted, ""),
		ev(control.EventTaskSucceeded, ""),
		ev(control.EventTaskRequeued, model.ReasonWorkerLost),
		ev(control.EventTaskPreempted, model.ReasonRebalanced),
		ev(control.EventTaskFailed, model.ReasonFailed),
		ev(control.EventTaskFailed, model.ReasonDependencyFailure),
		ev(control.EventTaskCancelled, model.ReasonCancelled),
		ev(control.EventJobEnded, string(model.TaskFailed)),
		ev(control.EventReportRefused, control.ReasonBadSecret),
	}, 3*time.Millisecond, nil)
	cases := []struct {
		name string
		got  float64
		want float64
	}{
		{"submitted", testutil.ToFloat64(m.submitted), 1},
		{"starts", testutil.ToFloat64(m.starts), 2},
		{"ends succeeded", testutil.ToFloat64(m.ends.WithLabelValues("succeeded")), 1},
		{"ends retried", testutil.ToFloat64(m.ends.WithLabelValues("retried")), 1},
		{"ends requeued", testutil.ToFloat64(m.ends.WithLabelValues("requeued")), 1},
		{"ends preempted", testutil.ToFloat64(m.ends.WithLabelValues("preempted")), 1},
		{"ends failed", testutil.ToFloat64(m.ends.WithLabelValues("failed")), 2},
		{"ends cancelled", testutil.ToFloat64(m.ends.WithLabelValues("cancelled")), 1},
		{"requeue retry", testutil.ToFloat64(m.requeues.WithLabelValues(model.ReasonRetry)), 1},
		{"requeue worker lost", testutil.ToFloat64(m.requeues.WithLabelValues(model.ReasonWorkerLost)), 1},
		{"requeue rebalanced", testutil.ToFloat64(m.requeues.WithLabelValues(model.ReasonRebalanced)), 1},
		{"preemption rebalanced", testutil.ToFloat64(m.preempts.WithLabelValues(model.ReasonRebalanced)), 1},
		{"failure failed", testutil.ToFloat64(m.failures.WithLabelValues(model.ReasonFailed)), 1},
		{"failure cascade", testutil.ToFloat64(m.failures.WithLabelValues(model.ReasonDependencyFailure)), 1},
		{"job failed", testutil.ToFloat64(m.jobsEnded.WithLabelValues("failed")), 1},
		{"events started", testutil.ToFloat64(m.events.WithLabelValues(control.EventTaskStarted)), 2},
		{"commit failures", testutil.ToFloat64(m.commitErrs), 0},
		{"reports refused for a wrong secret", testutil.ToFloat64(m.reportsRefused.WithLabelValues(control.ReasonBadSecret)), 1},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestFailedCommitCountsTheFailureAndNoEvents(t *testing.T) {
	m := New()
	m.Commit([]store.Event{ev(control.EventTaskStarted, "")}, time.Millisecond, errors.New("disk full"))
	if got := testutil.ToFloat64(m.commitErrs); got != 1 {
		t.Errorf("commit failures: got %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.starts); got != 0 {
		t.Errorf("starts of a failed commit: got %v, want 0 (the events were not stored)", got)
	}
	if got := testutil.CollectAndCount(m.commitTime); got != 1 {
		t.Errorf("commit latency series: got %d", got)
	}
}

func TestStoreStateSetsTheDegradedGauge(t *testing.T) {
	m := New()
	for _, tc := range []struct {
		cause string
		want  float64
	}{{"disk full", 1}, {"I/O error", 1}, {"", 0}} {
		m.StoreState(tc.cause)
		if got := testutil.ToFloat64(m.degraded); got != tc.want {
			t.Errorf("after StoreState(%q): allot_store_degraded = %v, want %v", tc.cause, got, tc.want)
		}
	}
}

func TestCycleCountsPlacementsPoolsReuseAndStickyDeferrals(t *testing.T) {
	m := New()
	d := &engine.Decisions{
		Starts: []engine.Start{
			{Job: "a", Task: "t1", Placement: place.Info{Mode: place.Adaptive, Strategy: place.Best, Via: place.ViaScore, Pool: 7}},
			{Job: "a", Task: "t2", Placement: place.Info{Mode: place.Adaptive, Strategy: place.Best, Via: place.ViaReuse, Pool: 3, ReuseHits: 2}},
		},
		Deferred: []engine.Deferral{{Job: "b", Task: "t", Worker: "w", Reason: model.Reason{Code: model.ReasonStickyWorkerBusy}}},
	}
	m.Cycle(d, 2*time.Millisecond)
	m.Cycle(&engine.Decisions{}, time.Millisecond)
	if got := testutil.ToFloat64(m.cycles); got != 2 {
		t.Errorf("cycles: got %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.placements.WithLabelValues("adaptive", "best", "score")); got != 1 {
		t.Errorf("placements via score: got %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.placements.WithLabelValues("adaptive", "best", "reuse")); got != 1 {
		t.Errorf("placements via reuse: got %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.reuseHits.WithLabelValues("adaptive")); got != 2 {
		t.Errorf("reuse hits: got %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.requeues.WithLabelValues(model.ReasonStickyWorkerBusy)); got != 1 {
		t.Errorf("sticky requeues: got %v, want 1", got)
	}
	want := `
# HELP allot_placement_candidate_pool_size Candidate pool size of each placement: free workers able to run the task (seed 002).
# TYPE allot_placement_candidate_pool_size histogram
allot_placement_candidate_pool_size_bucket{mode="adaptive",le="1"} 0
allot_placement_candidate_pool_size_bucket{mode="adaptive",le="2"} 0
allot_placement_candidate_pool_size_bucket{mode="adaptive",le="5"} 1
allot_placement_candidate_pool_size_bucket{mode="adaptive",le="10"} 2
allot_placement_candidate_pool_size_bucket{mode="adaptive",le="20"} 2
allot_placement_candidate_pool_size_bucket{mode="adaptive",le="50"} 2
allot_placement_candidate_pool_size_bucket{mode="adaptive",le="100"} 2
allot_placement_candidate_pool_size_bucket{mode="adaptive",le="200"} 2
allot_placement_candidate_pool_size_bucket{mode="adaptive",le="500"} 2
allot_placement_candidate_pool_size_bucket{mode="adaptive",le="1000"} 2
allot_placement_candidate_pool_size_bucket{mode="adaptive",le="2000"} 2
allot_placement_candidate_pool_size_bucket{mode="adaptive",le="5000"} 2
allot_placement_candidate_pool_size_bucket{mode="adaptive",le="10000"} 2
allot_placement_candidate_pool_size_bucket{mode="adaptive",le="+Inf"} 2
allot_placement_candidate_pool_size_sum{mode="adaptive"} 10
allot_placement_candidate_pool_size_count{mode="adaptive"} 2
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "allot_placement_candidate_pool_size"); err != nil {
		t.Error(err)
	}
}

func TestFleetLeavesDisabledWorkersOutOfCostAndSaysWhoDisabledThem(t *testing.T) {
	m := New()
	m.Watch(fixedSnapshot{s: testSnapshot(), fleet: api.FleetCost{EnabledWorkers: 2, EnabledSlots: 6, EnabledCostPerHour: 3.5,
		DisabledWorkers: 3, DisabledCostPerHour: 40, DisabledByElastic: 2, DisabledByManual: 1}})
	want := `
# HELP allot_fleet_cost_per_hour Cost per hour of the workers in allot_fleet_workers; disabled workers are excluded (seed 002).
# TYPE allot_fleet_cost_per_hour gauge
allot_fleet_cost_per_hour 3.5
# HELP allot_fleet_slots Slots of the workers in allot_fleet_workers.
# TYPE allot_fleet_slots gauge
allot_fleet_slots 6
# HELP allot_fleet_workers Workers that take or run tasks (ready or draining); disabled and lost workers are left out (seed 002).
# TYPE allot_fleet_workers gauge
allot_fleet_workers 2
# HELP allot_workers_disabled Disabled workers by who disabled them: the elastic coordinator or an operator (seed 002: elastic decisions stay auditable).
# TYPE allot_workers_disabled gauge
allot_workers_disabled{by="elastic"} 2
allot_workers_disabled{by="manual"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"allot_fleet_cost_per_hour", "allot_fleet_slots", "allot_fleet_workers", "allot_workers_disabled"); err != nil {
		t.Error(err)
	}
}

func testSnapshot() *control.Snapshot {
	return &control.Snapshot{
		At: time.Unix(1700000000, 0),
		Groups: []engine.GroupSummary{
			{Queue: "batch", Group: "alice", Running: 3, Waiting: 5, Target: 4},
			{Queue: "batch", Group: "bob", Running: 1, Waiting: 0, Target: -1},
		},
		Pending: engine.PendingSummary{Jobs: 3, Tasks: 6, ByReason: []engine.ReasonCount{
			{Code: model.ReasonNoFreeSlot, Tasks: 5},
			{Code: model.ReasonThrottled, Tasks: 1},
		}},
		Workers:    map[string]int{"ready": 2, "disabled": 1},
		ReadyTasks: 5,
		LiveTasks:  12,
		Endpoints: []admit.EndpointStats{
			{Endpoint: "llm", Errors: 4, DeadLetters: 2, Variants: []admit.VariantStats{
				{Variant: "a", MaxCapacity: 10, TargetCapacity: 8, Load: 6, Available: 2, Utilization: 60, RunningJobs: 2, Visible: 1, Buffered: 3,
					Submitted: 5, Admitted: 4, Throttles: 1, Invocations: 9, Errors: 1, ReservedFor: "j9"},
				{Variant: "b", MaxCapacity: 4, TargetCapacity: 3, Errors: 2},
			}},
			{Endpoint: "http1", Errors: 1, Variants: []admit.VariantStats{{Variant: "", MaxCapacity: 10, TargetCapacity: 10, Errors: 0}}},
		},
	}
}

func TestScrapeReadsGroupsWorkersAndPendingFromTheSnapshot(t *testing.T) {
	m := New()
	m.Watch(fixedSnapshot{s: testSnapshot()})
	want := `
# HELP allot_group_running_slots Slots the group's running tasks hold (one per task), per queue and group.
# TYPE allot_group_running_slots gauge
allot_group_running_slots{group="alice",queue="batch"} 3
allot_group_running_slots{group="bob",queue="batch"} 1
# HELP allot_group_target_slots The policy's target slot count for the group; absent when the policy sets none.
# TYPE allot_group_target_slots gauge
allot_group_target_slots{group="alice",queue="batch"} 4
# HELP allot_queue_waiting_tasks Queue depth: ready tasks not running, per queue and group.
# TYPE allot_queue_waiting_tasks gauge
allot_queue_waiting_tasks{group="alice",queue="batch"} 5
allot_queue_waiting_tasks{group="bob",queue="batch"} 0
# HELP allot_pending_tasks Waiting tasks by the reason they are not running (reason codes of GET /v1/jobs/{id}).
# TYPE allot_pending_tasks gauge
allot_pending_tasks{reason="no_free_slot"} 5
allot_pending_tasks{reason="throttled"} 1
# HELP allot_workers Registered workers by state: ready, draining, disabled, lost (disabled ones are listed here but left out of allot_fleet_cost_per_hour).
# TYPE allot_workers gauge
allot_workers{state="disabled"} 1
allot_workers{state="draining"} 0
allot_workers{state="lost"} 0
allot_workers{state="ready"} 2
# HELP allot_ready_tasks Tasks ready to run and not running, over all queues (the ready queue of seed 002).
# TYPE allot_ready_tasks gauge
allot_ready_tasks 5
# HELP allot_live_tasks Tasks of the unfinished jobs, ended tasks of those jobs included: what server.limits.maxLiveTasks bounds.
# TYPE allot_live_tasks gauge
allot_live_tasks 12
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "allot_group_running_slots", "allot_group_target_slots",
		"allot_queue_waiting_tasks", "allot_pending_tasks", "allot_workers", "allot_ready_tasks", "allot_live_tasks"); err != nil {
		t.Error(err)
	}
}

// A queue whose policy makes each job its own group (priority, sla) is
// exported as one group, so the label set does not grow with the jobs run.
func TestScrapeFoldsTheGroupsOfAQueueThatGroupsByJob(t *testing.T) {
	s := testSnapshot()
	s.Groups = append(s.Groups,
		engine.GroupSummary{Queue: "urgent", Group: "job-1", Running: 2, Waiting: 1, Target: -1},
		engine.GroupSummary{Queue: "urgent", Group: "job-2", Running: 1, Waiting: 3, Target: -1})
	s.JobQueues = map[string]bool{"urgent": true}
	m := New()
	m.Watch(fixedSnapshot{s: s})
	want := `
# HELP allot_group_running_slots Slots the group's running tasks hold (one per task), per queue and group.
# TYPE allot_group_running_slots gauge
allot_group_running_slots{group="alice",queue="batch"} 3
allot_group_running_slots{group="bob",queue="batch"} 1
allot_group_running_slots{group="(jobs)",queue="urgent"} 3
# HELP allot_queue_waiting_tasks Queue depth: ready tasks not running, per queue and group.
# TYPE allot_queue_waiting_tasks gauge
allot_queue_waiting_tasks{group="alice",queue="batch"} 5
allot_queue_waiting_tasks{group="bob",queue="batch"} 0
allot_queue_waiting_tasks{group="(jobs)",queue="urgent"} 4
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "allot_group_running_slots", "allot_queue_waiting_tasks"); err != nil {
		t.Error(err)
	}
}

func TestScrapeExportsEndpointMetricsPerVariantWithCumulativeCounters(t *testing.T) {
	m := New()
	m.Watch(fixedSnapshot{s: testSnapshot()})
	want := `
# HELP allot_endpoint_errors_total Failures on the endpoint: inaccessible inputs and failed capacity queries (seed 000 Errors); variant "" holds those of the endpoint as a whole.
# TYPE allot_endpoint_errors_total counter
allot_endpoint_errors_total{endpoint="http1",variant=""} 1
allot_endpoint_errors_total{endpoint="llm",variant=""} 1
allot_endpoint_errors_total{endpoint="llm",variant="a"} 1
allot_endpoint_errors_total{endpoint="llm",variant="b"} 2
# HELP allot_endpoint_throttles_total Jobs delayed for insufficient capacity, each job once however long it waits (seed 000 Throttles).
# TYPE allot_endpoint_throttles_total counter
allot_endpoint_throttles_total{endpoint="http1",variant=""} 0
allot_endpoint_throttles_total{endpoint="llm",variant="a"} 1
allot_endpoint_throttles_total{endpoint="llm",variant="b"} 0
# HELP allot_endpoint_utilization_percent Current endpoint utilization, 100 × load / max capacity, per endpoint and variant (seed 000 Utilization).
# TYPE allot_endpoint_utilization_percent gauge
allot_endpoint_utilization_percent{endpoint="http1",variant=""} 0
allot_endpoint_utilization_percent{endpoint="llm",variant="a"} 60
allot_endpoint_utilization_percent{endpoint="llm",variant="b"} 0
# HELP allot_endpoint_requests_buffered Jobs received and not complete, waiting or running (seed 000 ApproximateNumberOfRequestsBuffered).
# TYPE allot_endpoint_requests_buffered gauge
allot_endpoint_requests_buffered{endpoint="http1",variant=""} 0
allot_endpoint_requests_buffered{endpoint="llm",variant="a"} 3
allot_endpoint_requests_buffered{endpoint="llm",variant="b"} 0
# HELP allot_endpoint_reserved 1 while a starving job holds the variant's capacity reservation (anti-starvation rule), else 0.
# TYPE allot_endpoint_reserved gauge
allot_endpoint_reserved{endpoint="http1",variant=""} 0
allot_endpoint_reserved{endpoint="llm",variant="a"} 1
allot_endpoint_reserved{endpoint="llm",variant="b"} 0
# HELP allot_endpoint_dead_letters_total Jobs put on the dead-letter list at validation for an inaccessible input.
# TYPE allot_endpoint_dead_letters_total counter
allot_endpoint_dead_letters_total{endpoint="http1"} 0
allot_endpoint_dead_letters_total{endpoint="llm"} 2
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "allot_endpoint_errors_total", "allot_endpoint_throttles_total",
		"allot_endpoint_utilization_percent", "allot_endpoint_requests_buffered", "allot_endpoint_reserved", "allot_endpoint_dead_letters_total"); err != nil {
		t.Error(err)
	}
}

func TestEveryMetricPassesTheLinter(t *testing.T) {
	m := New()
	m.Watch(fixedSnapshot{s: testSnapshot()})
	m.WatchConnections(fixedConns{})
	m.RequestStarted("GET /v1/jobs")
	m.RequestDone("GET /v1/jobs", 200, time.Millisecond)
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "allot_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
}

func TestStatusClassGroupsCodes(t *testing.T) {
	for status, want := range map[int]string{200: "2xx", 204: "2xx", 301: "3xx", 404: "4xx", 503: "5xx", 0: "other", 999: "other"} {
		if got := statusClass(status); got != want {
			t.Errorf("statusClass(%d) = %q, want %q", status, got, want)
		}
	}
}

func TestRequestsInFlightReturnToZero(t *testing.T) {
	m := New()
	m.RequestStarted("GET /v1/events")
	if got := testutil.ToFloat64(m.inFlight.WithLabelValues("GET /v1/events")); got != 1 {
		t.Errorf("in flight: got %v, want 1", got)
	}
	m.RequestDone("GET /v1/events", 200, time.Second)
	if got := testutil.ToFloat64(m.inFlight.WithLabelValues("GET /v1/events")); got != 0 {
		t.Errorf("in flight after the answer: got %v, want 0", got)
	}
}

// exercised returns metrics with a sample in every series family, so that
// Gather lists them all.
func exercised() *Metrics {
	m := New()
	m.Watch(fixedSnapshot{s: testSnapshot()})
	m.Cycle(&engine.Decisions{Starts: []engine.Start{{Placement: place.Info{Pool: 2, ReuseHits: 1}}}}, time.Millisecond)
	m.Commit([]store.Event{ev(control.EventTaskPreempted, model.ReasonPreempted)}, time.Millisecond, nil)
	m.RequestStarted("GET /v1/jobs")
	m.RequestDone("GET /v1/jobs", 200, time.Millisecond)
	m.WatchConnections(fixedConns{})
	return m
}

func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	mfs, err := exercised().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "allot_") {
			names[mf.GetName()] = true
		}
	}
	return names
}

var metricName = regexp.MustCompile(`allot_[a-z_]+[a-z]`)

func TestDocsListEveryMetric(t *testing.T) {
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	names := exportedNames(t)
	if len(names) < 30 {
		t.Fatalf("only %d metrics gathered", len(names))
	}
	for n := range names {
		if !strings.Contains(string(doc), "| `"+n+"` |") {
			t.Errorf("%s is exported but has no row in docs/metrics.md", n)
		}
	}
}

func TestDashboardQueriesOnlyExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile("../../docs/grafana/allot-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}
	names := exportedNames(t)
	queries := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries++
			for _, n := range metricName.FindAllString(tg.Expr, -1) {
				base := n
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(n, suffix); ok && names[b] {
						base = b
					}
				}
				if !names[base] {
					t.Errorf("panel %q queries %s, which is not exported", p.Title, n)
				}
			}
		}
	}
	if queries == 0 {
		t.Error("the dashboard has no queries")
	}
}

type fixedConns struct{ stats netlimit.Stats }

func (f fixedConns) Stats() netlimit.Stats { return f.stats }
func (f fixedConns) Limits() netlimit.Limits {
	return netlimit.Limits{Max: 100, PerAddress: 10, Reserved: 8}
}

func TestConnectionsCountRefusalsAndShedsByLimitAndReadOpenPerPool(t *testing.T) {
	m := New()
	m.WatchConnections(fixedConns{stats: netlimit.Stats{General: 90, Reserved: 3}})
	m.ConnectionRefused(netlimit.LimitTotal)
	m.ConnectionRefused(netlimit.LimitTotal)
	m.ConnectionRefused(netlimit.LimitReserved)
	m.ConnectionShed(netlimit.LimitPerAddress)
	want := `
# HELP allot_connections_max Connections each pool may hold (server.limits: maxConnections less reservedConnections, and reservedConnections).
# TYPE allot_connections_max gauge
allot_connections_max{pool="general"} 92
allot_connections_max{pool="reserved"} 8
# HELP allot_connections_open Open client connections, by pool: general, or reserved (kept for /healthz, /readyz, /metrics and the worker protocol).
# TYPE allot_connections_open gauge
allot_connections_open{pool="general"} 90
allot_connections_open{pool="reserved"} 3
# HELP allot_connections_refused_total Connections (or requests on a reserved connection) answered 503 overloaded, by the limit that refused them: per_address, total, reserved.
# TYPE allot_connections_refused_total counter
allot_connections_refused_total{limit="per_address"} 0
allot_connections_refused_total{limit="reserved"} 1
allot_connections_refused_total{limit="total"} 2
# HELP allot_connections_shed_total Idle keep-alive connections closed to make room for a new one, by the limit that was reached: per_address, total.
# TYPE allot_connections_shed_total counter
allot_connections_shed_total{limit="per_address"} 1
allot_connections_shed_total{limit="total"} 0
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "allot_connections_max", "allot_connections_open",
		"allot_connections_refused_total", "allot_connections_shed_total"); err != nil {
		t.Error(err)
	}
}
