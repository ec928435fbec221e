//go:build unix

package agent

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/spec"
)

func TestAgentRegistersRunsLeasedTasksOneSlotAtATimeAndReports(t *testing.T) {
	fs, url := newFakeServer(t)
	cfg := testConfig(url)
	cost := 0.5
	cfg.Labels, cfg.CostPerHour, cfg.Cached = map[string]string{"zone": "a"}, &cost, []string{"llama-7b"}
	ag := start(t, cfg)

	log := filepath.Join(t.TempDir(), "log")
	env := map[string]string{"LOG": log}
	script := func(name string, code int) string {
		return "echo start " + name + " >> $LOG; sleep 0.05; echo end " + name + " >> $LOG; echo " + name + "; exit " + strconv.Itoa(code)
	}
	a1, a2 := assign("j", "a", 1, script("a", 0), env), assign("j", "b", 1, script("b", 2), env)
	fs.give(api.Lease{Assignments: []api.Assignment{a1, a2}})
	waitFor(t, "both reports", func() bool {
		_, ok1 := fs.report(a1.Attempt)
		_, ok2 := fs.report(a2.Attempt)
		return ok1 && ok2
	})
	r1, _ := fs.report(a1.Attempt)
	r2, _ := fs.report(a2.Attempt)
	if r1.ExitCode != 0 || r1.Output != "a\n" || r2.ExitCode != 2 || r2.Output != "b\n" {
		t.Errorf("reports = %+v, %+v", r1, r2)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "start a\nend a\nstart b\nend b\n"; got != want {
		t.Errorf("with one slot the tasks overlapped:\n%s", got)
	}
	if err := ag.stop(); err != nil {
		t.Errorf("Run = %v", err)
	}
	regs, _, _ := fs.snapshot()
	want := api.Register{Name: "w1", Resources: spec.Resources{CPU: 2000, Memory: 1024}, Labels: map[string]string{"zone": "a"},
		Slots: 1, CostPerHour: &cost, Cached: []string{"llama-7b"}}
	if len(regs) != 1 || !reflect.DeepEqual(regs[0], want) {
		t.Errorf("registrations = %+v, want one %+v", regs, want)
	}
}

func TestReportsSurviveAnUnavailableServerAndGoTogether(t *testing.T) {
	fs, url := newFakeServer(t)
	up := false
	fs.reportStatus = func([]api.Report) int {
		if up {
			return 204
		}
		return 503
	}
	cfg := testConfig(url)
	cfg.Slots = 2
	start(t, cfg)
	a1, a2 := assign("j", "a", 1, "echo a", nil), assign("j", "b", 1, "echo b", nil)
	fs.give(api.Lease{Assignments: []api.Assignment{a1, a2}})
	// Both finish while the server refuses; the agent keeps retrying and
	// its retries carry both reports.
	waitFor(t, "a refused batch with both reports", func() bool {
		_, calls, _ := fs.snapshot()
		return len(calls) >= 2 && len(calls[len(calls)-1]) == 2
	})
	fs.mu.Lock()
	up = true
	fs.mu.Unlock()
	waitFor(t, "delivery", func() bool {
		_, _, d := fs.snapshot()
		return len(d) == 2
	})
	_, calls, delivered := fs.snapshot()
	if last := calls[len(calls)-1]; len(last) != 2 {
		t.Errorf("the delivering request carried %d reports, want both", len(last))
	}
	got := []api.Attempt{delivered[0].Attempt, delivered[1].Attempt}
	if got[0] == got[1] {
		t.Errorf("delivered the same report twice: %+v", delivered)
	}
	time.Sleep(50 * time.Millisecond) // nothing more may arrive
	if _, _, d := fs.snapshot(); len(d) != 2 {
		t.Errorf("%d reports delivered, want 2", len(d))
	}
}

func TestAgentRegistersAgainWithWhatItRunsAndStopsAtShutdown(t *testing.T) {
	tests := []struct {
		name      string
		heartbeat time.Duration
		leaseWait time.Duration
	}{
		{name: "a heartbeat finds the worker forgotten", heartbeat: 20 * time.Millisecond, leaseWait: 30 * time.Second},
		{name: "a lease finds the worker forgotten", heartbeat: time.Hour, leaseWait: 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, url := newFakeServer(t)
			cfg := testConfig(url)
			cfg.Grace, cfg.Slots = 500*time.Millisecond, 2
			cfg.HeartbeatEvery, cfg.LeaseWait = tt.heartbeat, tt.leaseWait
			ag := start(t, cfg)
			marker := filepath.Join(t.TempDir(), "started")
			long := assign("j", "long", 2, "touch "+marker+"; sleep 30", nil)
			fs.give(api.Lease{Assignments: []api.Assignment{long}})
			waitFor(t, "the task to start", func() bool { _, err := os.Stat(marker); return err == nil })

			fs.forget("w1") // the server restarts and loses the worker
			waitFor(t, "a second registration", func() bool { regs, _, _ := fs.snapshot(); return len(regs) >= 2 })
			// The agent works on with the new server.
			quick := assign("j", "quick", 1, "echo hi", nil)
			fs.give(api.Lease{Assignments: []api.Assignment{quick}})
			waitFor(t, "a task leased after the registration to report", func() bool { _, ok := fs.report(quick.Attempt); return ok })

			start := time.Now()
			if err := ag.stop(); err != nil {
				t.Errorf("Run = %v", err)
			}
			if d := time.Since(start); d > cfg.Grace+time.Second {
				t.Errorf("shutdown took %v", d)
			}
			regs, _, _ := fs.snapshot()
			if len(regs) != 2 {
				t.Errorf("%d registrations, want 2 (one, then one again)", len(regs))
			}
			if want := []api.Attempt{long.Attempt}; len(regs) >= 2 && !reflect.DeepEqual(regs[1].Running, want) {
				t.Errorf("registered again with running = %+v, want %+v", regs[1].Running, want)
			}
			r, ok := fs.report(long.Attempt)
			if !ok || r.ExitCode != 128+15 || r.Error != "the worker shut down" || !r.Stopped {
				t.Errorf("shutdown report = %+v (delivered %v)", r, ok)
			}
		})
	}
}

