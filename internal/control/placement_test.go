package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/engine/elastic"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// newPlacementPlane is newPlane with a scheduling configuration of the
// test's own. Heartbeats never time out: these tests move the clock by
// minutes.
func newPlacementPlane(t *testing.T, sched spec.Scheduling) *plane {
	return newPlaneConfig(t, Config{Scheduling: sched, HeartbeatTimeout: 24 * time.Hour})
}

func ptr[T any](v T) *T { return &v }

// registerCost registers a one-slot worker with a cost per hour.
func (p *plane) registerCost(name string, cost float64, cache ...api.CacheHint) {
	p.t.Helper()
	reg := api.Register{Name: name, Resources: spec.Resources{CPU: 4000, Memory: 8192}, CostPerHour: &cost, Cache: cache}
	if _, err := p.c.Register(p.ctx(), reg); err != nil {
		p.t.Fatalf("register %s: %v", name, err)
	}
}

// settle waits until a loop tick has run at the clock's current time, and
// a few more, so that what a tick does at this time has happened.
func (p *plane) settle() {
	p.t.Helper()
	p.roundAt(p.clock.Now())
	time.Sleep(20 * time.Millisecond) // ten more ticks
}

func (p *plane) states() map[string]string {
	p.t.Helper()
	ws, err := p.c.Workers(p.ctx())
	if err != nil {
		p.t.Fatal(err)
	}
	out := map[string]string{}
	for _, w := range ws {
		out[w.Name] = w.State
		if w.DisabledBy != "" {
			out[w.Name] += "/" + w.DisabledBy
		}
	}
	return out
}

func elasticConfig(minActive int) spec.Scheduling {
	return spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}, Placement: spec.Placement{Elastic: spec.Elastic{
		Enabled: true, IdleSeconds: ptr(60.0), PollIntervalSeconds: ptr(30.0), ToggleCooldownSeconds: ptr(60.0),
		MinActiveWorkers: ptr(minActive)}}}
}

