package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/agent/cgroup"
	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
)

// unwritableRoot is a cgroup root nothing can be made under, even by
// root: a regular file.
func unwritableRoot(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "not-a-directory")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAnAgentThatCannotMakeCgroupsRegistersWhy(t *testing.T) {
	for _, c := range []struct {
		name, mode, root, wantHas string
	}{
		{"no cgroup can be made", CgroupsAuto, "", "not a directory"},
		{"turned off", CgroupsOff, "", "--cgroups off"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, url := newFakeServer(t)
			cfg := testConfig(url)
			cfg.Cgroups, cfg.CgroupRoot = c.mode, unwritableRoot(t)
			r := start(t, cfg)
			waitFor(t, "a registration", func() bool { regs, _, _ := fs.snapshot(); return len(regs) > 0 })
			if err := r.stop(); err != nil {
				t.Fatal(err)
			}
			regs, _, _ := fs.snapshot()
			if !strings.Contains(regs[0].Unconfined, c.wantHas) {
				t.Errorf("registered unconfined = %q, want it to say %q", regs[0].Unconfined, c.wantHas)
			}
		})
	}
}

func TestAServerThatDoesNotKnowUnconfinedWorkersStillTakesTheRegistration(t *testing.T) {
	fs, url := newFakeServer(t)
	fs.unknownFields = []string{"unconfined"}
	cfg := testConfig(url)
	cfg.CgroupRoot = unwritableRoot(t)
	r := start(t, cfg)
	waitFor(t, "a registration", func() bool { regs, _, _ := fs.snapshot(); return len(regs) > 0 })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if regs, _, _ := fs.snapshot(); regs[0].Unconfined != "" {
		t.Errorf("registered unconfined = %q to a server that refuses it", regs[0].Unconfined)
	}
}

func TestAConfinedAgentRegistersNoReason(t *testing.T) {
	root := t.TempDir() // a fake v2 tree without controllers
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fs, url := newFakeServer(t)
	cfg := testConfig(url)
	cfg.CgroupRoot = root
	r := start(t, cfg)
	waitFor(t, "a registration", func() bool { regs, _, _ := fs.snapshot(); return len(regs) > 0 })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if regs, _, _ := fs.snapshot(); regs[0].Unconfined != "" {
		t.Errorf("registered unconfined = %q", regs[0].Unconfined)
	}
	// The agent removed its group when it stopped.
	if ents, _ := os.ReadDir(root); slices.ContainsFunc(ents, func(e os.DirEntry) bool { return e.IsDir() }) {
		t.Errorf("the agent left %v in its cgroup root", ents)
	}
}

func TestNewRefusesAnUnknownCgroupMode(t *testing.T) {
	cfg := testConfig("http://127.0.0.1:1")
	cfg.Cgroups = "v3"
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "cgroups") {
		t.Errorf("New with cgroups v3: %v, want an error naming cgroups", err)
	}
}

func TestAnUnconfinedAttemptReportsItsOwnUsage(t *testing.T) {
	r := testRunner(1024)
	rep := runNow(r, newAttempt(api.Assignment{Run: "head -c 30000000 /dev/zero | tail | wc -c"}))
	if rep.ExitCode != 0 || rep.Error != "" {
		t.Fatalf("report %+v", rep)
	}
	// tail holds its one line whole: 30 MB at its peak.
	if rep.PeakMemory < 25<<20 {
		t.Errorf("peak memory %d bytes, want at least tail's 30 MB", rep.PeakMemory)
	}
	if rep.CPUSeconds <= 0 {
		t.Errorf("CPU time %v s, want some", rep.CPUSeconds)
	}
}

// confinedRunner is a runner whose attempts run in cgroups of the host's
// hierarchy; it skips where there is none or the test is not root.
func confinedRunner(t *testing.T) runner {
	t.Helper()
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mi), " - cgroup") {
		t.Skip("no cgroup hierarchy is mounted")
	}
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root")
	}
	m, err := cgroup.Open(cgroup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	r := testRunner(1024)
	r.cg, r.cpus, r.pids = m, newCPUPool(), cgroup.DefaultPids
	return r
}

func TestAConfinedAttemptThatRunsOutOfMemorySaysSoInItsErrorAndOutput(t *testing.T) {
	r := confinedRunner(t)
	if slices.Contains(r.cg.Missing(), "memory") {
		t.Skip("the host gives no memory controller")
	}
	as := api.Assignment{Attempt: api.Attempt{Job: "j", Task: "hog", Attempt: 1},
		Run: "echo start; head -c 200000000 /dev/zero | tail", Resources: spec.Resources{Memory: 32}}
	rep := runNow(r, newAttempt(as))
	if !strings.HasPrefix(rep.Error, "out of memory: killed at its memory limit of 32 MiB (peak ") {
		t.Errorf("error %q, want out of memory at 32 MiB with the peak", rep.Error)
	}
	if !strings.HasPrefix(rep.Output, "start\n") || !strings.HasSuffix(rep.Output, "allot: "+rep.Error+"\n") {
		t.Errorf("output %q, want the task's then the agent's line", rep.Output)
	}
	if rep.PeakMemory < 16<<20 || rep.PeakMemory > 40<<20 {
		t.Errorf("peak %d bytes, want about 32 MiB", rep.PeakMemory)
	}
}

func TestConfinedAttemptsGetWholeCPUsOfTheirOwnWhileFree(t *testing.T) {
	p := &cpuPool{free: []int{0, 1, 2, 3}}
	a := p.take(2)
	b := p.take(3) // one free CPU too few: none, the quota alone
	c := p.take(1)
	if !slices.Equal(a, []int{0, 1}) || b != nil || !slices.Equal(c, []int{2}) {
		t.Fatalf("took %v, %v, %v", a, b, c)
	}
	p.give(a)
	if got := p.take(3); !slices.Equal(got, []int{0, 1, 3}) {
		t.Errorf("after giving back: took %v, want [0 1 3]", got)
	}
	var none *cpuPool // unconfined
	if none.take(1) != nil {
		t.Error("a nil pool gave CPUs")
	}
}

func TestWithNoteKeepsTheTail(t *testing.T) {
	for _, c := range []struct {
		out   string
		limit int
		want  string
	}{
		{"", 100, "allot: x\n"},
		{"a", 100, "a\nallot: x\n"},
		{"abc\n", 100, "abc\nallot: x\n"},
		{"abcdef\n", 12, "ef\nallot: x\n"},
		{"abc", 2, "allot: x\n"},
	} {
		if got := withNote(c.out, "allot: x", c.limit); got != c.want {
			t.Errorf("withNote(%q, %d) = %q, want %q", c.out, c.limit, got, c.want)
		}
	}
}

func TestAServerThatDoesNotKnowUsageStillGetsTheReports(t *testing.T) {
	fs, url := newFakeServer(t)
	fs.refuseUsage = true
	r := start(t, testConfig(url))
	defer r.stop()
	fs.give(api.Lease{Assignments: []api.Assignment{assign("j", "a", 1, "head -c 1000000 /dev/zero | tail | wc -c", nil)}})
	waitFor(t, "the report", func() bool { _, _, d := fs.snapshot(); return len(d) == 1 })
	_, calls, d := fs.snapshot()
	if d[0].ExitCode != 0 || d[0].CPUSeconds != 0 || d[0].PeakMemory != 0 {
		t.Errorf("delivered %+v, want the report without usage", d[0])
	}
	if calls[0][0].PeakMemory == 0 {
		t.Errorf("the first try carried no usage: %+v", calls[0][0])
	}
}