// At shutdown the agent says it stops before it stops its tasks, so the
// server hands it nothing more (not the tasks it requeues as their
// attempts end), then reports the stopped attempts and says it leaves.
func TestAgentSaysItStopsBeforeStoppingItsTasks(t *testing.T) {
	fs, url := newFakeServer(t)
	cfg := testConfig(url)
	cfg.Grace = 500 * time.Millisecond
	ag := start(t, cfg)
	marker := filepath.Join(t.TempDir(), "started")
	long := assign("j", "long", 1, "touch "+marker+"; sleep 30", nil)
	fs.give(api.Lease{Assignments: []api.Assignment{long}})
	waitFor(t, "the task to start", func() bool { _, err := os.Stat(marker); return err == nil })
	if err := ag.stop(); err != nil {
		t.Errorf("Run = %v", err)
	}
	fs.mu.Lock()
	got := slices.Clone(fs.requests)
	fs.mu.Unlock()
	// The stopped attempt's report may go in more than one request (a
	// retry, a report batched apart); what matters is the order.
	between := len(got) - 2
	if between < 1 || got[0] != "stopping" || got[len(got)-1] != "leaving" ||
		slices.ContainsFunc(got[1:len(got)-1], func(r string) bool { return r != "reports" }) {
		t.Errorf("reports requests %v, want stopping, then reports, then leaving", got)
	}
	if r, ok := fs.report(long.Attempt); !ok || !r.Stopped {
		t.Errorf("shutdown report = %+v (delivered %v)", r, ok)
	}
}

func TestStopOrderKillsTheProcessGroupAndFreesTheSlot(t *testing.T) {
	fs, url := newFakeServer(t)
	start(t, testConfig(url)) // one slot
	pidFile := filepath.Join(t.TempDir(), "child")
	// The task and its child ignore SIGTERM: only the SIGKILL after the
	// order's grace ends them.
	victim := assign("j", "victim", 1, "trap '' TERM; sleep 30 & echo $! > "+pidFile+"; wait", nil)
	fs.give(api.Lease{Assignments: []api.Assignment{victim}})
	child := readPID(t, pidFile)

	next := assign("j", "next", 1, "echo next", nil)
	fs.give(api.Lease{
		Stops: []api.StopOrder{{Attempt: victim.Attempt, Grace: spec.Duration(100 * time.Millisecond),
			Reason: model.Reason{Code: "preempted", Message: "urgent job u1"}}},
		Assignments: []api.Assignment{next},
	})
	waitFor(t, "the stop report", func() bool { _, ok := fs.report(victim.Attempt); return ok })
	r, _ := fs.report(victim.Attempt)
	if !r.Stopped || r.ExitCode != 128+9 || !strings.Contains(r.Error, "preempted: urgent job u1") {
		t.Errorf("stop report = %+v", r)
	}
	waitFor(t, "the child to die", func() bool { return gone(child) })
	waitFor(t, "the next task to run in the freed slot", func() bool { _, ok := fs.report(next.Attempt); return ok })
	if r, _ := fs.report(next.Attempt); r.Output != "next\n" || r.ExitCode != 0 {
		t.Errorf("next report = %+v", r)
	}
}