func TestElasticLoopDisablesIdleWorkersAndBringsThemBackWhenTheQueueCrossesTheThreshold(t *testing.T) {
	for _, minActive := range []int{1, 2} {
		t.Run("minActiveWorkers="+strconv.Itoa(minActive), func(t *testing.T) {
			p := newPlacementPlane(t, elasticConfig(minActive))
			names := []string{"w1", "w2", "w3"}
			for _, n := range names {
				p.register(n, 1)
			}
			// Not idle long enough yet: nothing changes.
			p.clock.Add(59 * time.Second)
			p.settle()
			for n, s := range p.states() {
				if s != "ready" {
					t.Fatalf("%s is %s after 59 s idle, want ready", n, s)
				}
			}
			// Idle for the idle time, with an empty queue: all but
			// minActiveWorkers go, in registration order.
			p.clock.Add(31 * time.Second)
			p.settle()
			want := map[string]string{}
			for i, n := range names {
				want[n] = "ready"
				if i < len(names)-minActive {
					want[n] = "disabled/elastic"
				}
			}
			if got := p.states(); !sameMap(got, want) {
				t.Fatalf("after 90 s idle: %v, want %v", got, want)
			}
			disabledAt := p.clock.Now()
			evs := p.events(EventWorkerState)
			if len(evs) != len(names)-minActive {
				t.Fatalf("worker_state events %+v, want %d", evs, len(names)-minActive)
			}
			for _, e := range evs {
				if e.Reason != "disabled" || !strings.Contains(e.Message, "elastic") || !strings.Contains(e.Message, "idle for 1m30s") ||
					!strings.Contains(string(e.Data), `"by":"elastic"`) {
					t.Errorf("event %+v: want reason disabled, a message saying elastic and idle for 1m30s, data by elastic", e)
				}
			}
			if fc := p.c.FleetCost(); fc.EnabledWorkers != minActive || fc.EnabledCostPerHour != float64(minActive) ||
				fc.DisabledWorkers != len(names)-minActive || fc.DisabledByElastic != len(names)-minActive {
				t.Errorf("fleet cost %+v: disabled workers must leave the enabled cost", fc)
			}

			// Work arrives: more ready tasks than the ready workers take.
			tasks := make([]spec.Task, 4)
			for i := range tasks {
				tasks[i] = spec.Task{Name: "t" + string(rune('a'+i)), Run: "true"}
			}
			p.submit(spec.Job{ID: "burst", Tasks: tasks})
			// Inside the cooldown the disabled workers stay off.
			p.clock.Add(30 * time.Second)
			p.settle()
			if got := p.states(); !sameMap(got, want) {
				t.Fatalf("30 s after disabling (cooldown 60 s): %v, want %v", got, want)
			}
			// Past the cooldown: the queue (4 - minActive tasks waiting)
			// is above the threshold 0, and every disabled worker is
			// needed.
			p.clock.Add(30 * time.Second)
			p.settle()
			for n, s := range p.states() {
				if s != "ready" {
					t.Errorf("%s is %s once the queue crossed the threshold, want ready", n, s)
				}
			}
			enabled := 0
			for _, e := range p.events(EventWorkerState) {
				if e.Reason == "ready" {
					enabled++
					if !strings.Contains(e.Message, "above queueThresholdForEnable 0") || !e.At.Equal(disabledAt.Add(60*time.Second)) {
						t.Errorf("enable event %+v: want the threshold named, at the first poll past the cooldown", e)
					}
				}
			}
			if enabled != len(names)-minActive {
				t.Errorf("%d enable events, want %d", enabled, len(names)-minActive)
			}
			for _, n := range names {
				p.leaseUntil(n, "a task on the re-enabled worker", func(l api.Lease) bool { return len(l.Assignments) > 0 })
			}
		})
	}
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestManualToggleIsHeldToTheCooldownAndTheViewSaysWhoDisabled(t *testing.T) {
	p := newPlacementPlane(t, spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}},
		Placement: spec.Placement{Elastic: spec.Elastic{ToggleCooldownSeconds: ptr(60.0)}}})
	p.register("w1", 1)
	p.register("w2", 1)
	w, err := p.c.ToggleElastic(p.ctx(), "w1", false)
	if err != nil || w.State != "disabled" || w.DisabledBy != api.DisabledByManual {
		t.Fatalf("toggle off: %+v %v, want disabled by manual", w, err)
	}
	p.clock.Add(59 * time.Second)
	_, err = p.c.ToggleElastic(p.ctx(), "w1", true)
	if !errors.Is(err, ErrConflict) || !errors.Is(err, elastic.ErrCooldown) || !strings.Contains(err.Error(), "toggled 59s ago; placement.elastic.toggleCooldownSeconds is 1m0s: try again in 1s") {
		t.Fatalf("toggle within the cooldown: %v, want a conflict naming the cooldown", err)
	}
	// Asking for the state it is in is no toggle.
	if w, err := p.c.ToggleElastic(p.ctx(), "w1", false); err != nil || w.State != "disabled" {
		t.Fatalf("toggle off again: %+v %v", w, err)
	}
	p.clock.Add(time.Second)
	if w, err := p.c.ToggleElastic(p.ctx(), "w1", true); err != nil || w.State != "ready" || w.DisabledBy != "" {
		t.Fatalf("toggle after the cooldown: %+v %v, want ready", w, err)
	}
	if _, err := p.c.ToggleElastic(p.ctx(), "ghost", true); !isNotFound(err) {
		t.Errorf("unknown worker: %v, want not found", err)
	}
	// The state API disables by hand too; the view says so.
	if _, err := p.c.SetWorkerState(p.ctx(), "w2", model.WorkerDisabled); err != nil {
		t.Fatal(err)
	}
	if got := p.states(); got["w2"] != "disabled/manual" {
		t.Errorf("w2 after POST state disabled: %s, want disabled/manual", got["w2"])
	}
	evs := p.events(EventWorkerState)
	if len(evs) != 3 || !strings.Contains(string(evs[0].Data), `"by":"manual"`) || !strings.HasPrefix(evs[0].Message, "manual") {
		t.Errorf("worker_state events %+v, want three, the toggles saying manual", evs)
	}
}

