package control

import (
	"errors"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
)

func TestHeldJobStartsNothingSurvivesARestartAndStartsOnRelease(t *testing.T) {
	p := newPlane(t)
	p.submit(spec.Job{ID: "held", Tasks: []spec.Task{{Name: "a", Run: "true"}}})
	p.submit(spec.Job{ID: "next", Tasks: []spec.Task{{Name: "a", Run: "true"}}})
	j, err := p.c.Hold(p.ctx(), "held", "alice")
	if err != nil || j.HeldBy != "alice" {
		t.Fatalf("hold: %+v %v", j.HeldBy, err)
	}
	p.register("w1", 1)
	l := p.leaseUntil("w1", "a start", func(l api.Lease) bool { return len(l.Assignments) > 0 })
	if got := l.Assignments[0].Attempt.Job; got != "next" {
		t.Fatalf("w1 was given %s, want next (held waits)", got)
	}
	p.restart()
	if got := p.job("held"); got.HeldBy != "alice" {
		t.Fatalf("after a restart heldBy = %q, want alice", got.HeldBy)
	}
	if r := p.task("held", "a").Reason; r == nil || r.Code != model.ReasonHeld || !strings.Contains(r.Message, "held by alice") {
		t.Fatalf("after a restart the held task waits with %+v", r)
	}
	if _, err := p.c.Release(p.ctx(), "held"); err != nil {
		t.Fatal(err)
	}
	if got := p.job("held"); got.HeldBy != "" {
		t.Fatalf("after release heldBy = %q", got.HeldBy)
	}
	p.register("w2", 1)
	l = p.leaseUntil("w2", "a start", func(l api.Lease) bool { return len(l.Assignments) > 0 })
	if got := l.Assignments[0].Attempt.Job; got != "held" {
		t.Fatalf("w2 was given %s, want the released job", got)
	}
	p.restart()
	if got := p.job("held"); got.HeldBy != "" {
		t.Fatalf("a released job is held again after a restart by %q", got.HeldBy)
	}
	if len(p.events(EventJobHeld)) != 1 || len(p.events(EventJobReleased)) != 1 {
		t.Fatalf("events: held %d, released %d", len(p.events(EventJobHeld)), len(p.events(EventJobReleased)))
	}
}

func TestHoldOfAnEndedOrUnknownJobIsRefused(t *testing.T) {
	p := newPlane(t)
	p.submit(spec.Job{ID: "gone", Tasks: []spec.Task{{Name: "a", Run: "true"}}})
	if _, err := p.c.Hold(p.ctx(), "gone", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.Cancel(p.ctx(), "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.Hold(p.ctx(), "gone", "alice"); !errors.Is(err, ErrConflict) {
		t.Fatalf("hold of an ended job: %v, want conflict", err)
	}
	if _, err := p.c.Release(p.ctx(), "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("release of an unknown job: %v, want not found", err)
	}
	p.restart() // the ended job's hold went with it
	if _, err := p.c.Hold(p.ctx(), "gone", "alice"); !errors.Is(err, ErrConflict) {
		t.Fatalf("after a restart: %v", err)
	}
}

func TestSetResourcesChangesAPendingJobAndSurvivesARestart(t *testing.T) {
	p := newPlane(t)
	p.submit(spec.Job{ID: "big", Tasks: []spec.Task{{Name: "a", Run: "true", Count: 2, Resources: spec.Resources{CPU: 8000, Memory: 1024}}}})
	p.register("w1", 2) // 4 CPU, 8 GiB: too small for 8 CPUs
	if r := p.task("big", "a-0").Reason; r == nil || r.Code != model.ReasonUnschedulable {
		t.Fatalf("a task no worker fits waits with %+v", r)
	}
	two := model.CPU(2000)
	if _, err := p.c.SetResources(p.ctx(), "big", api.ResourcesChange{CPU: &two}); err != nil {
		t.Fatal(err)
	}
	p.restart()
	j := p.job("big")
	if j.Spec == nil || j.Spec.Tasks[0].Resources.CPU != 2000 || j.Spec.Tasks[0].Resources.Memory != 1024 {
		t.Fatalf("after a restart the spec asks for %+v, want 2 CPUs and the memory it had", j.Spec.Tasks[0].Resources)
	}
	p.register("w1", 2)
	l := p.leaseUntil("w1", "both tasks", func(l api.Lease) bool { return len(l.Assignments) == 2 })
	if len(l.Assignments) != 2 {
		t.Fatalf("w1 got %d tasks", len(l.Assignments))
	}
	if _, err := p.c.SetResources(p.ctx(), "big", api.ResourcesChange{CPU: &two}); !errors.Is(err, ErrConflict) {
		t.Fatalf("resources of a started job: %v, want conflict", err)
	}
	if _, err := p.c.SetResources(p.ctx(), "big", api.ResourcesChange{}); err == nil {
		t.Fatal("an empty change was accepted")
	}
	if len(p.events(EventResourcesChanged)) != 1 {
		t.Fatalf("events: %d resources_changed", len(p.events(EventResourcesChanged)))
	}
}

func TestJobListNamesTheHolder(t *testing.T) {
	p := newPlane(t)
	p.submit(spec.Job{ID: "held", Tasks: []spec.Task{{Name: "a", Run: "true"}}})
	p.submit(spec.Job{ID: "free", Tasks: []spec.Task{{Name: "a", Run: "true"}}})
	if _, err := p.c.Hold(p.ctx(), "held", "alice"); err != nil {
		t.Fatal(err)
	}
	list, err := p.c.Jobs(p.ctx(), store.JobFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, j := range list.Jobs {
		got[j.ID] = j.HeldBy
	}
	if got["held"] != "alice" || got["free"] != "" || len(got) != 2 {
		t.Fatalf("the list says held by %v, want held by alice and free by nobody", got)
	}
}
