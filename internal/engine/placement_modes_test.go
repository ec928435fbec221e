package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/engine/place"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/model"
)

// The tests here drive placement (seed 002) through the engine: dispatcher
// modes, stage stickiness, merged batches and what each start records.

func workersEv(names ...string) []Event {
	var evs []Event
	for _, n := range names {
		evs = append(evs, newWorker(n).add())
	}
	return evs
}

func (b *jobB) model(m string) *jobB       { b.last().Model = m; return b }
func (b *jobB) stage(s string) *jobB       { b.last().Stage = s; return b }
func (b *jobB) stick(p string) *jobB       { b.last().StickTo = p; return b }
func (b *jobB) cat(c model.Category) *jobB { b.last().Category = c; return b }

func TestStaticWorkerBindsAJobToOneWorkerForItsLife(t *testing.T) {
	e := engineWith(t, Config{Placement: PlacementConfig{Mode: "static-worker"}}, workersEv("w1", "w2", "w3")...)
	mustApply(t, e, newJob("a").task("a1").task("a2", "a1").task("a3", "a1").submit())
	d := e.Cycle(t0)
	if got := startsOf(d); !same(got, []string{"a/a1@w1"}) {
		t.Fatalf("starts %v", got)
	}
	if d.Starts[0].Placement.Mode != place.StaticWorker || d.Starts[0].Placement.Via != place.ViaFirstFit {
		t.Fatalf("placement %+v", d.Starts[0].Placement)
	}
	// Job b may not use w1, bound to a, though w1 frees up first.
	mustApply(t, e, finishOK("a", "a1"))
	mustApply(t, e, newJob("b").task("b1").task("b2").task("b3").submit())
	d = e.Cycle(t0)
	// a2 runs on w1; a3 waits for w1 although w2 and w3 are free; b takes
	// w2 for good (bound) and its other tasks wait for it.
	if got := startsOf(d); !same(got, []string{"a/a2@w1", "b/b1@w2"}) {
		t.Fatalf("starts %v", got)
	}
	p := onlyPending(t, d, "a")
	if p.Reason.Code != model.ReasonAssignedWorkerBusy || !strings.Contains(p.Reason.Message, `bound to worker "w1"`) {
		t.Fatalf("a3 waits with %+v", p.Reason)
	}
	if pb := onlyPending(t, d, "b"); pb.Tasks != 2 || pb.Reason.Code != model.ReasonAssignedWorkerBusy {
		t.Fatalf("b waits with %+v", pb)
	}
	// When a ends, w1 rejoins the general pool.
	mustApply(t, e, finishOK("a", "a2"))
	d = e.Cycle(t0)
	if got := startsOf(d); !same(got, []string{"a/a3@w1"}) {
		t.Fatalf("starts %v", got)
	}
	mustApply(t, e, finishOK("a", "a3"))
	mustApply(t, e, newJob("c").task("c1").submit())
	d = e.Cycle(t0)
	if got := startsOf(d); !same(got, []string{"c/c1@w1"}) {
		t.Fatalf("after a ended, starts %v, want c on w1 (first free in the pool)", got)
	}
	// A bound worker that leaves releases the binding: b's tasks may go
	// anywhere again.
	mustApply(t, e, RemoveWorker{Name: "w2", At: t0})
	d = e.Cycle(t0)
	if got := startsOf(d); !same(got, []string{"b/b1@w3"}) {
		t.Fatalf("after w2 left, starts %v", got)
	}
}