func TestCacheHintFromASucceededTaskDrawsTheNextTaskOfThatModelUntilTheTTL(t *testing.T) {
	p := newPlacementPlane(t, spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}},
		Placement: spec.Placement{CacheTTL: ptr(spec.Duration(10 * time.Minute))}})
	// w2 costs less: without hints every task goes there first.
	p.registerCost("w1", 2)
	p.registerCost("w2", 1)
	p.submit(spec.Job{ID: "warm", Tasks: []spec.Task{{Name: "a", Run: "true", Model: "other"}, {Name: "b", Run: "true", Model: "llama"}}})
	got := map[string]api.Attempt{}
	for _, w := range []string{"w1", "w2"} {
		l := p.leaseUntil(w, "one task", func(l api.Lease) bool { return len(l.Assignments) == 1 })
		got[w] = l.Assignments[0].Attempt
	}
	if got["w2"].Task != "a" || got["w1"].Task != "b" {
		t.Fatalf("placed %+v, want a on the cheaper w2 and b on w1", got)
	}
	for _, w := range []string{"w1", "w2"} {
		if err := p.report(w, succeeded(got[w])); err != nil {
			t.Fatal(err)
		}
	}
	hints := p.worker("w1").Cache
	if len(hints) != 1 || hints[0].Kind != "model" || hints[0].Name != "llama" || !hints[0].Expires.Equal(p.clock.Now().Add(10*time.Minute)) {
		t.Fatalf("w1's cache %+v, want llama, expiring after the TTL", hints)
	}

	// Both free: the hint beats the cost.
	p.submit(spec.Job{ID: "hot", Tasks: []spec.Task{{Name: "c", Run: "true", Model: "llama"}}})
	a := p.leaseUntil("w1", "c on the worker holding llama", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0].Attempt
	var data struct {
		Attempt   int     `json:"attempt"`
		Via       string  `json:"via"`
		Pool      int     `json:"pool"`
		ReuseHits int     `json:"reuseHits"`
		Lambda    float64 `json:"lambda"`
		Score     float64 `json:"score"`
	}
	for _, e := range p.events(EventTaskStarted) {
		if e.Job == "hot" {
			if err := json.Unmarshal(e.Data, &data); err != nil {
				t.Fatalf("task_started data %s: %v", e.Data, err)
			}
		}
	}
	if data.Attempt != 1 || data.Via != "reuse" || data.Pool != 2 || data.ReuseHits != 1 || data.Lambda != 0.5 || data.Score == 0 {
		t.Errorf("task_started data %+v: want attempt 1, via reuse, pool 2, 1 reuse hit, λ 0.5 and the score", data)
	}
	if err := p.report("w1", succeeded(a)); err != nil {
		t.Fatal(err)
	}

	// Past the TTL the hint is stale: the cost decides again.
	p.clock.Add(10*time.Minute + time.Second)
	if h := p.worker("w1").Cache; len(h) != 0 {
		t.Errorf("w1 lists stale hints %+v", h)
	}
	p.submit(spec.Job{ID: "cold", Tasks: []spec.Task{{Name: "d", Run: "true", Model: "llama"}}})
	l := p.leaseUntil("w2", "d on the cheaper worker", func(l api.Lease) bool { return len(l.Assignments) == 1 })
	if l.Assignments[0].Task != "d" {
		t.Fatalf("w2 got %+v, want d", l.Assignments)
	}
}

func TestHeartbeatCacheHintsCountAndAnUnchangedReportCostsNoRound(t *testing.T) {
	p := newPlacementPlane(t, spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}})
	p.registerCost("w1", 2)
	p.registerCost("w2", 1)
	hb := api.Heartbeat{Cache: []api.CacheHint{{Kind: "dataset", Name: "imagenet"}}}
	if err := p.c.HeartbeatCache(p.ctx(), "w1", hb); err != nil {
		t.Fatal(err)
	}
	if h := p.worker("w1").Cache; len(h) != 1 || h[0].Kind != "dataset" || !h[0].At.Equal(p.clock.Now()) {
		t.Fatalf("w1's cache %+v, want imagenet stamped now", h)
	}
	p.clock.Add(time.Minute)
	if err := p.c.HeartbeatCache(p.ctx(), "w1", hb); err != nil {
		t.Fatal(err)
	}
	if h := p.worker("w1").Cache; !h[0].At.Equal(p.clock.Now().Add(-time.Minute)) {
		t.Errorf("an unchanged report within a quarter of the TTL moved the hint to %s", h[0].At)
	}
	p.clock.Add(15 * time.Minute)
	if err := p.c.HeartbeatCache(p.ctx(), "w1", hb); err != nil {
		t.Fatal(err)
	}
	if h := p.worker("w1").Cache; !h[0].At.Equal(p.clock.Now()) {
		t.Errorf("a report after a quarter of the TTL did not refresh the hint: %s", h[0].At)
	}
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "t", Run: "true", Dataset: "imagenet"}}})
	p.leaseUntil("w1", "the task on the worker holding its dataset", func(l api.Lease) bool { return len(l.Assignments) == 1 })

	bad := api.Heartbeat{Cache: []api.CacheHint{{Kind: "weights", Name: "x"}}}
	var fe model.FieldErrors
	if err := p.c.HeartbeatCache(p.ctx(), "w1", bad); !errors.As(err, &fe) || fe[0].Path != "cache[0].kind" {
		t.Errorf("unknown kind: %v, want an error naming cache[0].kind", err)
	}
	if err := p.c.HeartbeatCache(p.ctx(), "ghost", hb); !isNotFound(err) {
		t.Errorf("unknown worker: %v, want not found", err)
	}
}

