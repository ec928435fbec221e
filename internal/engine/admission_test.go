package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/admit"
	"github.com/allot-sched/allot/internal/model"
)

// admissionCfg is a config with the seed's default settings and eps.
func admissionCfg(eps ...model.Endpoint) Config {
	return Config{Seed: 1, Admission: admit.Config{Settings: admit.Defaults(), Endpoints: eps}}
}

func instanceEP(name string, instances, conc int) model.Endpoint {
	return model.Endpoint{Name: name, Type: model.EndpointInstanceBacked, Instances: instances, InstanceConcurrency: conc}
}

func (b *jobB) endpoint(ep, variant string, load int) *jobB {
	b.j.Endpoint, b.j.Variant, b.j.Load = ep, variant, load
	return b
}

func workers(n int) []Event {
	var out []Event
	for i := range n {
		out = append(out, newWorker(fmt.Sprintf("w%02d", i)).add())
	}
	return out
}

func TestEndpointJobsAreAdmittedAgainstCapacity(t *testing.T) {
	// det: 3 instances × 5 = 15.
	e := engineWith(t, admissionCfg(instanceEP("det", 3, 5)), workers(8)...)
	mustApply(t, e, newJob("a").endpoint("det", "", 10).task("x").task("y", "x").submit())
	mustApply(t, e, newJob("b").endpoint("det", "", 8).task("x").submit())
	mustApply(t, e, newJob("c").endpoint("det", "", 5).task("x").submit())
	mustApply(t, e, newJob("plain").task("x").submit())
	d := e.Cycle(t0)
	if !same(d.Admitted, []string{"a", "c"}) || len(d.Throttled) != 1 || d.Throttled[0].Job != "b" {
		t.Fatalf("admitted %v throttled %+v", d.Admitted, d.Throttled)
	}
	if !same(startsOf(d), []string{"a/x@w00", "c/x@w01", "plain/x@w02"}) {
		t.Fatalf("starts %v", startsOf(d))
	}
	p := onlyPending(t, d, "b")
	want := `endpoint "det": available 0 of target 15, job load 8 (2 jobs running)`
	if p.Reason.Code != model.ReasonThrottled || p.Reason.Message != want || p.Tasks != 1 {
		t.Errorf("pending %+v, want %q", p, want)
	}
	if r, ok := e.TaskReason("b", "x"); !ok || r.Message != want {
		t.Errorf("TaskReason = %+v", r)
	}
	// a's load is held until its last task ends, not its first.
	mustApply(t, e, finishOK("a", "x"))
	d = e.Cycle(t0.Add(time.Minute))
	if len(d.Admitted) != 0 || !same(startsOf(d), []string{"a/y@w00"}) {
		t.Fatalf("after a/x: admitted %v, starts %v", d.Admitted, startsOf(d))
	}
	mustApply(t, e, finishOK("a", "y"))
	d = e.Cycle(t0.Add(2 * time.Minute))
	if !same(d.Admitted, []string{"b"}) || !same(startsOf(d), []string{"b/x@w00"}) {
		t.Fatalf("after a ended: admitted %v, starts %v", d.Admitted, startsOf(d))
	}
	if info, ok := e.Admission("b"); !ok || !info.Admitted || info.Load != 8 || info.LoadSource != admit.LoadExplicit ||
		!info.AdmittedAt.Equal(t0.Add(2*time.Minute)) || !info.ThrottledAt.Equal(t0) {
		t.Errorf("admission of b: %+v", info)
	}
	if _, ok := e.Admission("a"); ok {
		t.Error("ended job a still has an admission record")
	}
	st := e.EndpointStats()
	if len(st) != 1 || st[0].Load != 13 || st[0].Variants[0].Throttles != 1 || st[0].Variants[0].Admitted != 3 {
		t.Errorf("stats %+v", st)
	}
}

func TestSingleJobExceptionStartsAJobLargerThanTheEndpoint(t *testing.T) {
	e := engineWith(t, admissionCfg(instanceEP("det", 3, 5)), workers(2)...)
	mustApply(t, e, newJob("huge").endpoint("det", "", 40).task("x").submit())
	mustApply(t, e, newJob("small").endpoint("det", "", 1).task("x").submit())
	d := e.Cycle(t0)
	if !same(d.Admitted, []string{"huge"}) || !same(startsOf(d), []string{"huge/x@w00"}) {
		t.Fatalf("admitted %v, starts %v", d.Admitted, startsOf(d))
	}
	if info, _ := e.Admission("huge"); !info.Exception {
		t.Error("not marked as the single-job exception")
	}
	if p := onlyPending(t, d, "small"); p.Reason.Message != `endpoint "det": available 0 of target 15, job load 1 (1 job running)` {
		t.Errorf("pending %+v", p)
	}
}

