//go:build unix

package agent

import (
	"testing"

	"github.com/allot-sched/allot/internal/api"
)

func TestAgentRegistersItsPrefetch(t *testing.T) {
	fs, url := newFakeServer(t)
	cfg := testConfig(url)
	cfg.Slots, cfg.Prefetch = 4, 2
	ag := start(t, cfg)
	waitFor(t, "the registration", func() bool { regs, _, _ := fs.snapshot(); return len(regs) == 1 })
	if err := ag.stop(); err != nil {
		t.Errorf("Run = %v", err)
	}
	if regs, _, _ := fs.snapshot(); regs[0].Slots != 4 || regs[0].Prefetch != 2 {
		t.Errorf("registered %d slots and prefetch %d, want 4 and 2", regs[0].Slots, regs[0].Prefetch)
	}
}

// A server that predates prefetching refuses the field as unknown: the
// agent registers without it, and runs tasks as before.
func TestAgentPrefetchAgainstAServerThatDoesNotKnowIt(t *testing.T) {
	fs, url := newFakeServer(t)
	fs.unknownFields = []string{"prefetch"}
	cfg := testConfig(url)
	cfg.Slots, cfg.Prefetch = 2, 2
	ag := start(t, cfg)
	a := assign("j", "a", 1, "exit 0", nil)
	fs.give(api.Lease{Assignments: []api.Assignment{a}})
	waitFor(t, "the report", func() bool { _, ok := fs.report(a.Attempt); return ok })
	if err := ag.stop(); err != nil {
		t.Errorf("Run = %v", err)
	}
	regs, _, _ := fs.snapshot()
	if len(regs) != 1 || regs[0].Prefetch != 0 || regs[0].Slots != 2 {
		t.Errorf("registrations %+v, want one with 2 slots and no prefetch", regs)
	}
}

func TestAgentRefusesPrefetchBeyondItsSlots(t *testing.T) {
	cfg := testConfig("http://127.0.0.1:1")
	cfg.Slots, cfg.Prefetch = 2, 3
	if _, err := New(cfg); err == nil {
		t.Error("New took prefetch 3 with 2 slots")
	}
}