func TestStopOrderForAQueuedAttemptEndsItUnrun(t *testing.T) {
	fs, url := newFakeServer(t)
	start(t, testConfig(url)) // one slot
	marker := filepath.Join(t.TempDir(), "ran")
	busy := assign("j", "busy", 1, "sleep 30", nil)
	queued := assign("j", "queued", 1, "touch "+marker, nil)
	fs.give(api.Lease{Assignments: []api.Assignment{busy, queued}})
	fs.give(api.Lease{Stops: []api.StopOrder{{Attempt: queued.Attempt, Reason: model.Reason{Code: "cancelled"}}}})
	waitFor(t, "the queued attempt's report", func() bool { _, ok := fs.report(queued.Attempt); return ok })
	r, _ := fs.report(queued.Attempt)
	if !r.Stopped || r.ExitCode != -1 || !strings.Contains(r.Error, "before it started") {
		t.Errorf("report = %+v", r)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Error("the stopped attempt ran")
	}
}

func TestFirstRegistration(t *testing.T) {
	tests := []struct {
		name    string
		fails   []int
		wantErr string // "" = registers
	}{
		{name: "retries while the server is unavailable", fails: []int{503, 502, 503}},
		{name: "gives up on a refused token", fails: []int{401}, wantErr: "registering worker \"w1\""},
		{name: "gives up on an invalid registration", fails: []int{400}, wantErr: "refused by the test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, url := newFakeServer(t)
			fs.registerFails = tt.fails
			ag := start(t, testConfig(url))
			if tt.wantErr == "" {
				waitFor(t, "registration", func() bool { return fs.isKnown("w1") })
				if err := ag.stop(); err != nil {
					t.Errorf("Run = %v", err)
				}
				return
			}
			select {
			case err := <-ag.done:
				ag.done <- err
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("Run = %v, want an error containing %q", err, tt.wantErr)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Run kept trying")
			}
		})
	}
}

func TestNewChecksAndDefaultsTheConfig(t *testing.T) {
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "server") {
		t.Errorf("no server: %v", err)
	}
	if _, err := New(Config{Server: "localhost:1"}); err == nil {
		t.Error("a URL without scheme was accepted")
	}
	if _, err := New(Config{Server: "http://x", Slots: -1}); err == nil || !strings.Contains(err.Error(), "slots") {
		t.Errorf("negative slots: %v", err)
	}
	wd := filepath.Join(t.TempDir(), "work", "dir")
	a, err := New(Config{Server: "http://x", WorkDir: wd, Resources: spec.Resources{CPU: 1000, Memory: 1, GPUs: 1, GPUMemory: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(wd); err != nil || !st.IsDir() {
		t.Errorf("workdir not created: %v", err)
	}
	host, _ := os.Hostname()
	c := a.cfg
	if a.Registration().Name != host || c.Slots != 1 || c.OutputTailBytes != DefaultOutputTailBytes || c.Grace != DefaultGrace ||
		c.HeartbeatEvery != DefaultHeartbeatEvery || c.LeaseWait != DefaultLeaseWait {
		t.Errorf("defaults not applied: %+v", c)
	}
	if got := a.Registration().Resources; got != (spec.Resources{CPU: 1000, Memory: 1, GPUs: 1, GPUMemory: 1}) {
		t.Errorf("given resources changed by detection: %+v", got)
	}
}

// Stats counts what the agent accepted, ran and delivered, and the time
// each step took.
func TestStatsCountWhatRanAndWasDelivered(t *testing.T) {
	fs, url := newFakeServer(t)
	cfg := testConfig(url)
	cfg.Slots = 2
	// Without cgroups: making and joining one takes milliseconds (tens
	// on a loaded v1 host), which would blur the setup this test tells
	// from the queue.
	cfg.Cgroups = CgroupsOff
	var mu sync.Mutex
	var started []api.Attempt
	cfg.Started = func(a api.Attempt) {
		mu.Lock()
		defer mu.Unlock()
		started = append(started, a)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// a and b hold both slots long enough that c's wait for one dwarfs
	// the setup of three processes even on a loaded machine.
	l := api.Lease{Assignments: []api.Assignment{assign("j", "a", 1, "sleep 0.4", nil), assign("j", "b", 1, "sleep 0.4", nil), assign("j", "c", 1, "true", nil)}}
	fs.give(l)
	waitFor(t, "three reports", func() bool { _, _, d := fs.snapshot(); return len(d) == 3 })
	waitFor(t, "the stats to count them", func() bool { return a.Stats().Reported == 3 })
	s := a.Stats()
	if s.Accepted != 3 || s.Started != 3 || s.ReportRequests < 1 || s.ReportRequests > 3 || s.LeaseRequests < 1 {
		t.Errorf("stats %+v, want 3 accepted, started and reported in 1 to 3 requests", s)
	}
	if s.Run < 800*time.Millisecond || s.Setup <= 0 || s.Finish <= 0 || s.Deliver <= 0 {
		t.Errorf("stats %+v: the processes ran at least 800ms in all, and every step takes some time", s)
	}
	// c waited in the queue for a or b to end: that is not its setup.
	if s.Queued < 350*time.Millisecond || s.Setup >= s.Queued {
		t.Errorf("stats %+v: c waited at least 350ms for a slot, and that counts as queued, not setup", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(started) != 3 {
		t.Errorf("Started was told of %v, want the 3 attempts", started)
	}
}
