package history

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/control/hook"
	"github.com/allot-sched/allot/internal/control/hook/hooktest"
	"github.com/allot-sched/allot/internal/engine"
	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/store"
)

type fakeEngine struct {
	now     time.Time
	history map[string]policy.History
	applied []engine.Event
}

func (e *fakeEngine) Now() time.Time { return e.now }
func (e *fakeEngine) History(q string) (policy.History, bool) {
	h, ok := e.history[q]
	return h, ok
}
func (e *fakeEngine) Apply(ev engine.Event) error {
	e.applied = append(e.applied, ev)
	return nil
}

var queues = []engine.QueueConfig{
	{Name: "a", Policy: policy.Config{Kind: "fairshare"}},
	{Name: "b", Policy: policy.Config{Kind: "classload"}},
}

// A tick stores the history of every queue whose policy has one, then not
// again until SaveEvery has passed; a stop stores it whenever it comes.
func TestSavesOnTicksEverySaveEveryAndAtStop(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	eng := &fakeEngine{now: t0, history: map[string]policy.History{"a": {Usage: map[string]float64{"x": 2}}}}
	f := New()
	tick := func(at time.Time) map[string][]byte {
		r := &hooktest.Round{At: at, Eng: eng, Qs: queues}
		f.Tick(r)
		return r.Written
	}
	kv := tick(t0)
	if len(kv) != 1 || kv[store.QueueHistoryKey("a")] == nil {
		t.Fatalf("first tick wrote %v, want queue a's history", kv)
	}
	var sh Stored
	if err := json.Unmarshal(kv[store.QueueHistoryKey("a")], &sh); err != nil || sh.Policy != "fairshare" || !sh.At.Equal(t0) || sh.History.Usage["x"] != 2 {
		t.Fatalf("stored %+v (%v)", sh, err)
	}
	if kv := tick(t0.Add(SaveEvery - time.Second)); len(kv) != 0 {
		t.Fatalf("a tick before SaveEvery wrote %v", kv)
	}
	if kv := tick(t0.Add(SaveEvery)); len(kv) != 1 {
		t.Fatalf("a tick at SaveEvery wrote %v", kv)
	}
	r := &hooktest.Round{At: t0.Add(SaveEvery + time.Second), Eng: eng, Qs: queues}
	f.Stop(r)
	if len(r.Written) != 1 {
		t.Fatalf("stop wrote %v", r.Written)
	}
}

type fakeRecovery struct {
	clock       time.Time
	stored      map[string][]byte
	eng         *fakeEngine
	quarantined []string
}

func (r *fakeRecovery) Clock() time.Time { return r.clock }
func (r *fakeRecovery) KV(_ context.Context, key string) ([]byte, error) {
	if v, ok := r.stored[key]; ok {
		return v, nil
	}
	return nil, store.ErrNotFound
}
func (r *fakeRecovery) Quarantine(key string, _ []byte, _ error) {
	r.quarantined = append(r.quarantined, key)
}
func (r *fakeRecovery) Queues() []engine.QueueConfig { return queues }
func (r *fakeRecovery) Engine() hook.Engine          { return r.eng }
func (r *fakeRecovery) Logger() *slog.Logger         { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Recovery hands a queue's policy its history as of when it was stored, a
// rebalance clock as of now; history of another policy kind is dropped and
// an unreadable row is quarantined.
func TestRecoverRestoresQuarantinesAndSkipsOtherKinds(t *testing.T) {
	stored := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	now := stored.Add(time.Hour)
	usage := policy.History{Usage: map[string]float64{"x": 1}}
	for _, tc := range []struct {
		name       string
		a, b       []byte
		applied    []engine.Event
		quarantine []string
	}{
		{name: "restores", a: mustJSON(t, Stored{At: stored, Policy: "fairshare", History: usage}),
			b:       mustJSON(t, Stored{At: stored, Policy: "classload", History: policy.History{RebalanceExceededFor: time.Minute}}),
			applied: []engine.Event{engine.SetHistory{Queue: "a", History: usage, At: stored}, engine.SetHistory{Queue: "b", History: policy.History{RebalanceExceededFor: time.Minute}, At: now}}},
		{name: "another kind", a: mustJSON(t, Stored{At: stored, Policy: "priority", History: usage})},
		{name: "unreadable", b: []byte("{"), quarantine: []string{store.QueueHistoryKey("b")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &fakeRecovery{clock: now, stored: map[string][]byte{}, eng: &fakeEngine{}}
			if tc.a != nil {
				r.stored[store.QueueHistoryKey("a")] = tc.a
			}
			if tc.b != nil {
				r.stored[store.QueueHistoryKey("b")] = tc.b
			}
			if err := New().Recover(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			if got, want := mustJSON(t, r.eng.applied), mustJSON(t, tc.applied); string(got) != string(want) {
				t.Errorf("applied %s, want %s", got, want)
			}
			if got, want := mustJSON(t, r.quarantined), mustJSON(t, tc.quarantine); string(got) != string(want) {
				t.Errorf("quarantined %s, want %s", got, want)
			}
		})
	}
}