func TestFixedPipelineAssignsEachTaskTypeToOneWorker(t *testing.T) {
	e := engineWith(t, Config{Placement: PlacementConfig{Mode: "fixed-pipeline"}}, workersEv("w1", "w2", "w3")...)
	// Two jobs of the same pipeline: prep, then train (whose type is
	// train@llama, since it names a model).
	for _, id := range []string{"p", "q"} {
		mustApply(t, e, newJob(id).task("prep").task("train", "prep").model("llama").submit())
	}
	d := e.Cycle(t0)
	// The first prep takes w1, which owns the prep type from now on: the
	// second prep waits although w2 and w3 are free.
	if got := startsOf(d); !same(got, []string{"p/prep@w1"}) {
		t.Fatalf("starts %v", got)
	}
	if r := readyReason(t, d, "q"); r.Code != model.ReasonAssignedWorkerBusy || !strings.Contains(r.Message, `task type "prep" is assigned to worker "w1"`) {
		t.Fatalf("q waits with %+v", r)
	}
	// train@llama goes to the first compatible worker, w1 again, and
	// keeps it: the baseline runs the whole pipeline on one worker.
	steps := []struct {
		done string // job/task reported done before the cycle
		want []string
	}{
		{"p/prep", []string{"p/train@w1"}},
		{"p/train", []string{"q/prep@w1"}},
	}
	for _, st := range steps {
		job, task, _ := strings.Cut(st.done, "/")
		mustApply(t, e, finishOK(job, task))
		if d := e.Cycle(t0); !same(startsOf(d), st.want) {
			t.Fatalf("after %s: starts %v, want %v", st.done, startsOf(d), st.want)
		}
	}
	if w := e.fleet.PipelineWorker("train@llama"); w == nil || w.Spec.Name != "w1" {
		t.Fatalf("train@llama is assigned to %v", w)
	}
	// A disabled owner keeps its type waiting; a removed one hands it on.
	mustApply(t, e, finishOK("q", "prep"))
	mustApply(t, e, SetWorkerState{Name: "w1", State: model.WorkerDisabled, At: t0})
	d = e.Cycle(t0)
	if r := readyReason(t, d, "q"); len(d.Starts) != 0 || r.Code != model.ReasonAssignedWorkerBusy || !strings.Contains(r.Message, "which is disabled") {
		t.Fatalf("with w1 disabled: starts %v, reason %+v", startsOf(d), r)
	}
	mustApply(t, e, RemoveWorker{Name: "w1", At: t0})
	d = e.Cycle(t0)
	if got := startsOf(d); !same(got, []string{"q/train@w2"}) {
		t.Fatalf("after w1 left, starts %v", got)
	}
}

func TestRoundRobinIgnoresRequirements(t *testing.T) {
	e := engineWith(t, Config{Placement: PlacementConfig{Mode: "round-robin"}},
		newWorker("cpu1").add(), newWorker("gpu").gpus(1, 24576).add(), newWorker("cpu2").add())
	j := newJob("j")
	for i := 0; i < 5; i++ {
		j.task(fmt.Sprint("t", i)).res(model.Resources{GPUs: 1, GPUMemoryMB: 16384})
	}
	mustApply(t, e, j.submit())
	d := e.Cycle(t0)
	// The GPU tasks land on CPU workers too: round-robin does not check.
	if got := startsOf(d); !same(got, []string{"j/t0@cpu1", "j/t1@gpu", "j/t2@cpu2"}) {
		t.Fatalf("starts %v", got)
	}
	mustApply(t, e, finishOK("j", "t0"))
	mustApply(t, e, finishOK("j", "t2"))
	d = e.Cycle(t0)
	// The turn continues after cpu2 and wraps: cpu1, then (gpu busy) cpu2.
	if got := startsOf(d); !same(got, []string{"j/t3@cpu1", "j/t4@cpu2"}) {
		t.Fatalf("starts %v", got)
	}
}

