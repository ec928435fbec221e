//go:build unix

package agent

import (
	"reflect"
	"testing"

	"github.com/allot-sched/allot/internal/api"
)

// A server that restarted while a result waited for delivery must hear of
// that attempt at registration, or it requeues the task and ignores the
// result when it arrives.
func TestRegisteringAgainListsAttemptsWhoseReportsAreUndelivered(t *testing.T) {
	fs, url := newFakeServer(t)
	fs.reportStatus = func([]api.Report) int { return 503 } // the server is going down
	start(t, testConfig(url))
	done := assign("j", "done", 3, "true", nil)
	fs.give(api.Lease{Assignments: []api.Assignment{done}})
	waitFor(t, "the report to be refused once", func() bool { _, calls, _ := fs.snapshot(); return len(calls) > 0 })

	fs.mu.Lock()
	fs.reportStatus = nil
	delete(fs.known, "w1") // the server restarted and forgot the worker
	fs.mu.Unlock()
	waitFor(t, "the report to be delivered", func() bool { _, ok := fs.report(done.Attempt); return ok })

	regs, _, _ := fs.snapshot()
	if len(regs) != 2 {
		t.Fatalf("%d registrations, want 2", len(regs))
	}
	if want := []api.Attempt{done.Attempt}; !reflect.DeepEqual(regs[1].Running, want) {
		t.Errorf("registered again with running = %+v, want %+v: the held report's attempt", regs[1].Running, want)
	}
}

// Every lease request lists what the worker holds, so the server can tell
// that an earlier answer never arrived.
func TestLeaseRequestsListWhatTheWorkerHolds(t *testing.T) {
	fs, url := newFakeServer(t)
	start(t, testConfig(url))
	long := assign("j", "long", 1, "sleep 30", nil)
	fs.give(api.Lease{Assignments: []api.Assignment{long}})
	waitFor(t, "a lease request listing the running attempt", func() bool {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		for _, holds := range fs.leaseHolds {
			if reflect.DeepEqual(holds, []api.Attempt{long.Attempt}) {
				return true
			}
		}
		return false
	})
	fs.mu.Lock()
	first := fs.leaseHolds[0]
	fs.mu.Unlock()
	if first == nil || len(first) != 0 {
		t.Errorf("the first lease request listed %v, want an empty list (not none)", first)
	}
}

func TestCacheHintsGoWithTheRegistrationAndEveryHeartbeat(t *testing.T) {
	fs, url := newFakeServer(t)
	cfg := testConfig(url)
	cfg.Cache = []api.CacheHint{{Kind: "model", Name: "llama-8b"}, {Kind: "dataset", Name: "squad"}}
	ag := start(t, cfg)
	waitFor(t, "three heartbeats with hints", func() bool {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		return len(fs.hbCache) >= 3
	})
	if err := ag.stop(); err != nil {
		t.Fatal(err)
	}
	regs, _, _ := fs.snapshot()
	if len(regs) != 1 || !reflect.DeepEqual(regs[0].Cache, cfg.Cache) {
		t.Errorf("registrations %+v, want the hints", regs)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, hb := range fs.hbCache {
		if !reflect.DeepEqual(hb, cfg.Cache) {
			t.Errorf("heartbeat %d carried %+v, want %+v", i, hb, cfg.Cache)
		}
	}
}