func TestStickyTaskWaitingForABusyWorkerIsDeferredOnceAndRunsThereLater(t *testing.T) {
	p := newPlacementPlane(t, spec.Scheduling{Queues: []spec.Queue{{Name: "hi", Priority: 10}, {Name: "batch"}},
		Placement: spec.Placement{EnableStageStickiness: true}})
	p.registerCost("w2", 1)
	p.submit(spec.Job{ID: "ft", Queue: "batch", Tasks: []spec.Task{{Name: "sft", Run: "true"},
		{Name: "eval", Run: "true", Needs: []string{"sft"}, StickTo: "sft"}}})
	sft := p.leaseUntil("w2", "sft", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0].Attempt
	p.submit(spec.Job{ID: "hog", Queue: "hi", Tasks: []spec.Task{{Name: "h", Run: "sleep 1"}}})
	// sft ends: the higher queue's task takes w2 first, and eval waits
	// for w2 although w1 is free.
	if err := p.report("w2", succeeded(sft)); err != nil {
		t.Fatal(err)
	}
	h := p.leaseUntil("w2", "the hog", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0].Attempt
	p.registerCost("w1", 2)
	p.settle()
	p.settle() // many cycles pass eval over
	defs := p.events(EventTaskDeferred)
	if len(defs) != 1 || defs[0].Task != "eval" || defs[0].Worker != "w2" || defs[0].Reason != model.ReasonStickyWorkerBusy {
		t.Fatalf("task_deferred events %+v, want one for eval waiting for w2 (sticky_worker_busy)", defs)
	}
	if l := p.lease("w1"); len(l.Assignments) != 0 {
		t.Fatalf("w1 got %+v; eval must wait for w2", l.Assignments)
	}
	if err := p.report("w2", succeeded(h)); err != nil {
		t.Fatal(err)
	}
	l := p.leaseUntil("w2", "eval", func(l api.Lease) bool { return len(l.Assignments) == 1 })
	if l.Assignments[0].Task != "eval" {
		t.Fatalf("w2 got %+v, want eval", l.Assignments)
	}
	if n := len(p.events(EventTaskDeferred)); n != 1 {
		t.Errorf("%d task_deferred events, want 1", n)
	}
}

func TestDensitySeriesCountsSubmissionsStartsAndWorkersPerBucket(t *testing.T) {
	p := newPlacementPlane(t, spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}},
		Placement: spec.Placement{DensityBucket: ptr(spec.Duration(time.Minute))}})
	p.register("w1", 1)
	p.register("w2", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "a", Run: "true"}, {Name: "b", Run: "true"}, {Name: "c", Run: "true"}}})
	var first []api.Attempt
	for _, w := range []string{"w1", "w2"} {
		first = append(first, p.leaseUntil(w, "a task", func(l api.Lease) bool { return len(l.Assignments) == 1 }).Assignments[0].Attempt)
	}
	p.clock.Add(90 * time.Second) // the next bucket but one
	if err := p.report("w1", succeeded(first[0])); err != nil {
		t.Fatal(err)
	}
	p.leaseUntil("w1", "the third task", func(l api.Lease) bool { return len(l.Assignments) == 1 })
	if _, err := p.c.SetWorkerState(p.ctx(), "w2", model.WorkerDisabled); err != nil {
		t.Fatal(err)
	}
	p.settle()
	d := p.c.Density()
	if d.BucketSeconds != 60 || len(d.Buckets) != 2 {
		t.Fatalf("density %+v, want two 60 s buckets", d)
	}
	start := newFakeClock().Now()
	want := []api.DensityBucket{
		{Start: start, Submitted: 3, Started: 2, ActiveWorkers: 2, PeakActiveWorkers: 2, EnabledWorkers: 2},
		{Start: start.Add(time.Minute), Started: 1, ActiveWorkers: 2, PeakActiveWorkers: 2, EnabledWorkers: 1},
	}
	for i := range want {
		if d.Buckets[i] != want[i] {
			t.Errorf("bucket %d: %+v, want %+v", i, d.Buckets[i], want[i])
		}
	}
}

func TestDensityBucketOutsideItsRangeIsRefusedNamingTheField(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, b := range []time.Duration{0, 500 * time.Millisecond, 25 * time.Hour} {
		_, err := New(context.Background(), Config{Scheduling: spec.Scheduling{
			Placement: spec.Placement{DensityBucket: ptr(spec.Duration(b))}}}, st)
		if err == nil || !strings.Contains(err.Error(), "placement.densityBucket") {
			t.Errorf("densityBucket %s: %v, want an error naming placement.densityBucket", b, err)
		}
	}
}

