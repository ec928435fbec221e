package control

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/control/history"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/classload"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/engine/policy/priority"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// Fairness over time survives a restart: a share's decayed usage is stored
// and handed back, aged over the downtime.
func TestPolicyHistorySurvivesARestart(t *testing.T) {
	const tau = 3600.0
	sched := spec.Scheduling{Queues: []spec.Queue{{Name: "batch", Policy: policy.Config{Kind: "fairshare",
		Settings: &fairshare.Config{ShareDecaySeconds: int(tau)}}}}}
	p := newPlaneWith(t, sched)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Share: "a", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	a := p.waitAssignment("w1", "t")
	p.clock.Add(10 * time.Minute)
	if err := p.report("w1", succeeded(a)); err != nil {
		t.Fatal(err)
	}
	before := p.shareUsage("a")
	// ran 600 s: decayed usage τ·(1 − e^(−600/τ))
	if want := tau * -math.Expm1(-600/tau); math.Abs(before-want) > 1 {
		t.Fatalf("usage of a before the restart %.1f, want %.1f", before, want)
	}
	p.stop()
	p.clock.Add(time.Hour) // the server is down for an hour
	p.open()
	p.register("w1", 1) // a round that reads the policy at the new time
	after := p.shareUsage("a")
	if want := before * math.Exp(-1); math.Abs(after-want) > 1 {
		t.Errorf("usage of a after an hour's restart %.1f, want %.1f (decayed over the downtime, not lost)", after, want)
	}
}

// shareUsage reads a fairshare share's decayed usage from the queue status.
func (p *plane) shareUsage(share string) float64 {
	p.t.Helper()
	qs, err := p.c.Queues(p.ctx())
	if err != nil {
		p.t.Fatal(err)
	}
	for _, q := range qs {
		if st, ok := q.Status.([]fairshare.ShareStatus); ok {
			for _, s := range st {
				if s.Share == share {
					return s.SlotSeconds
				}
			}
		}
	}
	return 0
}

// A policy set at run time is the queue's policy after a restart: the queue
// lists it, and its history comes back with it.
func TestAPolicySetAtRunTimeIsTheQueuesAfterARestart(t *testing.T) {
	p := newPlaneWith(t, spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}) // fifo in the file
	fs := policy.Config{Kind: "fairshare", Settings: &fairshare.Config{ShareDecaySeconds: 3600}}
	if _, err := p.c.SetPolicy(p.ctx(), "batch", fs); err != nil {
		t.Fatal(err)
	}
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Share: "a", Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	a := p.waitAssignment("w1", "t")
	p.clock.Add(10 * time.Minute)
	if err := p.report("w1", succeeded(a)); err != nil {
		t.Fatal(err)
	}
	before := p.shareUsage("a")
	p.restart()
	p.register("w1", 1)
	qs, err := p.c.Queues(p.ctx())
	if err != nil {
		t.Fatal(err)
	}
	var pc policy.Config
	if err := json.Unmarshal(qs[0].Policy, &pc); err != nil || pc.Kind != "fairshare" {
		t.Errorf("after the restart the queue lists policy %s (%v), want the fairshare set at run time", qs[0].Policy, err)
	}
	if after := p.shareUsage("a"); before == 0 || math.Abs(after-before) > 1 {
		t.Errorf("usage of a %.1f after the restart, want %.1f", after, before)
	}
}

// History is handed back only to the kind of policy that remembered it: a
// queue switched from priority (usage per job) to fairshare (usage per
// share) across a restart must not take job IDs for shares.
func TestHistoryOfAnotherPolicyKindIsNotRestored(t *testing.T) {
	prio := spec.Scheduling{Queues: []spec.Queue{{Name: "batch", Policy: policy.Config{Kind: "priority", Settings: &priority.Config{}}}}}
	p := newPlaneWith(t, prio)
	p.register("w1", 1)
	p.submit(spec.Job{ID: "j", Priority: 5, Tasks: []spec.Task{{Name: "t", Run: "true"}}})
	a := p.waitAssignment("w1", "t")
	p.clock.Add(10 * time.Minute)
	if err := p.report("w1", succeeded(a)); err != nil {
		t.Fatal(err)
	}
	// Read on the loop, which owns the engine.
	v, err := p.c.do(p.ctx(), func(*txn) (any, error) {
		h, _ := p.c.eng.History("batch")
		return h, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if h := v.(policy.History); h.Usage["j"] == 0 {
		t.Fatalf("priority history %+v, want usage of job j to store", h)
	}
	restartWith(p, spec.Scheduling{Queues: []spec.Queue{{Name: "batch", Policy: policy.Config{Kind: "fairshare",
		Settings: &fairshare.Config{ShareDecaySeconds: 3600}}}}})
	p.register("w1", 1)
	if u := p.shareUsage("j"); u != 0 {
		t.Errorf("fairshare lists job j as a share with usage %.1f, want the priority history left out", u)
	}
}

// A classload rebalance clock does not run while the server is down: after
// an hour's downtime it says what it said at the stop, so the first cycle
// does not stop tasks for a spread nobody watched.
func TestTheRebalanceClockDoesNotRunWhileTheServerIsDown(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "allot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stopped := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	raw, _ := json.Marshal(history.Stored{At: stopped, Policy: "classload",
		History: policy.History{RebalanceExceededFor: time.Minute}})
	if err := st.Commit(context.Background(), store.Batch{KV: map[string][]byte{store.QueueHistoryKey("build"): raw}}); err != nil {
		t.Fatal(err)
	}
	sched := spec.Scheduling{Queues: []spec.Queue{{Name: "build", Policy: policy.Config{Kind: "classload",
		Settings: &classload.Config{Classes: []classload.LoadClass{{Name: "a", Percent: 50}, {Name: "b", Percent: 50}},
			RebalanceThreshold: 10, RebalanceMinimumDuration: 5 * time.Minute}}}}}
	now := stopped.Add(time.Hour)
	c, err := New(context.Background(), Config{Scheduling: sched, Clock: func() time.Time { return now },
		Logger: slog.New(slog.DiscardHandler)}, st)
	if err != nil {
		t.Fatal(err)
	}
	// Something happens at the restart's time (no cycle: one would look
	// at the spread again).
	if err := c.eng.Apply(engine.AddWorker{Worker: model.Worker{Name: "w1", Slots: 1}, At: now}); err != nil {
		t.Fatal(err)
	}
	if h, _ := c.eng.History("build"); h.RebalanceExceededFor != time.Minute {
		t.Errorf("after an hour's downtime the spread has been above the threshold for %v, want 1m as at the stop", h.RebalanceExceededFor)
	}
}
