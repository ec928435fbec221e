package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// openReal opens the host's hierarchy of the given version (0: the one
// the agent would pick). It skips only where none is mounted, or where
// the test does not run as root (it cannot make groups then).
func openReal(t *testing.T, version int) *Manager {
	t.Helper()
	mounts, err := ParseMountinfo("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	has := slices.ContainsFunc(mounts, func(m Mount) bool { return version == 0 || m.V2 == (version == 2) })
	if !has {
		t.Skipf("no cgroup v%d hierarchy is mounted", version)
	}
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root")
	}
	m, err := Open(Options{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	return m
}

// startIn starts cmd in g from a locked thread, as the agent does.
func startIn(t *testing.T, g *Group, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		startErr, leaveErr := g.Start(cmd, cmd.Start)
		if leaveErr != nil {
			done <- leaveErr
			return // ends the thread
		}
		runtime.UnlockOSThread()
		done <- startErr
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// A zombie is dead: it waits only for its parent to reap it.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestKillTakesDetachedDaemons(t *testing.T) {
	for _, v := range []int{1, 2} {
		t.Run(map[int]string{1: "v1", 2: "v2"}[v], func(t *testing.T) {
			m := openReal(t, v)
			g, err := m.New("daemons", Limits{Pids: 50})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := g.Remove(); err != nil {
					t.Error(err)
				}
			}()
			// A daemon: a new session, its parent gone (double fork).
			cmd := exec.Command("/bin/sh", "-c", `setsid sh -c 'sleep 300 & sleep 300' </dev/null >/dev/null 2>&1 & sleep 300`)
			startIn(t, g, cmd)
			defer cmd.Wait()
			var pids []int
			for range 200 {
				if pids, _ = g.Procs(); len(pids) >= 4 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if len(pids) < 4 || !slices.Contains(pids, cmd.Process.Pid) {
				t.Fatalf("group holds %v, want the shell %d and its 3 descendants", pids, cmd.Process.Pid)
			}
			if err := g.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			deadline := time.Now().Add(2 * time.Second)
			for _, p := range pids {
				for alive(p) && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if alive(p) {
					t.Errorf("process %d survived the kill", p)
				}
			}
			if left, _ := g.Procs(); len(left) != 0 {
				t.Errorf("group still holds %v", left)
			}
			if u := g.Usage(); !u.HasCPU {
				t.Errorf("Usage = %+v, want CPU time", u)
			}
		})
	}
}

func TestStartPutsTheProcessInTheGroupFromTheFirstInstruction(t *testing.T) {
	for _, v := range []int{1, 2} {
		t.Run(map[int]string{1: "v1", 2: "v2"}[v], func(t *testing.T) {
			m := openReal(t, v)
			g, err := m.New("first", Limits{Pids: 10})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Remove()
			// cat reads its own groups: it runs nothing before.
			cmd := exec.Command("/bin/cat", "/proc/self/cgroup")
			var out strings.Builder
			cmd.Stdout = &out
			startIn(t, g, cmd)
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "/first") {
				t.Errorf("the process's groups:\n%s\nwant the attempt's group", out.String())
			}
			// The starting thread stayed home: a process it starts next
			// is outside the group.
			self, _ := os.ReadFile("/proc/thread-self/cgroup")
			if strings.Contains(string(self), "/first") {
				t.Errorf("the test's thread is in the group:\n%s", self)
			}
		})
	}
}

func TestTheKernelTakesTheLimits(t *testing.T) {
	m := openReal(t, 0)
	cpus, err := ParseCPUList(mustRead(t, "/sys/devices/system/cpu/online"))
	if err != nil || len(cpus) == 0 {
		t.Fatalf("online CPUs: %v %v", cpus, err)
	}
	g, err := m.New("limits", Limits{MilliCPU: 500, CPUs: cpus[:1], Memory: 64 << 20, Pids: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	var want map[string]string
	var dir func(file string) string
	switch impl := g.impl.(type) {
	case *group1:
		want = map[string]string{"cpu.cfs_quota_us": "50000", "memory.limit_in_bytes": "67108864", "pids.max": "32",
			"cpuset.cpus": strconv.Itoa(cpus[0])}
		dir = func(file string) string { return impl.dir[strings.SplitN(file, ".", 2)[0]] }
	case *group2:
		want = map[string]string{"cpu.max": "50000 100000", "memory.max": "67108864", "pids.max": "32",
			"cpuset.cpus": strconv.Itoa(cpus[0])}
		dir = func(string) string { return impl.dir }
	}
	for file, v := range want {
		d := dir(file)
		if d == "" || !exists(d, file) {
			t.Logf("%s: no such controller here", file)
			continue
		}
		if got, err := read(d, file); err != nil || got != v {
			t.Errorf("%s = %q (%v), want %q", file, got, err, v)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestV1StartsByMovingTheThreadWherePtraceIsRefused(t *testing.T) {
	m := openReal(t, 1)
	m.h.(*v1).noTrace.Store(true)
	g, err := m.New("thread", Limits{Pids: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	cmd := exec.Command("/bin/cat", "/proc/self/cgroup")
	var out strings.Builder
	cmd.Stdout = &out
	startIn(t, g, cmd)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "/thread") {
		t.Errorf("the process's groups:\n%s\nwant the attempt's group", out.String())
	}
	self, _ := os.ReadFile("/proc/thread-self/cgroup")
	if strings.Contains(string(self), "/thread") {
		t.Errorf("the test's thread is still in the group:\n%s", self)
	}
}

// A device the group denies cannot be opened, while another of the same
// driver still can: two nodes of a major no driver serves (so opening one
// that is allowed fails with ENXIO, "no such device", not EPERM).
func TestV1DeniesTheDevicesItIsTold(t *testing.T) {
	m := openReal(t, 1)
	if !slices.Contains(m.h.(*v1).controllers(), "devices") {
		t.Skip("no devices controller on this v1 hierarchy")
	}
	dir := t.TempDir()
	const major = 240 // local/experimental use: no driver here
	for minor := range 2 {
		dev := int((major << 8) | minor)
		if err := syscall.Mknod(filepath.Join(dir, "gpu"+strconv.Itoa(minor)), syscall.S_IFCHR|0o666, dev); err != nil {
			t.Skipf("cannot make device nodes here: %v", err)
		}
	}
	g, err := m.New("deny", Limits{DenyDevices: []Device{{'c', major, 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Remove() }()
	var out strings.Builder
	cmd := exec.Command("sh", "-c", "cat "+filepath.Join(dir, "gpu0")+"; cat "+filepath.Join(dir, "gpu1"))
	cmd.Stdout, cmd.Stderr = &out, &out
	startIn(t, g, cmd)
	_ = cmd.Wait()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "No such device") || !strings.Contains(lines[1], "Operation not permitted") {
		t.Fatalf("opening an allowed and a denied node: %q; want ENXIO for gpu0, EPERM for gpu1", out.String())
	}
}

// runIn runs cmd in g to its end, kills what is left, and returns what
// the attempt used, as the agent does.
func runIn(t *testing.T, g *Group, cmd *exec.Cmd) Usage {
	t.Helper()
	startIn(t, g, cmd)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	return g.Usage()
}

func TestV1AReusedGroupMeasuresEachAttemptAloneAndTakesNewLimits(t *testing.T) {
	m := openReal(t, 1)
	g, err := m.Take("big", Limits{Memory: 256 << 20, Pids: 64})
	if err != nil {
		t.Fatal(err)
	}
	// 20 MB in a shell variable, and some CPU.
	big := runIn(t, g, exec.Command("/bin/sh", "-c",
		`x=$(head -c 20000000 /dev/zero | tr '\0' a); i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done`))
	if err := g.Release(); err != nil {
		t.Fatal(err)
	}
	first := g.impl.(*group1).name
	// A higher limit: memory plus swap must take it before memory does.
	g, err = m.Take("small", Limits{Memory: 512 << 20, Pids: 64})
	if err != nil {
		t.Fatal(err)
	}
	if name := g.impl.(*group1).name; name != first {
		t.Fatalf("the second attempt got group %s, want %s, given back by the first", name, first)
	}
	small := runIn(t, g, exec.Command("/bin/true"))
	if small.PeakMemory*2 > big.PeakMemory || small.CPU*2 > big.CPU || small.CPU <= 0 || small.PeakMemory <= 0 {
		t.Errorf("true used %+v after a shell that used %+v: want its own use only", small, big)
	}
	if err := g.Release(); err != nil {
		t.Fatal(err)
	}
	g, err = m.Take("lower", Limits{Memory: 64 << 20, Pids: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	d := g.impl.(*group1).dir["memory"]
	for _, f := range []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"} {
		if !exists(d, f) {
			continue
		}
		if got, err := read(d, f); err != nil || got != "67108864" {
			t.Errorf("%s = %q (%v), want 67108864", f, got, err)
		}
	}
}

func TestV1AGroupADaemonWasKilledInIsNotReused(t *testing.T) {
	m := openReal(t, 1)
	g, err := m.Take("daemon", Limits{Pids: 50})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", `setsid sleep 300 </dev/null >/dev/null 2>&1 &`)
	runIn(t, g, cmd)
	dirs := g.impl.(*group1).madeDirs()
	if err := g.Release(); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		absent(t, d)
	}
	g, err = m.Take("next", Limits{Pids: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	if slices.Equal(g.impl.(*group1).madeDirs(), dirs) {
		t.Errorf("the next attempt got the group the daemon was killed in")
	}
}