func TestCancelReleasesTheLoad(t *testing.T) {
	e := engineWith(t, admissionCfg(instanceEP("det", 1, 4)), workers(4)...)
	mustApply(t, e, newJob("a").endpoint("det", "", 4).task("x").submit())
	mustApply(t, e, newJob("b").endpoint("det", "", 4).task("x").submit())
	mustApply(t, e, newJob("c").endpoint("det", "", 4).task("x").submit())
	e.Cycle(t0)
	mustApply(t, e, CancelJob{Job: "b", At: t0}) // waiting: leaves the queue
	mustApply(t, e, CancelJob{Job: "a", At: t0}) // admitted: frees 4
	d := e.Cycle(t0.Add(time.Second))
	if !same(d.Admitted, []string{"c"}) {
		t.Fatalf("admitted %v, want c", d.Admitted)
	}
	if st := e.EndpointStats()[0]; st.Load != 4 || st.Visible != 0 || st.RunningJobs != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestPendingReasonNamesEndpointVariantCapacityAndLoad(t *testing.T) {
	// v2: 40 instances × 2 = 80, target 80; twelve jobs of load 6 run.
	ep := model.Endpoint{Name: "det", Type: model.EndpointInstanceBacked, Variants: []model.Variant{
		{Name: "v1", Weight: 1, Instances: 1}, {Name: "v2", Weight: 1, Instances: 40}}}
	e := engineWith(t, admissionCfg(ep), workers(20)...)
	for i := range 12 {
		mustApply(t, e, newJob(fmt.Sprint("r", i)).endpoint("det", "v2", 6).task("x").submit())
	}
	job := newJob("img").endpoint("det", "v2", 0).task("x")
	job.j.Regions = 8 // 8 regions × 4 tile workers = 32
	mustApply(t, e, job.submit())
	d := e.Cycle(t0)
	want := `endpoint "det" variant "v2": available 8 of target 80, job load 32 (12 jobs running)`
	if p := onlyPending(t, d, "img"); p.Reason.Code != model.ReasonThrottled || p.Reason.Message != want {
		t.Errorf("pending %+v\nwant %q", p.Reason, want)
	}
}

func TestUnknownEndpointOrVariantIsRefusedAndChangesNothing(t *testing.T) {
	setup := func(t *testing.T) *Engine {
		ep := model.Endpoint{Name: "ab", Type: model.EndpointHTTP, Variants: []model.Variant{{Name: "v1", Weight: 1}, {Name: "v2", Weight: 1}}}
		return engineWith(t, admissionCfg(ep), newWorker("w").add(), newJob("j").endpoint("ab", "", 1).task("x").submit())
	}
	cases := []struct {
		name  string
		job   *jobB
		want  error
		field string
		path  string // the field error's path, as data
	}{
		{"unknown endpoint", newJob("n").endpoint("nope", "", 1).task("x"), ErrUnknownEndpoint, `job "n": endpoint: invalid: unknown endpoint "nope"`, "endpoint"},
		{"unknown variant", newJob("n").endpoint("ab", "v3", 1).task("x"), ErrUnknownVariant, `job "n": variant: invalid: unknown variant "v3"`, "variant"},
		{"variant without endpoint", newJob("n").endpoint("", "v1", 1).task("x"), ErrInvalid, `job "n": variant:`, "variant"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, twin := setup(t), setup(t)
			err := e.Apply(tc.job.submit())
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err = %v, want %v naming %q", err, tc.want, tc.field)
			}
			var fe *model.FieldError
			if !errors.As(err, &fe) || fe.Path != tc.path {
				t.Fatalf("err = %#v, want a field error at %q", err, tc.path)
			}
			if got, want := decisionsJSON(t, e.Cycle(t0)), decisionsJSON(t, twin.Cycle(t0)); got != want {
				t.Fatalf("state changed:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestDeadLetterAndRedrive(t *testing.T) {
	e := engineWith(t, admissionCfg(instanceEP("det", 1, 4)), workers(2)...)
	bad := newJob("bad").endpoint("det", "", 4).task("x").j
	bad.Inputs = []string{"s3://bucket/corrupt.ntf"}
	mustApply(t, e, DeadLetter{Job: bad, Reason: `input "s3://bucket/corrupt.ntf": corrupted file`, At: t0})
	mustApply(t, e, newJob("good").endpoint("det", "", 4).task("x").submit())
	d := e.Cycle(t0)
	// The dead letter took no capacity: good, of load 4 = the target, runs.
	if !same(d.DeadLettered, []string{"bad"}) || !same(d.Admitted, []string{"good"}) || len(pendingOf(d, "bad")) != 0 {
		t.Fatalf("dead-lettered %v admitted %v pending %+v", d.DeadLettered, d.Admitted, d.Pending)
	}
	dl := e.DeadLetters()
	if len(dl) != 1 || dl[0].Job.ID != "bad" || dl[0].Reason.Code != model.ReasonInputInaccessible ||
		!strings.Contains(dl[0].Reason.Message, "corrupted file") || !dl[0].At.Equal(t0) {
		t.Fatalf("dead letters %+v", dl)
	}
	if st := e.EndpointStats()[0]; st.Errors != 1 || st.DeadLetters != 1 || st.Load != 4 {
		t.Errorf("stats %+v", st)
	}
	if _, _, ok := e.TaskState("bad", "x"); ok {
		t.Error("a dead-lettered job's task is known to the scheduler")
	}
	if err := e.Apply(DeadLetter{Job: newJob("good").task("x").j, Reason: "x"}); !errors.Is(err, ErrDuplicate) {
		t.Errorf("dead-lettering a live job: %v", err)
	}
	if err := e.Apply(newJob("bad").endpoint("det", "", 1).task("y").submit()); !errors.Is(err, ErrDuplicate) {
		t.Errorf("submitting a job under a dead-lettered job's ID: %v, want ErrDuplicate", err)
	}
	if d, ok := e.DeadLettered("bad"); !ok || d.Job.Tasks[0].Name != "x" {
		t.Errorf("the dead letter after a refused twin: %+v %v, want the first job kept", d, ok)
	}
	if err := e.Apply(Redrive{Job: "nope"}); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("redriving an unknown job: %v", err)
	}
	// Redriven, the job is submitted again and waits for capacity.
	at := t0.Add(time.Hour)
	mustApply(t, e, Redrive{Job: "bad", At: at})
	if len(e.DeadLetters()) != 0 {
		t.Error("still on the dead-letter list after the redrive")
	}
	d = e.Cycle(at)
	if p := onlyPending(t, d, "bad"); p.Reason.Code != model.ReasonThrottled {
		t.Errorf("redriven job pending %+v", p)
	}
	if info, ok := e.Admission("bad"); !ok || !info.Submitted.Equal(at) {
		t.Errorf("redriven job admission %+v", info)
	}
}

func TestRestoredRunningEndpointJobHoldsItsLoad(t *testing.T) {
	e := engineWith(t, admissionCfg(instanceEP("det", 1, 4)), workers(2)...)
	mustApply(t, e, newJob("old").endpoint("det", "", 3).task("x").submit())
	mustApply(t, e, newJob("new").endpoint("det", "", 3).task("x").submit())
	mustApply(t, e, RestoreRunning{Job: "old", Task: "x", Worker: "w00", Started: t0})
	d := e.Cycle(t0)
	if len(d.Admitted) != 0 || len(d.Starts) != 0 {
		t.Fatalf("admitted %v starts %v: old's load 3 of target 4 leaves no room for 3", d.Admitted, startsOf(d))
	}
	if info, _ := e.Admission("old"); !info.Admitted {
		t.Error("restored job not admitted")
	}
}

func TestSetEndpointScalesCapacity(t *testing.T) {
	e := engineWith(t, admissionCfg(instanceEP("det", 1, 2)), workers(4)...)
	mustApply(t, e, newJob("a").endpoint("det", "", 2).task("x").submit())
	mustApply(t, e, newJob("b").endpoint("det", "", 2).task("x").submit())
	if d := e.Cycle(t0); !same(d.Admitted, []string{"a"}) {
		t.Fatalf("admitted %v", d.Admitted)
	}
	mustApply(t, e, SetEndpoint{Endpoint: instanceEP("det", 2, 2), At: t0})
	if d := e.Cycle(t0.Add(time.Second)); !same(d.Admitted, []string{"b"}) {
		t.Fatalf("after scaling out: admitted %v", d.Admitted)
	}
	if err := e.Apply(SetEndpoint{Endpoint: model.Endpoint{Name: "det", Type: model.EndpointInstanceBacked, Instances: -2}}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "instances") {
		t.Errorf("negative instances: %v", err)
	}
	s := admit.Defaults()
	s.CapacityTargetPercentage = 2
	if err := e.Apply(SetThrottling{Settings: s}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "capacityTargetPercentage") {
		t.Errorf("target 2: %v", err)
	}
	if err := e.Apply(EndpointError{Endpoint: "det"}); err != nil {
		t.Fatal(err)
	}
	if st := e.EndpointStats()[0]; st.Errors != 1 || st.MaxCapacity != 4 {
		t.Errorf("stats %+v", st)
	}
	mustApply(t, e, RemoveEndpoint{Name: "det"})
	if err := e.Apply(newJob("c").endpoint("det", "", 1).task("x").submit()); !errors.Is(err, ErrUnknownEndpoint) {
		t.Errorf("job on a removed endpoint: %v", err)
	}
	if len(e.Endpoints()) != 0 {
		t.Errorf("endpoints %+v", e.Endpoints())
	}
}

func TestNewRejectsBadThrottlingNamingTheField(t *testing.T) {
	cfg := admissionCfg(instanceEP("det", -1, 2))
	cfg.Queues = []QueueConfig{{Name: "default"}}
	if _, err := New(cfg); err == nil || !strings.HasPrefix(err.Error(), "endpoints[0].instances: ") {
		t.Errorf("err = %v", err)
	}
}

func TestAdmissionIsDeterministic(t *testing.T) {
	run := func() string {
		ep := model.Endpoint{Name: "ab", Type: model.EndpointInstanceBacked, Variants: []model.Variant{
			{Name: "current", Weight: 70, Instances: 3}, {Name: "candidate", Weight: 30, Instances: 1}}}
		e := engineWith(t, admissionCfg(ep), workers(6)...)
		var out strings.Builder
		for i := range 40 {
			mustApply(t, e, newJob(fmt.Sprint("j", i)).endpoint("ab", "", 1+i%3).task("x").submit())
		}
		for k := range 5 {
			d := e.Cycle(t0.Add(time.Duration(k) * time.Second))
			out.WriteString(decisionsJSON(t, d))
			for _, s := range d.Starts {
				mustApply(t, e, FinishTask{Job: s.Job, Task: s.Task, Outcome: model.Succeeded, At: t0.Add(time.Duration(k) * time.Second)})
			}
		}
		fmt.Fprint(&out, e.EndpointStats())
		return out.String()
	}
	if a, b := run(), run(); a != b {
		t.Error("two runs with the same seed differ")
	}
}

// After a restart the starvation wait of a throttled job counts from when
// it was first throttled, not from its first pass in the new engine.
func TestRestoredThrottleTimeKeepsTheStarvationWait(t *testing.T) {
	wait := 5 * time.Minute
	build := func() *Engine {
		cfg := admissionCfg(instanceEP("det", 1, 4))
		cfg.Admission.Settings.StarvationWait = wait
		e := engineWith(t, cfg, workers(4)...)
		mustApply(t, e, newJob("small").endpoint("det", "", 2).task("x").submit())
		mustApply(t, e, newJob("big").endpoint("det", "", 4).task("x").submit())
		return e
	}
	later := t0.Add(wait)
	for _, tc := range []struct {
		name     string
		restore  bool
		reserved string
	}{
		{"restored: waited 5m, reserves now", true, "big"},
		{"not restored: the wait starts again", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := build()
			if tc.restore {
				mustApply(t, e, RestoreThrottled{Job: "big", At: t0})
			}
			e.Cycle(later) // small admitted, big throttled
			st := e.EndpointStats()[0].Variants[0]
			if st.ReservedFor != tc.reserved {
				t.Errorf("reserved for %q, want %q", st.ReservedFor, tc.reserved)
			}
			if info, _ := e.Admission("big"); tc.restore && !info.ThrottledAt.Equal(t0) {
				t.Errorf("throttled since %v, want %v", info.ThrottledAt, t0)
			}
		})
	}
	e := build()
	e.Cycle(t0)
	if err := e.Apply(RestoreThrottled{Job: "small", At: t0}); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("restoring an admitted job's throttle: %v, want ErrUnknownJob", err)
	}
}