func TestStageStickinessThroughTheEngine(t *testing.T) {
	cfg := Config{Placement: PlacementConfig{Strategy: "best", StageStickiness: true}}
	small := newWorker("small").gpus(1, 24576).label("name", "small")
	big := newWorker("big").cpu(32000).gpus(8, 81920)
	cases := []struct {
		name     string
		after    func(t *testing.T, e *Engine) // after the parent succeeded on small
		want     []string
		wantCode string
	}{
		{"alive: the child follows its parent", func(t *testing.T, e *Engine) {}, []string{"ft/tune@small"}, ""},
		{"busy: the child waits", func(t *testing.T, e *Engine) {
			// A more urgent job takes small first.
			mustApply(t, e, newJob("other").prio(9).sel("name", "small").task("x").res(model.Resources{GPUs: 1}).submit())
		}, []string{"other/x@small"}, model.ReasonStickyWorkerBusy},
		{"gone: the child is scored", func(t *testing.T, e *Engine) { mustApply(t, e, RemoveWorker{Name: "small", At: t0}) }, []string{"ft/tune@big"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := engineWith(t, cfg, small.add(), big.add())
			// The parent runs on small: big is busy with a filler.
			mustApply(t, e, newJob("fill").task("f").res(model.Resources{GPUs: 8}).submit())
			mustApply(t, e, newJob("ft").task("base").res(model.Resources{GPUs: 1}).task("tune", "base").
				res(model.Resources{GPUs: 1}).cat(model.CategoryTraining).stick("base").submit())
			if d := e.Cycle(t0); !same(startsOf(d), []string{"fill/f@big", "ft/base@small"}) {
				t.Fatalf("setup starts %v", startsOf(d))
			}
			mustApply(t, e, finishOK("fill", "f"))
			mustApply(t, e, finishOK("ft", "base"))
			tc.after(t, e)
			d := e.Cycle(t0)
			if got := startsOf(d); !same(got, tc.want) {
				t.Fatalf("starts %v, want %v (training would score big higher)", got, tc.want)
			}
			if tc.wantCode == "" {
				return
			}
			if r := readyReason(t, d, "ft"); r.Code != tc.wantCode {
				t.Fatalf("pending %+v", r)
			}
			if len(d.Deferred) != 1 || d.Deferred[0].Task != "tune" || d.Deferred[0].Worker != "small" {
				t.Fatalf("deferred %+v", d.Deferred)
			}
			// Once small frees up, the child runs there.
			mustApply(t, e, finishOK("other", "x"))
			if d := e.Cycle(t0); !same(startsOf(d), []string{"ft/tune@small"}) || d.Starts[0].Placement.Via != place.ViaSticky {
				t.Fatalf("after small freed: %v", startsOf(d))
			}
		})
	}
}

// batchJob has n tasks of stage "infer" sharing model m.
func batchJob(id string, n int, m string) *jobB {
	j := newJob(id)
	for i := 0; i < n; i++ {
		j.task(fmt.Sprintf("infer-%d", i)).stage("infer").model(m).cat(model.CategoryInference)
	}
	return j
}

// readyReason returns the reason of a job's waiting ready tasks.
func readyReason(t *testing.T, d *Decisions, job string) model.Reason {
	t.Helper()
	for _, p := range pendingOf(d, job) {
		if p.Reason.Code != model.ReasonWaitingDependency {
			return p.Reason
		}
	}
	t.Fatalf("job %s has no waiting ready task: %+v", job, pendingOf(d, job))
	return model.Reason{}
}

func TestMergedBatches(t *testing.T) {
	e := engineWith(t, Config{Placement: PlacementConfig{Strategy: "best", MergeMax: 3}}, newWorker("w1").add())
	mustApply(t, e, batchJob("j", 5, "bert").submit())
	mustApply(t, e, newJob("solo").task("s").submit())
	d := e.Cycle(t0)
	if got := startsOf(d); !same(got, []string{"j/infer-0@w1", "j/infer-1@w1", "j/infer-2@w1"}) {
		t.Fatalf("starts %v", got)
	}
	for _, s := range d.Starts {
		if s.Batch != "infer-0" {
			t.Fatalf("start %+v: batch %q, want infer-0", s, s.Batch)
		}
	}
	if d.Starts[1].Placement.Via != place.ViaMerged {
		t.Fatalf("member via %s", d.Starts[1].Placement.Via)
	}
	// The batch holds one slot: the group runs one slot's worth.
	if g := d.Groups[0]; g.Running != 1 || g.Starts != 3 {
		t.Fatalf("group %+v", g)
	}
	// The head's success ends the members with it.
	mustApply(t, e, finishOK("j", "infer-0"))
	d = e.Cycle(t0)
	if got := endedOf(d); !same(got, []string{"j/infer-1:succeeded:batch_done", "j/infer-2:succeeded:batch_done"}) {
		t.Fatalf("ended %v", got)
	}
	if d.Ended[0].Parent != "infer-0" {
		t.Fatalf("parent %q", d.Ended[0].Parent)
	}
	if got := startsOf(d); !same(got, []string{"j/infer-3@w1", "j/infer-4@w1"}) {
		t.Fatalf("second batch %v", got)
	}
	// A failure of the batch fails each member, naming the head.
	mustApply(t, e, finishFail("j", "infer-3"))
	d = e.Cycle(t0)
	want := []string{"j/infer-3:failed:failed", "j/infer-4:failed:batch_failure"}
	if got := endedOf(d); !same(got, want) {
		t.Fatalf("ended %v, want %v", got, want)
	}
	if d.Ended[1].Parent != "infer-3" || !strings.Contains(d.Ended[1].Reason.Message, `merged batch "infer-3" failed: exit status 1`) {
		t.Fatalf("member end %+v", d.Ended[1])
	}
	if got := startsOf(d); !same(got, []string{"solo/s@w1"}) {
		t.Fatalf("after the batch: %v", got)
	}
}

