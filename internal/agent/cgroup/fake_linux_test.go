package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeFile makes dir/name holding content, with its directories.
func fakeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wants checks that each file under dir holds what it should.
func wants(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, want := range files {
		got, err := read(dir, name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func absent(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists (err %v), want it absent", path, err)
	}
}

// fakeV1Tree is a v1 tree as a host mounts it, with the files the agent
// reads before it writes.
func fakeV1Tree(t *testing.T) string {
	root := t.TempDir()
	for _, c := range []string{"cpu", "cpuacct", "memory", "pids", "freezer", "devices"} {
		if err := os.MkdirAll(filepath.Join(root, c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fakeFile(t, filepath.Join(root, "cpuset"), "cpuset.cpus", "0-3\n")
	fakeFile(t, filepath.Join(root, "cpuset"), "cpuset.mems", "0\n")
	return root
}

func TestV1WritesLimitsIntoEachHierarchy(t *testing.T) {
	root := fakeV1Tree(t)
	m, err := Open(Options{Root: root, Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	wants(t, filepath.Join(root, "cpuset", m.name), map[string]string{"cpuset.cpus": "0-3", "cpuset.mems": "0"})
	g, err := m.New("job-1/train/2", Limits{MilliCPU: 1500, CPUs: []int{1, 2}, Memory: 256 << 20, Pids: 100,
		Devices: []Device{{'c', 195, 0}}})
	if err != nil {
		t.Fatal(err)
	}
	name := "job-1_train_2"
	at := func(c string) string { return filepath.Join(root, c, m.name, name) }
	wants(t, at("cpu"), map[string]string{"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "150000"})
	wants(t, at("cpuset"), map[string]string{"cpuset.cpus": "1,2", "cpuset.mems": "0"})
	wants(t, at("memory"), map[string]string{"memory.limit_in_bytes": "268435456"})
	wants(t, at("pids"), map[string]string{"pids.max": "100"})
	// The fake keeps the last write: the deny-all came first, the
	// attempt's own device last.
	wants(t, at("devices"), map[string]string{"devices.deny": "a", "devices.allow": "c 195:0 rwm"})

	fakeFile(t, at("cpuacct"), "cpuacct.usage", "2500000000\n")
	fakeFile(t, at("memory"), "memory.max_usage_in_bytes", "1048576\n")
	fakeFile(t, at("memory"), "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
	want := Usage{CPU: 2500 * time.Millisecond, HasCPU: true, PeakMemory: 1 << 20, HasPeak: true, OOMKills: 1}
	if got := g.Usage(); got != want {
		t.Errorf("Usage = %+v, want %+v", got, want)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	for _, c := range v1Controllers {
		absent(t, at(c))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range v1Controllers {
		absent(t, filepath.Join(root, c, m.name))
	}
}

func TestV1JoinsOnlyTheHierarchiesItNeeds(t *testing.T) {
	root, m := openFakeV1(t)
	g, err := m.New("a", Limits{Pids: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	absent(t, filepath.Join(root, "cpuset", m.name, "a"))
	absent(t, filepath.Join(root, "devices", m.name, "a"))
	absent(t, filepath.Join(root, "cpu", m.name, "a"))
	absent(t, filepath.Join(root, "memory", m.name, "a", "memory.limit_in_bytes"))
	if got := g.impl.dirs(); !slices.Equal(got, []string{
		filepath.Join(root, "cpuacct", m.name, "a"),
		filepath.Join(root, "memory", m.name, "a"), filepath.Join(root, "pids", m.name, "a"),
		filepath.Join(root, "freezer", m.name, "a")}) {
		t.Errorf("dirs = %v", got)
	}
}

func TestV2WritesLimitsAndHandsControllersDown(t *testing.T) {
	root := t.TempDir()
	fakeFile(t, root, "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma\n")
	m, err := Open(Options{Root: root, Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Missing(); len(got) != 0 {
		t.Errorf("Missing = %v, want none", got)
	}
	// The fake keeps the last write of each file.
	wants(t, root, map[string]string{"cgroup.subtree_control": "+pids"})
	wants(t, filepath.Join(root, m.name), map[string]string{"cgroup.subtree_control": "+pids"})
	dir := filepath.Join(root, m.name, "t")
	fakeFile(t, dir, "memory.swap.max", "max")
	fakeFile(t, dir, "memory.oom.group", "0")
	g, err := m.New("t", Limits{MilliCPU: 250, CPUs: []int{3}, Memory: 1 << 30, Pids: 64})
	if err != nil {
		t.Fatal(err)
	}
	wants(t, dir, map[string]string{"cpu.max": "25000 100000", "cpuset.cpus": "3", "memory.max": "1073741824",
		"memory.swap.max": "0", "memory.oom.group": "1", "pids.max": "64"})

	fakeFile(t, dir, "cpu.stat", "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n")
	fakeFile(t, dir, "memory.peak", "4096\n")
	fakeFile(t, dir, "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n")
	want := Usage{CPU: 1500 * time.Millisecond, HasCPU: true, PeakMemory: 4096, HasPeak: true, OOMKills: 2}
	if got := g.Usage(); got != want {
		t.Errorf("Usage = %+v, want %+v", got, want)
	}
	if _, err := m.New("gpu", Limits{Devices: []Device{{'c', 195, 0}}}); !errors.Is(err, ErrDevices) {
		t.Errorf("New with devices on v2: err = %v, want ErrDevices", err)
	}
	absent(t, filepath.Join(root, m.name, "gpu"))
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	absent(t, filepath.Join(root, m.name))
}

func TestV2WithoutControllersSaysWhatIsMissing(t *testing.T) {
	root := t.TempDir()
	fakeFile(t, root, "cgroup.controllers", "\n")
	m, err := Open(Options{Root: root, Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got, want := m.Missing(), []string{"cpu", "cpuset", "memory", "pids"}; !slices.Equal(got, want) {
		t.Errorf("Missing = %v, want %v", got, want)
	}
	g, err := m.New("t", Limits{MilliCPU: 1000, Memory: 1 << 20, Pids: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	absent(t, filepath.Join(root, m.name, "t", "memory.max"))
}

func TestOpenRefusesATreeItCannotWrite(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-directory")
	fakeFile(t, filepath.Dir(file), filepath.Base(file), "")
	for _, v := range []int{1, 2} {
		if _, err := Open(Options{Root: file, Version: v}); err == nil {
			t.Errorf("v%d: Open under a file succeeded", v)
		}
	}
	if os.Geteuid() != 0 {
		ro := t.TempDir()
		if err := os.Chmod(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(Options{Root: ro, Version: 2}); err == nil {
			t.Error("Open under a read-only directory succeeded")
		}
	}
}

func TestParseMountinfoFindsBothHierarchies(t *testing.T) {
	mi := filepath.Join(t.TempDir(), "mountinfo")
	fakeFile(t, filepath.Dir(mi), filepath.Base(mi), strings.Join([]string{
		`31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755`,
		`32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct`,
		`35 31 0:32 /kubepods /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory`,
		`40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd`,
		`41 31 0:38 / /sys/fs/cgroup/unified\040tree rw,relatime - cgroup2 cgroup2 rw`,
	}, "\n"))
	got, err := ParseMountinfo(mi)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{
		{Point: "/sys/fs/cgroup/cpu,cpuacct", Root: "/", Controllers: []string{"cpu", "cpuacct"}},
		{Point: "/sys/fs/cgroup/memory", Root: "/kubepods", Controllers: []string{"memory"}},
		{Point: "/sys/fs/cgroup/unified tree", Root: "/", V2: true},
	}
	if len(got) != len(want) {
		t.Fatalf("mounts = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Point != want[i].Point || got[i].Root != want[i].Root || got[i].V2 != want[i].V2 ||
			!slices.Equal(got[i].Controllers, want[i].Controllers) {
			t.Errorf("mount %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if d := ownDir(want[1], "/kubepods/pod1"); d != "/sys/fs/cgroup/memory/pod1" {
		t.Errorf("ownDir = %s", d)
	}
}

func TestParseCPUList(t *testing.T) {
	got, err := ParseCPUList("0-2,5,7-8\n")
	if err != nil || !slices.Equal(got, []int{0, 1, 2, 5, 7, 8}) {
		t.Errorf("ParseCPUList = %v, %v", got, err)
	}
	if cpuList([]int{1, 3}) != "1,3" {
		t.Error("cpuList")
	}
	if safeName("../x y") != ".._x_y" || safeName("..") != "_" {
		t.Errorf("safeName: %q %q", safeName("../x y"), safeName(".."))
	}
}

func TestOpenRemovesTheGroupsOfAgentsThatDied(t *testing.T) {
	root := t.TempDir()
	fakeFile(t, root, "cgroup.controllers", "")
	dead := filepath.Join(root, "allot-999999999-ab") // above any PID the kernel hands out
	fakeFile(t, filepath.Join(dead, "job.task.1"), "cgroup.procs", "")
	fakeFile(t, filepath.Join(dead, "job.task.1"), "cgroup.freeze", "1")
	deadLeaf := filepath.Join(root, "allot-999999999-ab-agent")
	fakeFile(t, deadLeaf, "cgroup.procs", "")
	mine := filepath.Join(root, "allot-"+strconv.Itoa(os.Getpid())+"-cd")
	other := filepath.Join(root, "system.slice")
	for _, d := range []string{mine, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Open(Options{Root: root, Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	absent(t, dead)
	absent(t, deadLeaf)
	for _, d := range []string{mine, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v, want it kept", d, err)
		}
	}
}

func TestHybridHostsUseTheHierarchyWithTheControllers(t *testing.T) {
	v1 := map[string]string{"cpu": "/sys/fs/cgroup/cpu", "cpuset": "/c", "memory": "/m", "pids": "/p"}
	for _, c := range []struct {
		avail string
		v1    map[string]string
		want  bool
	}{
		{"hugetlb", v1, false}, // this build machine: v1 controllers, v2 with hugetlb only
		{"cpuset cpu io memory pids", nil, true},
		{"cpuset cpu io memory pids", v1, true},
		{"", nil, true}, // nothing anywhere: v2 kills and measures all the same
		{"memory", v1, false},
	} {
		if got := prefersV2(c.avail, c.v1); got != c.want {
			t.Errorf("prefersV2(%q, %d v1 controllers) = %v, want %v", c.avail, len(c.v1), got, c.want)
		}
	}
}

// emptyProcs gives each of the group's directories an empty process
// list, as the kernel shows a group whose task is gone.
func emptyProcs(t *testing.T, g *Group) {
	t.Helper()
	for _, d := range g.impl.(*group1).madeDirs() {
		fakeFile(t, d, "cgroup.procs", "")
	}
}

func TestV1GivesAGroupBackToTheNextAttemptWithItsLimitsAndCountsFromZero(t *testing.T) {
	root, m := openFakeV1(t)
	g, err := m.Take("job-1.t.1", Limits{MilliCPU: 1500, Memory: 256 << 20, Pids: 100})
	if err != nil {
		t.Fatal(err)
	}
	at := func(c string) string { return filepath.Join(root, c, m.name, "slot-1") }
	wants(t, at("cpu"), map[string]string{"cpu.cfs_quota_us": "150000"})
	wants(t, at("memory"), map[string]string{"memory.limit_in_bytes": "268435456"})
	wants(t, at("pids"), map[string]string{"pids.max": "100"})
	emptyProcs(t, g)
	fakeFile(t, at("cpuacct"), "cpuacct.usage", "2500000000\n")
	fakeFile(t, at("memory"), "memory.max_usage_in_bytes", "9000000\n")
	fakeFile(t, at("memory"), "memory.usage_in_bytes", "4096\n")
	fakeFile(t, at("memory"), "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if u := g.Usage(); u.CPU != 2500*time.Millisecond || u.PeakMemory != 9000000 {
		t.Errorf("first attempt's Usage = %+v", u)
	}
	if err := g.Release(); err != nil {
		t.Fatal(err)
	}
	// The peak starts again from what the group holds (the fake's file
	// keeps the rest of the old number after the 0 written over it).
	if peak, err := readInt(at("memory"), "memory.max_usage_in_bytes"); err != nil || peak != 0 {
		t.Errorf("memory.max_usage_in_bytes = %d (%v), want it reset", peak, err)
	}

	g2, err := m.Take("job-1.t.2", Limits{Memory: 128 << 20, Pids: 50})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g2.impl.dirs(), []string{at("cpuacct"), at("memory"), at("pids"), at("freezer")}; !slices.Equal(got, want) {
		t.Errorf("the second attempt joins %v, want %v (the first's group, without the quota it does not ask for)", got, want)
	}
	wants(t, at("memory"), map[string]string{"memory.limit_in_bytes": "134217728"})
	wants(t, at("pids"), map[string]string{"pids.max": "50"})
	fakeFile(t, at("cpuacct"), "cpuacct.usage", "3000000000\n")
	fakeFile(t, at("memory"), "memory.max_usage_in_bytes", "4096\n")
	fakeFile(t, at("memory"), "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
	want := Usage{CPU: 500 * time.Millisecond, HasCPU: true, PeakMemory: 4096, HasPeak: true, OOMKills: 1}
	if got := g2.Usage(); got != want {
		t.Errorf("second attempt's Usage = %+v, want %+v (its own share)", got, want)
	}
}

func TestV1RemovesAGroupItCannotGiveBackClean(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kill  bool   // Kill found the group empty
		oom   string // oom_kill after the attempt
		peak  string // memory.max_usage_in_bytes
		usage string // memory.usage_in_bytes after it
		reuse bool
	}{
		{name: "clean", kill: true, oom: "0", peak: "1000000", usage: "65536", reuse: true},
		{name: "clean after a big peak", kill: true, oom: "0", peak: "300000000", usage: "65536", reuse: true},
		{name: "never found empty", kill: false, oom: "0", peak: "1000000", usage: "65536"},
		{name: "an out-of-memory kill", kill: true, oom: "1", peak: "1000000", usage: "0"},
		{name: "still charged for files it left", kill: true, oom: "0", peak: "300000000", usage: "8388608"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeV1Tree(t)
			m, err := Open(Options{Root: root, Version: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			g, err := m.Take("a", Limits{Pids: 10})
			if err != nil {
				t.Fatal(err)
			}
			emptyProcs(t, g)
			mem := filepath.Join(root, "memory", m.name, "slot-1")
			fakeFile(t, filepath.Join(root, "cpuacct", m.name, "slot-1"), "cpuacct.usage", "1000\n")
			fakeFile(t, mem, "memory.max_usage_in_bytes", tc.peak+"\n")
			fakeFile(t, mem, "memory.usage_in_bytes", tc.usage+"\n")
			fakeFile(t, mem, "memory.oom_control", "oom_kill "+tc.oom+"\n")
			if tc.kill {
				if err := g.Kill(); err != nil {
					t.Fatal(err)
				}
			}
			g.Usage()
			if err := g.Release(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(mem); (err == nil) != tc.reuse {
				t.Errorf("after Release: %v, want the group kept: %v", err, tc.reuse)
			}
			g2, err := m.Take("b", Limits{Pids: 10})
			if err != nil {
				t.Fatal(err)
			}
			if reused := g2.impl.(*group1).name == "slot-1"; reused != tc.reuse {
				t.Errorf("the next attempt got %s, want the first group: %v", g2.impl.(*group1).name, tc.reuse)
			}
		})
	}
}

func TestV1RewritesADifferentMemoryLimitInAnOrderMemswTakes(t *testing.T) {
	root, m := openFakeV1(t)
	mem := filepath.Join(root, "memory", m.name, "slot-1")
	fakeFile(t, mem, "memory.memsw.limit_in_bytes", "9223372036854771712\n")
	for _, limit := range []int64{64 << 20, 128 << 20, 32 << 20, 0, 16 << 20} {
		g, err := m.Take("a", Limits{Memory: limit})
		if err != nil {
			t.Fatal(err)
		}
		want := strconv.FormatInt(limit, 10)
		if limit == 0 {
			want = "-1"
		}
		wants(t, mem, map[string]string{"memory.limit_in_bytes": want, "memory.memsw.limit_in_bytes": want})
		emptyProcs(t, g)
		fakeFile(t, filepath.Join(root, "cpuacct", m.name, "slot-1"), "cpuacct.usage", "0\n")
		fakeFile(t, mem, "memory.usage_in_bytes", "0\n")
		fakeFile(t, mem, "memory.max_usage_in_bytes", "0\n")
		fakeFile(t, mem, "memory.oom_control", "oom_kill 0\n")
		if err := g.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := g.Release(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestV1KillOfAReusableGroupTrustsPidsCurrentWhenItSaysEmpty(t *testing.T) {
	root, m := openFakeV1(t)
	g, err := m.Take("a", Limits{Pids: 10})
	if err != nil {
		t.Fatal(err)
	}
	pids := filepath.Join(root, "pids", m.name, "slot-1")
	// No cgroup.procs in the fake: only pids.current can tell.
	fakeFile(t, pids, "pids.current", "1\n")
	if err := g.Kill(); err == nil {
		t.Fatal("Kill with a process counted and no list: nil, want the list's error")
	}
	fakeFile(t, pids, "pids.current", "0\n")
	if err := g.Kill(); err != nil || !g.emptied.Load() {
		t.Fatalf("Kill with none counted: %v, emptied %v", err, g.emptied.Load())
	}
}

// openFakeV1 opens a manager on a fake v1 tree, closed when the test ends.
func openFakeV1(t *testing.T) (string, *Manager) {
	t.Helper()
	root := fakeV1Tree(t)
	m, err := Open(Options{Root: root, Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return root, m
}
