package control

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/allot-sched/allot/internal/engine/policy"
	"github.com/allot-sched/allot/internal/engine/policy/fairshare"
	"github.com/allot-sched/allot/internal/spec"
	"github.com/allot-sched/allot/internal/store"
	"github.com/allot-sched/allot/internal/store/sqlite"
)

// fairshareWith is a batch queue whose fairshare policy weighs share a by w.
func fairshareWith(w float64) spec.Scheduling {
	return spec.Scheduling{Queues: []spec.Queue{{Name: "batch", Policy: policy.Config{Kind: "fairshare",
		Settings: &fairshare.Config{Shares: []fairshare.ShareWeight{{Share: "a", WeightFactor: fairshare.Weight(w)}}}}}}}
}

// weightOf is the weight factor of share a in the batch queue's policy as
// the queue lists it.
func (p *plane) weightOf() float64 {
	p.t.Helper()
	qs, err := p.c.Queues(p.ctx())
	if err != nil {
		p.t.Fatal(err)
	}
	var pc policy.Config
	if err := json.Unmarshal(qs[0].Policy, &pc); err != nil {
		p.t.Fatal(err)
	}
	fc, ok := pc.Settings.(*fairshare.Config)
	if !ok || len(fc.Shares) != 1 || fc.Shares[0].WeightFactor == nil {
		p.t.Fatalf("batch lists policy %s", qs[0].Policy)
	}
	return *fc.Shares[0].WeightFactor
}

// syncBuffer is a log sink the loop and the test may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(b)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A policy set at run time is kept over a restart only while the file's
// policy of that queue is what it was when the policy was set: an operator
// who edits the file afterwards gets what they wrote, as with endpoints and
// throttling. Either way the start says which policy it uses and why.
func TestAPolicySetAtRunTimeGivesWayToAFileEditedSince(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fileThen float64 // the file's weight after the restart
		want     float64
		log      string
	}{
		{"file as it was", 1, 2, "the policy set at run time is used instead of the configuration's"},
		{"file edited since", 3, 3, "the configuration's policy is used: it changed since"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlaneWith(t, fairshareWith(1))
			var logs syncBuffer
			p.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			if _, err := p.c.SetPolicy(p.ctx(), "batch", fairshareWith(2).Queues[0].Policy); err != nil {
				t.Fatal(err)
			}
			restartWith(p, fairshareWith(tc.fileThen))
			if got := p.weightOf(); got != tc.want {
				t.Errorf("weight factor %g after the restart, want %g", got, tc.want)
			}
			if out := logs.String(); !strings.Contains(out, tc.log) || !strings.Contains(out, "queue=batch") {
				t.Errorf("start logs %q, want a line naming queue batch that says %q", out, tc.log)
			}
		})
	}
}

// A policy stored before the server recorded the file's policy beside it
// (the bare block) is kept, as it was then, and the start says so.
func TestAPolicyStoredWithoutTheFilesIsKeptAndLogged(t *testing.T) {
	p := newPlaneWith(t, fairshareWith(1))
	var logs syncBuffer
	p.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	p.stop()
	raw, _ := json.Marshal(fairshareWith(2).Queues[0].Policy)
	st, err := sqlite.Open(p.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(p.ctx(), store.Batch{KV: map[string][]byte{store.QueuePolicyKey("batch"): raw}}); err != nil {
		st.Close()
		t.Fatal(err)
	}
	st.Close()
	p.cfg.Scheduling = fairshareWith(3)
	p.open()
	if got := p.weightOf(); got != 2 {
		t.Errorf("weight factor %g, want the stored 2", got)
	}
	if out := logs.String(); !strings.Contains(out, "the policy set at run time is used instead of the configuration's") {
		t.Errorf("start logs %q", out)
	}
}