func TestMergedBatchRetriesAndRequeues(t *testing.T) {
	e := engineWith(t, Config{Placement: PlacementConfig{Strategy: "best"}}, newWorker("w1").add(), newWorker("w2").add())
	j := batchJob("j", 2, "m")
	j.j.Tasks[0].MaxAttempts, j.j.Tasks[1].MaxAttempts = 2, 2
	mustApply(t, e, j.submit())
	d := e.Cycle(t0)
	if len(d.Starts) != 2 || d.Starts[0].Worker != d.Starts[1].Worker {
		t.Fatalf("starts %v", startsOf(d))
	}
	mustApply(t, e, finishFail("j", "infer-0"))
	d = e.Cycle(t0)
	if got := endedOf(d); !same(got, []string{"j/infer-0:ready:retry", "j/infer-1:ready:retry"}) {
		t.Fatalf("ended %v", got)
	}
	if len(d.Starts) != 2 {
		t.Fatalf("retry starts %v", startsOf(d))
	}
	// A lost worker requeues the whole batch.
	w := d.Starts[0].Worker
	mustApply(t, e, RemoveWorker{Name: w, At: t0})
	d = e.Cycle(t0)
	if got := endedOf(d); !same(got, []string{"j/infer-0:ready:worker_lost", "j/infer-1:ready:worker_lost"}) {
		t.Fatalf("ended %v", got)
	}
	// A member reported on its own leaves the batch; the head's report
	// then ends only the rest.
	if len(d.Starts) != 2 {
		t.Fatalf("starts after the loss %v", startsOf(d))
	}
	mustApply(t, e, finishOK("j", "infer-1"))
	mustApply(t, e, finishOK("j", "infer-0"))
	d = e.Cycle(t0)
	if got := jobsDoneOf(d); !same(got, []string{"j:succeeded"}) || len(d.Ended) != 0 {
		t.Fatalf("done %v ended %v", got, endedOf(d))
	}
}

func TestMergingNeedsOneStageAndModel(t *testing.T) {
	cases := []struct {
		name string
		cfg  PlacementConfig
		job  *jobB
		want int // tasks started on the single one-slot worker
	}{
		{"same stage and model", PlacementConfig{}, batchJob("j", 6, "m"), place.DefaultMergeMax},
		{"no model", PlacementConfig{}, batchJob("j", 6, ""), 1},
		{"mergeMax 1 turns it off", PlacementConfig{MergeMax: 1}, batchJob("j", 6, "m"), 1},
		{"other modes do not merge", PlacementConfig{Mode: "static-worker"}, batchJob("j", 6, "m"), 1},
		{"stage changes", PlacementConfig{}, newJob("j").task("a").model("m").task("b").model("m"), 1},
		{"model changes", PlacementConfig{}, newJob("j").task("a").stage("s").model("m").task("b").stage("s").model("n"), 1},
		{"maxSlots bounds the batch", PlacementConfig{}, batchJob("j", 6, "m").maxSlots(2), 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := engineWith(t, Config{Placement: tc.cfg}, newWorker("w1").add())
			mustApply(t, e, tc.job.submit())
			if d := e.Cycle(t0); len(d.Starts) != tc.want {
				t.Fatalf("starts %v, want %d", startsOf(d), tc.want)
			}
		})
	}
}