func TestWhoDisabledAWorkerSurvivesARestartAndTheCoordinatorLeavesUnregisteredWorkersAlone(t *testing.T) {
	sched := elasticConfig(1)
	p := newPlacementPlane(t, sched)
	p.register("w1", 1)
	p.register("w2", 1)
	p.register("w3", 1)
	if _, err := p.c.SetWorkerState(p.ctx(), "w3", model.WorkerDisabled); err != nil {
		t.Fatal(err)
	}
	p.clock.Add(90 * time.Second)
	p.settle()
	want := map[string]string{"w1": "disabled/elastic", "w2": "ready", "w3": "disabled/manual"}
	if got := p.states(); !sameMap(got, want) {
		t.Fatalf("before the restart: %v, want %v", got, want)
	}
	p.restart()
	// Only w2 comes back; the coordinator must not count w1 and w3, held
	// disabled until they register, as its own to enable.
	p.register("w2", 1)
	p.submit(spec.Job{ID: "j", Tasks: []spec.Task{{Name: "a", Run: "true"}, {Name: "b", Run: "true"}}})
	p.clock.Add(5 * time.Minute)
	p.settle()
	if got := p.states(); !sameMap(got, want) {
		t.Errorf("after the restart: %v, want %v", got, want)
	}
	if fc := p.c.FleetCost(); fc.EnabledWorkers != 1 || fc.DisabledByElastic != 1 || fc.DisabledByManual != 1 {
		t.Errorf("fleet cost after the restart %+v, want 1 enabled, 1 disabled by each", fc)
	}
}

// A worker an operator disabled stays disabled, through a restart too,
// however much work queues: the coordinator enables only what it disabled.
func TestTheCoordinatorLeavesAManuallyDisabledWorkerAlone(t *testing.T) {
	p := newPlacementPlane(t, elasticConfig(1))
	for _, n := range []string{"w1", "w2", "w3"} {
		p.register(n, 1)
	}
	if _, err := p.c.ToggleElastic(p.ctx(), "w3", false); err != nil {
		t.Fatal(err)
	}
	p.clock.Add(90 * time.Second) // w1 or w2 idle long enough: the coordinator disables one
	p.settle()
	want := map[string]string{"w1": "disabled/elastic", "w2": "ready", "w3": "disabled/manual"}
	if got := p.states(); !sameMap(got, want) {
		t.Fatalf("after the idle poll: %v, want %v", got, want)
	}
	for _, restart := range []bool{false, true} {
		if restart {
			p.restart()
			for _, n := range []string{"w1", "w2", "w3"} {
				p.register(n, 1)
			}
		}
		p.submit(spec.Job{ID: fmt.Sprintf("burst-%t", restart), Tasks: []spec.Task{
			{Name: "t", Count: 6, Run: "true"}}})
		p.clock.Add(5 * time.Minute) // well past the cooldown
		p.settle()
		if got := p.states(); got["w3"] != "disabled/manual" || got["w1"] != "ready" {
			t.Errorf("restart %t: queue above the threshold: %v, want w1 enabled again and w3 still disabled by hand", restart, got)
		}
	}
}

// Only a toggle (an operator's, or the coordinator's) starts the toggle
// cooldown: a worker that registers, or registers again after a restart of
// the server or after it said it stops, may be toggled at once.
func TestARegistrationIsNoToggle(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before func(p *plane)
	}{
		{"first registration", func(*plane) {}},
		{"registered again after a restart", func(p *plane) {
			p.register("w-1", 1)
			p.clock.Add(time.Hour)
			p.restart()
		}},
		{"registered again after a stopping notice", func(p *plane) {
			p.register("w-1", 1)
			p.clock.Add(time.Hour)
			if err := p.c.Stopping(p.ctx(), "w-1"); err != nil {
				p.t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Enough workers wanted that the coordinator disables none.
			p := newPlacementPlane(t, elasticConfig(5))
			tc.before(p)
			p.register("w-1", 1)
			p.clock.Add(7 * time.Second)
			if _, err := p.c.ToggleElastic(p.ctx(), "w-1", false); err != nil {
				t.Fatalf("toggle 7 s after the registration: %v", err)
			}
			// The toggle itself starts the cooldown.
			p.clock.Add(7 * time.Second)
			if _, err := p.c.ToggleElastic(p.ctx(), "w-1", true); !errors.Is(err, ErrConflict) {
				t.Errorf("toggle 7 s after a toggle: %v, want the cooldown's conflict", err)
			}
		})
	}
}
