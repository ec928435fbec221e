package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/model"
)

func TestInvalidSubmissionsAreRejectedAndChangeNothing(t *testing.T) {
	cfg := Config{Queues: []QueueConfig{{Name: "default"}, {Name: "gpu", Pool: model.Selector{"kind": "gpu"}}}}
	setup := func(t *testing.T) *Engine {
		return engineWith(t, cfg, newWorker("w1").label("kind", "cpu").add(), newWorker("w2").label("kind", "gpu").add(),
			newJob("j").task("a").task("b", "a").submit())
	}
	cases := []struct {
		name  string
		job   *jobB
		want  error
		field string // fragment of the message naming the offending field
	}{
		{"duplicate job", newJob("j").task("x"), ErrDuplicate, `job "j"`},
		{"unknown queue", newJob("n").queue("nope").task("x"), ErrUnknownQueue, `queue: unknown queue "nope"`},
		{"no tasks", newJob("n"), ErrInvalid, "tasks:"},
		{"duplicate task name", newJob("n").task("x").task("x"), ErrInvalid, `tasks[1].name`},
		{"unknown need", newJob("n").task("x").task("y", "x", "zz"), ErrInvalid, `tasks[1].needs[1]`},
		{"dependency cycle", newJob("n").task("a", "b").task("b", "a"), ErrInvalid, "dependency cycle a → b → a"},
		{"task needs itself", newJob("n").task("a", "a"), ErrInvalid, "dependency cycle a → a"},
		{"longer cycle behind a valid task", newJob("n").task("root").task("a", "root", "c").task("b", "a").task("c", "b"), ErrInvalid, "dependency cycle a → b → c → a"},
		{"selector contradicts the pool", newJob("n").queue("gpu").sel("kind", "cpu").task("x"), ErrInvalid, "selector"},
		{"unconfigured endpoint", func() *jobB { b := newJob("n").task("x"); b.j.Endpoint = "sagemaker"; return b }(), ErrInvalid, "endpoint"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, twin := setup(t), setup(t)
			err := e.Apply(tc.job.submit())
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err = %v, want %v naming %q", err, tc.want, tc.field)
			}
			if tc.job.j.ID != "j" {
				for _, ts := range tc.job.j.Tasks {
					if _, _, ok := e.TaskState(tc.job.j.ID, ts.Name); ok {
						t.Fatalf("rejected job's task %s is known", ts.Name)
					}
				}
			}
			// The engine behaves exactly like one that never saw the job.
			got, want := decisionsJSON(t, e.Cycle(t0)), decisionsJSON(t, twin.Cycle(t0))
			if got != want {
				t.Fatalf("state changed by a rejected submission:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func decisionsJSON(t testing.TB, d *Decisions) string {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewRejectsBadConfigNamingTheField(t *testing.T) {
	cases := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"no queues", Config{}, "queues"},
		{"unnamed queue", Config{Queues: []QueueConfig{{Name: "a"}, {}}}, "queues[1].name"},
		{"queue twice", Config{Queues: []QueueConfig{{Name: "a"}, {Name: "a"}}}, "queues[1].name"},
		{"unknown policy", Config{Queues: []QueueConfig{{Name: "a", Policy: policy.Config{Kind: "lottery"}}}}, "queues[0].policy.kind"},
		{"unknown strategy", Config{Queues: []QueueConfig{{Name: "a"}}, Placement: PlacementConfig{Strategy: "random"}}, "placement.strategy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err = %v, want one naming %q", err, tc.field)
			}
			if got := model.FieldErrorOf("", err).Path; got != tc.field {
				t.Fatalf("field error at %q, want %q (the path as data)", got, tc.field)
			}
		})
	}
}

func TestDuplicateWorkerIsRejected(t *testing.T) {
	e := engineWith(t, Config{}, newWorker("w1").add())
	if err := e.Apply(newWorker("w1").cpu(64000).add()); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("err = %v, want ErrDuplicate", err)
	}
	mustApply(t, e, newJob("j").task("x").res(cpus(8)).submit())
	if p := onlyPending(t, e.Cycle(t0), "j"); p.Reason.Code != model.ReasonUnschedulable {
		t.Fatalf("the rejected 64-CPU worker was registered: pending %+v", p)
	}
}