func TestPreemptingABatchHeadStopsItsMembers(t *testing.T) {
	q := QueueConfig{Name: "default", Policy: policy.Config{Kind: "priority", Settings: &priority.Config{PreemptablePercent: 100}}}
	e := engineWith(t, Config{Queues: []QueueConfig{q}}, newWorker("w1").add())
	mustApply(t, e, batchJob("batch", 3, "m").prio(5).submit())
	if d := e.Cycle(t0); len(d.Starts) != 3 {
		t.Fatalf("starts %v", startsOf(d))
	}
	urgent := newJob("urgent").prio(5).task("u")
	urgent.j.Urgent = true
	mustApply(t, e, urgent.submit())
	d := e.Cycle(t0.Add(time.Minute))
	var stopped []string
	for _, st := range d.Stops {
		stopped = append(stopped, st.Task+":"+st.Reason.Code)
	}
	if want := []string{"infer-0:preempted", "infer-1:preempted", "infer-2:preempted"}; !same(stopped, want) {
		t.Fatalf("stops %v, want %v", stopped, want)
	}
	if got := startsOf(d); !same(got, []string{"urgent/u@w1"}) {
		t.Fatalf("starts %v", got)
	}
	for _, task := range []string{"infer-0", "infer-1", "infer-2"} {
		if st := stateOf(t, e, "batch", task); st != model.TaskReady {
			t.Fatalf("%s is %s after the preemption, want ready", task, st)
		}
	}
}

func TestCancellingABatchStopsEveryMember(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").add())
	mustApply(t, e, batchJob("j", 3, "m").submit())
	if d := e.Cycle(t0); len(d.Starts) != 3 {
		t.Fatalf("starts %v", startsOf(d))
	}
	mustApply(t, e, CancelJob{Job: "j", At: t0})
	d := e.Cycle(t0)
	if len(d.Stops) != 3 {
		t.Fatalf("stops %+v", d.Stops)
	}
	if ws := e.Workers(); ws[0].Running != 0 {
		t.Fatalf("worker still runs %d", ws[0].Running)
	}
}

