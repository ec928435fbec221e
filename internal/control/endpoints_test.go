package control

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

// newPlaneWith is newPlane with a scheduling configuration of its own;
// restartWith restarts it with a configuration (the same, or one an
// operator edited).
func newPlaneWith(t *testing.T, sched spec.Scheduling) *plane {
	return newPlaneConfig(t, Config{Scheduling: sched, HeartbeatTimeout: time.Hour})
}

func restartWith(p *plane, sched spec.Scheduling) {
	p.t.Helper()
	p.cfg.Scheduling = sched
	p.restart()
}

func pct(f float64) *float64 { return &f }

// detConfig has one instance-backed endpoint det of instances × 2
// concurrent requests.
func detConfig(instances int) spec.Scheduling {
	return spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}},
		Endpoints: []spec.Endpoint{{Name: "det", Type: "instance-backed", Instances: instances, InstanceConcurrency: 2}}}
}

func endpointJob(id string, load int, inputs ...string) spec.Job {
	return spec.Job{ID: id, Endpoint: "det", Load: load, Inputs: inputs, Tasks: []spec.Task{{Name: "t", Run: "true"}}}
}

// stats returns the last cycle's metrics of endpoint name's only (or
// first) variant, waiting until cond holds for them.
func (p *plane) variantStats(name string, what string, cond func(api.VariantStats) bool) api.VariantStats {
	p.t.Helper()
	deadline := time.Now().Add(testTimeout)
	var last api.VariantStats
	for {
		for _, e := range p.c.Endpoints().Endpoints {
			if e.Name == name && e.Stats != nil && len(e.Stats.Variants) > 0 {
				last = e.Stats.Variants[0]
				if cond(last) {
					return last
				}
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("endpoint %s: timed out waiting for %s; last %+v", name, what, last)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRuntimeEndpointChangeTakesEffectAtTheNextCycle(t *testing.T) {
	p := newPlaneWith(t, detConfig(1))
	p.register("w1", 8)
	for _, id := range []string{"a", "b", "c"} {
		p.submit(endpointJob(id, 2))
	}
	steps := []struct {
		name        string
		instances   int
		wantTarget  int
		wantRunning int // admitted jobs
	}{
		{"configured: 1 instance × 2", 1, 2, 1},
		{"autoscaled to 3 instances", 3, 6, 3},
		{"scaled down to 1: admitted jobs keep their load", 1, 2, 3},
	}
	for i, s := range steps {
		if i > 0 {
			e := spec.Endpoint{Type: "instance-backed", Instances: s.instances, InstanceConcurrency: 2}
			if _, err := p.c.SetEndpoint(p.ctx(), "det", e); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
		}
		vs := p.variantStats("det", s.name, func(v api.VariantStats) bool {
			return v.TargetCapacity == s.wantTarget && v.RunningJobs == s.wantRunning
		})
		if vs.Load != 2*s.wantRunning || vs.Available != s.wantTarget-vs.Load {
			t.Errorf("%s: load %d available %d, want %d and %d", s.name, vs.Load, vs.Available, 2*s.wantRunning, s.wantTarget-2*s.wantRunning)
		}
	}
	// The admitted jobs' tasks were handed to the worker.
	p.leaseUntil("w1", "the three jobs' tasks", func(l api.Lease) bool { return len(l.Assignments) == 3 })
	for _, id := range []string{"a", "b", "c"} {
		a := p.job(id).Admission
		if a == nil || a.State != api.AdmissionAdmitted || a.Endpoint != "det" || a.Load != 2 {
			t.Errorf("job %s admission %+v, want admitted on det with load 2", id, a)
		}
	}
	if n := len(p.events(EventJobAdmitted)); n != 3 {
		t.Errorf("%d job_admitted events, want 3", n)
	}
	th := p.events(EventJobThrottled)
	if len(th) != 2 || !strings.Contains(th[0].Message, `endpoint "det": available 0 of target 2, job load 2`) {
		t.Errorf("job_throttled events %+v, want 2 naming endpoint, available, target and load", th)
	}
	if n := len(p.events(EventEndpointChanged)); n != 2 {
		t.Errorf("%d endpoint_changed events, want 2", n)
	}
}

func TestBadEndpointAndThrottlingChangesNameTheFieldAndChangeNothing(t *testing.T) {
	p := newPlaneWith(t, detConfig(1))
	before := p.c.Endpoints()
	w := 0.0
	cases := []struct {
		name  string
		apply func() error
		field string
	}{
		{"negative instances", func() error {
			_, err := p.c.SetEndpoint(p.ctx(), "det", spec.Endpoint{Type: "instance-backed", Instances: -1})
			return err
		}, "instances"},
		{"negative concurrency", func() error {
			_, err := p.c.SetEndpoint(p.ctx(), "det", spec.Endpoint{Type: "instance-backed", Instances: 1, InstanceConcurrency: -2})
			return err
		}, "instanceConcurrency"},
		{"all-zero weights", func() error {
			_, err := p.c.SetEndpoint(p.ctx(), "det", spec.Endpoint{Type: "serverless", Variants: []spec.Variant{
				{Name: "a", Weight: &w, MaxConcurrency: 1}, {Name: "b", Weight: &w, MaxConcurrency: 1}}})
			return err
		}, "variants"},
		{"serverless without capacity", func() error {
			_, err := p.c.SetEndpoint(p.ctx(), "det", spec.Endpoint{Type: "serverless"})
			return err
		}, "maxConcurrency"},
		{"name differs from the path", func() error {
			_, err := p.c.SetEndpoint(p.ctx(), "det", spec.Endpoint{Name: "other", Type: "http"})
			return err
		}, "name"},
		{"target percentage above 1.5", func() error {
			_, err := p.c.SetThrottling(p.ctx(), spec.Throttling{CapacityTargetPercentage: pct(1.6)})
			return err
		}, "capacityTargetPercentage"},
		{"negative tile workers", func() error {
			_, err := p.c.SetThrottling(p.ctx(), spec.Throttling{TileWorkersPerInstance: -1})
			return err
		}, "tileWorkersPerInstance"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.apply()
			var list model.FieldErrors
			if !errors.As(err, &list) || len(list) == 0 || list[0].Path != tc.field {
				t.Fatalf("error %v, want a field error on %s", err, tc.field)
			}
		})
	}
	after := p.c.Endpoints()
	if *after.Throttling.CapacityTargetPercentage != 1 || len(after.Endpoints) != 1 || after.Endpoints[0].Config.Instances != before.Endpoints[0].Config.Instances {
		t.Errorf("a refused change changed something: %+v", after)
	}
	if n := len(p.events(EventEndpointChanged)) + len(p.events(EventThrottlingChanged)); n != 0 {
		t.Errorf("%d change events for refused changes", n)
	}
	if err := p.c.RemoveEndpoint(p.ctx(), "nope"); !isNotFound(err) {
		t.Errorf("removing an unknown endpoint: %v, want not found", err)
	}
}

func TestInaccessibleInputIsDeadLetteredWithoutCapacityAndRedriven(t *testing.T) {
	var up atomic.Bool
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer web.Close()
	dir := t.TempDir()
	missing := filepath.Join(dir, "scene.tif")
	cases := []struct {
		name   string
		input  string
		reason string // in the dead-letter reason
		fix    func()
	}{
		{"missing file", missing, "no such file", func() {
			if err := os.WriteFile(missing, []byte("II*\x00rest of a tiff"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"HTTP 404", web.URL + "/scene.ntf", "HTTP 404", func() { up.Store(true) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlaneWith(t, detConfig(1))
			p.register("w1", 4)
			j, err := p.c.Submit(p.ctx(), endpointJob("img", 2, tc.input))
			if err != nil {
				t.Fatal(err)
			}
			if j.State != JobDeadLettered || j.Admission == nil || !strings.Contains(j.Admission.Reason.Message, tc.reason) {
				t.Fatalf("submitted: state %s admission %+v, want dead-lettered for %q", j.State, j.Admission, tc.reason)
			}
			dl, err := p.c.DeadLetters(p.ctx())
			if err != nil {
				t.Fatal(err)
			}
			if len(dl.DeadLetters) != 1 || dl.DeadLetters[0].Job != "img" || dl.DeadLetters[0].Reason.Code != "input_inaccessible" {
				t.Fatalf("dead letters %+v", dl)
			}
			vs := p.variantStats("det", "the dead letter counted as an error", func(v api.VariantStats) bool { return v.Errors == 1 })
			if vs.Load != 0 || vs.Buffered != 0 || vs.Visible != 0 {
				t.Errorf("a dead letter takes capacity: %+v", vs)
			}
			if got := p.job("img"); got.State != JobDeadLettered || got.Admission == nil || got.Admission.State != api.AdmissionDeadLettered {
				t.Errorf("job view %+v, want dead-lettered", got)
			}
			// Still inaccessible: back on the list.
			r, err := p.c.Redrive(p.ctx(), "img")
			if err != nil || r.Redriven {
				t.Fatalf("redrive before the fix: %+v %v, want still dead-lettered", r, err)
			}
			tc.fix()
			r, err = p.c.Redrive(p.ctx(), "img")
			if err != nil || !r.Redriven {
				t.Fatalf("redrive after the fix: %+v %v", r, err)
			}
			p.leaseUntil("w1", "the redriven job's task", func(l api.Lease) bool { return len(l.Assignments) == 1 })
			if dl, _ := p.c.DeadLetters(p.ctx()); len(dl.DeadLetters) != 0 {
				t.Errorf("dead letters after the redrive: %+v", dl)
			}
			if _, err := p.c.Redrive(p.ctx(), "img"); !errors.Is(err, ErrConflict) {
				t.Errorf("redriving a running job: %v, want conflict", err)
			}
			if n, m := len(p.events(EventJobDeadLettered)), len(p.events(EventJobRedriven)); n != 2 || m != 1 {
				t.Errorf("%d job_dead_lettered and %d job_redriven events, want 2 and 1", n, m)
			}
		})
	}
}

func TestEndpointsThrottlingDeadLettersAndVariantsSurviveARestart(t *testing.T) {
	one, zero := 1.0, 0.0
	cfg := spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}, Endpoints: []spec.Endpoint{
		{Name: "ab", Type: "serverless", Variants: []spec.Variant{{Name: "a", Weight: &one, MaxConcurrency: 1}, {Name: "b", Weight: &zero, MaxConcurrency: 1}}},
		{Name: "det", Type: "instance-backed", Instances: 1, InstanceConcurrency: 2},
		{Name: "old", Type: "http"},
	}}
	p := newPlaneWith(t, cfg)
	// Weights 1:0 send every job to a; after the weights flip, a job
	// drawn again would go to b.
	for _, id := range []string{"j1", "j2", "j3"} {
		p.submit(spec.Job{ID: id, Endpoint: "ab", Load: 1, Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	}
	if _, err := p.c.SetEndpoint(p.ctx(), "ab", spec.Endpoint{Type: "serverless", Variants: []spec.Variant{
		{Name: "a", Weight: &zero, MaxConcurrency: 1}, {Name: "b", Weight: &one, MaxConcurrency: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.SetEndpoint(p.ctx(), "det", spec.Endpoint{Type: "instance-backed", Instances: 3, InstanceConcurrency: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.SetEndpoint(p.ctx(), "new", spec.Endpoint{Type: "serverless", MaxConcurrency: 7}); err != nil {
		t.Fatal(err)
	}
	if err := p.c.RemoveEndpoint(p.ctx(), "old"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.SetThrottling(p.ctx(), spec.Throttling{CapacityTargetPercentage: pct(0.5)}); err != nil {
		t.Fatal(err)
	}
	p.submit(endpointJob("dead", 1, filepath.Join(t.TempDir(), "gone.tif")))

	restartWith(p, cfg)

	for _, id := range []string{"j1", "j2", "j3"} {
		if a := p.job(id).Admission; a == nil || a.Variant != "a" {
			t.Errorf("job %s after the restart: admission %+v, want the variant drawn at submission (a)", id, a)
		}
	}
	l := p.c.Endpoints()
	if got := *l.Throttling.CapacityTargetPercentage; got != 0.5 {
		t.Errorf("target percentage after the restart %g, want 0.5", got)
	}
	names := map[string]*spec.Endpoint{}
	for _, e := range l.Endpoints {
		names[e.Name] = e.Config
	}
	if det := names["det"]; det == nil || det.Instances != 3 {
		t.Errorf("det after the restart: %+v, want 3 instances", det)
	}
	if n := names["new"]; n == nil || n.MaxConcurrency != 7 {
		t.Errorf("new after the restart: %+v", n)
	}
	if o, ok := names["old"]; ok && o != nil {
		t.Errorf("old is configured again after the restart: %+v", o)
	}
	if ab := names["ab"]; ab == nil || *ab.Variants[1].Weight != 1 {
		t.Errorf("ab after the restart: %+v, want the flipped weights", ab)
	}
	dl, err := p.c.DeadLetters(p.ctx())
	if err != nil {
		t.Fatal(err)
	}
	if len(dl.DeadLetters) != 1 || dl.DeadLetters[0].Job != "dead" || !strings.Contains(dl.DeadLetters[0].Reason.Message, "no such file") {
		t.Errorf("dead letters after the restart: %+v", dl)
	}
	if n := len(p.events(EventJobDeadLettered)); n != 1 {
		t.Errorf("%d job_dead_lettered events after the restart, want the 1 of the submission", n)
	}
	// A new job of ab draws with the weights in force: b.
	p.submit(spec.Job{ID: "j4", Endpoint: "ab", Load: 1, Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	if a := p.job("j4").Admission; a == nil || a.Variant != "b" {
		t.Errorf("a new job after the restart: %+v, want variant b", a)
	}

	// The operator edits the configuration of det: the file wins over the
	// run-time change; the other changes stay.
	edited := cfg
	edited.Endpoints = append([]spec.Endpoint(nil), cfg.Endpoints...)
	edited.Endpoints[1].Instances = 5
	restartWith(p, edited)
	for _, e := range p.c.Endpoints().Endpoints {
		if e.Name == "det" && e.Config.Instances != 5 {
			t.Errorf("det after the configuration changed: %d instances, want the file's 5", e.Config.Instances)
		}
		if e.Name == "new" && e.Config == nil {
			t.Errorf("new was lost when det's configuration changed")
		}
	}
}

func TestJobNamingAnEndpointAddedAtRunTimeIsAccepted(t *testing.T) {
	p := newPlaneWith(t, detConfig(1))
	js := spec.Job{ID: "x", Endpoint: "llm", Load: 1, Tasks: []spec.Task{{Name: "t", Run: "true"}}}
	if err := p.c.CheckJob(js); err == nil || !strings.Contains(err.Error(), `no endpoint "llm"`) {
		t.Fatalf("a job naming an unknown endpoint: %v", err)
	}
	if _, err := p.c.SetEndpoint(p.ctx(), "llm", spec.Endpoint{Type: "http"}); err != nil {
		t.Fatal(err)
	}
	p.submit(js)
	if a := p.job("x").Admission; a == nil || a.Endpoint != "llm" {
		t.Errorf("admission %+v", a)
	}
	// Removed while the job waits or runs, it survives a restart with
	// capacity 0.
	if err := p.c.RemoveEndpoint(p.ctx(), "llm"); err != nil {
		t.Fatal(err)
	}
	restartWith(p, detConfig(1))
	if a := p.job("x").Admission; a == nil || a.Endpoint != "llm" {
		t.Errorf("after the restart, admission %+v", a)
	}
	for _, e := range p.c.Endpoints().Endpoints {
		if e.Name == "llm" && e.Config != nil {
			t.Errorf("llm is configured again after the restart")
		}
	}
}

// A dead-lettered job keeps its ID: a second job under it is refused and
// the first is kept as it was, whether or not it was stored yet.
func TestASecondJobUnderADeadLetteredIDIsRefused(t *testing.T) {
	p := newPlaneWith(t, detConfig(1))
	missing := filepath.Join(t.TempDir(), "scene.tif")
	if j, err := p.c.Submit(p.ctx(), endpointJob("img", 2, missing)); err != nil || j.State != JobDeadLettered {
		t.Fatalf("first submission: %+v %v, want dead-lettered", j, err)
	}
	for _, twin := range []spec.Job{endpointJob("img", 1), endpointJob("img", 1, missing)} {
		if _, err := p.c.Submit(p.ctx(), twin); !errors.Is(err, ErrConflict) {
			t.Errorf("a second job img (inputs %v): %v, want a conflict", twin.Inputs, err)
		}
	}
	// Twins in one loop round: the first is not stored yet when the
	// second comes.
	_, err := p.c.do(p.ctx(), func(tx *txn) (any, error) {
		if _, err := p.c.submit(p.ctx(), tx, endpointJob("twin", 2, missing), "", "no such file", false, 0); err != nil {
			t.Errorf("first twin: %v", err)
		}
		return p.c.submit(p.ctx(), tx, endpointJob("twin", 1), "", "", false, 0)
	})
	if !errors.Is(err, ErrConflict) {
		t.Errorf("a second job twin in the same round: %v, want a conflict", err)
	}
	for _, id := range []string{"img", "twin"} {
		j := p.job(id)
		if j.State != JobDeadLettered || j.Spec == nil || j.Spec.Load != 2 {
			t.Errorf("%s after the refused twins: state %s spec %+v, want the first job, dead-lettered with load 2", id, j.State, j.Spec)
		}
	}
}

// A job throttled before a restart is throttled since then after it: its
// anti-starvation wait goes on rather than starting over.
func TestThrottleTimeSurvivesARestart(t *testing.T) {
	p := newPlaneWith(t, detConfig(1)) // target 2
	p.register("w1", 4)
	p.submit(endpointJob("a", 2))
	p.submit(endpointJob("b", 2))
	p.variantStats("det", "b throttled", func(v api.VariantStats) bool { return v.Throttles == 1 })
	before := p.job("b").Admission
	if before == nil || before.ThrottledSince == nil {
		t.Fatalf("b's admission %+v, want throttled", before)
	}
	p.clock.Add(2 * time.Minute)
	restartWith(p, detConfig(1))
	a := p.task("a", "t")
	p.register("w1", 4, api.Attempt{Job: "a", Task: "t", Attempt: a.Attempt})
	p.variantStats("det", "b throttled again", func(v api.VariantStats) bool { return v.Throttles == 1 && v.Visible == 1 })
	after := p.job("b").Admission
	if after == nil || after.ThrottledSince == nil || !after.ThrottledSince.Equal(*before.ThrottledSince) {
		t.Errorf("after the restart b is throttled since %v, want %v", after.ThrottledSince, *before.ThrottledSince)
	}
}

// A dead letter restored after a restart keeps its time and is not counted
// or logged again: the list stays oldest first across restarts.
func TestDeadLetterKeepsItsTimeAcrossARestart(t *testing.T) {
	p := newPlaneWith(t, detConfig(1))
	missing := filepath.Join(t.TempDir(), "scene.tif")
	if _, err := p.c.Submit(p.ctx(), endpointJob("img", 1, missing)); err != nil {
		t.Fatal(err)
	}
	before, err := p.c.DeadLetters(p.ctx())
	if err != nil || len(before.DeadLetters) != 1 {
		t.Fatalf("dead letters %+v %v", before, err)
	}
	p.clock.Add(time.Hour)
	restartWith(p, detConfig(1))
	after, err := p.c.DeadLetters(p.ctx())
	if err != nil || len(after.DeadLetters) != 1 || !after.DeadLetters[0].At.Equal(before.DeadLetters[0].At) {
		t.Fatalf("after the restart %+v %v, want the entry of %v", after, err, before.DeadLetters[0].At)
	}
	p.register("w1", 1) // a round with a cycle publishes the snapshot
	vs := p.variantStats("det", "a cycle after the restart", func(api.VariantStats) bool { return true })
	if vs.Errors != 0 {
		t.Errorf("the restored dead letter is counted again: %d errors since the restart", vs.Errors)
	}
	if n := len(p.events(EventJobDeadLettered)); n != 1 {
		t.Errorf("%d job_dead_lettered events, want 1", n)
	}
}