func TestEveryStartRecordsItsPlacement(t *testing.T) {
	e := engineWith(t, Config{Placement: PlacementConfig{Strategy: "best"}},
		newWorker("a").gpus(1, 24576).add(), newWorker("b").gpus(1, 24576).add(), newWorker("c").add())
	mustApply(t, e, UpdateWorkerCache{Name: "b", Cached: map[string]time.Time{"llama": {}}, At: t0})
	mustApply(t, e, newJob("j").task("x").res(model.Resources{GPUs: 1}).model("llama").cat(model.CategoryInference).submit())
	d := e.Cycle(t0.Add(time.Minute))
	if len(d.Starts) != 1 {
		t.Fatalf("starts %v", startsOf(d))
	}
	p := d.Starts[0].Placement
	if d.Starts[0].Worker != "b" || p.Pool != 2 || p.ReuseHits != 1 || p.Lambda != 0.4 || p.Via != place.ViaReuse || p.Score == 0 {
		t.Fatalf("start %+v", d.Starts[0])
	}
	out, err := json.Marshal(d.Starts[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{`"mode":"adaptive"`, `"strategy":"best"`, `"via":"reuse"`, `"pool":2`, `"reuseHits":1`, `"lambda":0.4`} {
		if !strings.Contains(string(out), frag) {
			t.Errorf("%s lacks %s", out, frag)
		}
	}
	if err := e.Apply(UpdateWorkerCache{Name: "nope", At: t0}); err == nil {
		t.Error("cache update of an unknown worker accepted")
	}
}

func TestPlacementIsDeterministic(t *testing.T) {
	run := func() string {
		e := engineWith(t, Config{Placement: PlacementConfig{Strategy: "best", StageStickiness: true}})
		for i := 0; i < 40; i++ {
			w := newWorker(fmt.Sprintf("w%02d", i))
			if i%4 == 0 {
				w.gpus(2, 40960)
			}
			w.w.CostPerHour = float64(1 + i%3)
			mustApply(t, e, w.add())
		}
		for i := 0; i < 30; i++ {
			j := batchJob(fmt.Sprint("j", i), 4, fmt.Sprint("m", i%3))
			j.task("tune", "infer-0").cat(model.CategoryTraining).stick("infer-0")
			mustApply(t, e, j.submit())
		}
		var log []byte
		now := t0
		for step := 0; step < 20; step++ {
			d := e.Cycle(now)
			out, _ := json.Marshal(d)
			log = append(log, out...)
			now = now.Add(time.Minute)
			for _, s := range d.Starts {
				if s.Batch == "" || s.Batch == s.Task {
					_ = e.Apply(FinishTask{Job: s.Job, Task: s.Task, Outcome: model.Succeeded, At: now})
				}
			}
		}
		return string(log)
	}
	if a, b := run(), run(); a != b {
		t.Fatal("two runs of the same events gave different decisions")
	}
}

func TestWorkerStatusForTheElasticCoordinator(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").add(), newWorker("w2").add())
	mustApply(t, e, newJob("j").task("a").task("b").task("c").submit())
	e.Cycle(t0)
	if n := e.ReadyTasks(); n != 1 {
		t.Fatalf("ready tasks %d, want 1", n)
	}
	later := t0.Add(90 * time.Second)
	mustApply(t, e, FinishTask{Job: "j", Task: "a", Outcome: model.Succeeded, At: later})
	mustApply(t, e, SetWorkerState{Name: "w2", State: model.WorkerDisabled, At: later})
	ws := e.ElasticWorkers()
	if len(ws) != 2 || ws[0].Running != 0 || !ws[0].IdleSince.Equal(later) || ws[1].Running != 1 ||
		ws[1].State != model.WorkerDisabled || !ws[1].LastToggle.Equal(later) || !ws[1].IdleSince.Equal(t0) {
		t.Fatalf("workers %+v", ws)
	}
}

// A merged batch restored after a restart is the batch it was: its members
// ride in the head's slot, and the head's report ends them.
func TestMergedBatchIsRestored(t *testing.T) {
	e := engineWith(t, Config{Placement: PlacementConfig{Strategy: "best", MergeMax: 3}}, newWorker("w1").add())
	mustApply(t, e, batchJob("j", 4, "bert").submit())
	mustApply(t, e, newJob("solo").task("s").submit())
	mustApply(t, e, RestoreRunning{Job: "j", Task: "infer-0", Worker: "w1", Started: t0, Attempt: 1})
	for _, m := range []string{"infer-1", "infer-2"} {
		mustApply(t, e, RestoreRunning{Job: "j", Task: m, Worker: "w1", Started: t0, Attempt: 1, Batch: "infer-0"})
	}
	// A member's head must run on that worker.
	if err := e.Apply(RestoreRunning{Job: "j", Task: "infer-3", Worker: "w1", Batch: "infer-9"}); !errors.Is(err, ErrUnknownTask) {
		t.Errorf("a member of an unknown head: %v", err)
	}
	if err := e.Apply(RestoreRunning{Job: "j", Task: "infer-3", Worker: "w2", Batch: "infer-0"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a member on another worker than its head: %v", err)
	}
	d := e.Cycle(t0)
	if len(d.Starts) != 0 || d.Groups[0].Running != 1 {
		t.Fatalf("after the restore: starts %v, group %+v; want the batch holding w1's one slot", startsOf(d), d.Groups[0])
	}
	mustApply(t, e, finishOK("j", "infer-0"))
	d = e.Cycle(t0)
	if got := endedOf(d); !same(got, []string{"j/infer-1:succeeded:batch_done", "j/infer-2:succeeded:batch_done"}) {
		t.Fatalf("ended %v", got)
	}
}
