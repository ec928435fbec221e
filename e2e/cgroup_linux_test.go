package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// needCgroups skips a test that needs the worker to make cgroups where it
// cannot: no cgroup hierarchy mounted at all, or not root. In CI (root,
// cgroups mounted) these tests run.
func needCgroups(t *testing.T) {
	t.Helper()
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mi), " - cgroup ") && !strings.Contains(string(mi), " - cgroup2 ") {
		t.Skip("no cgroup hierarchy is mounted")
	}
	if os.Geteuid() != 0 {
		t.Skip("the worker makes cgroups only as root")
	}
}

func TestATaskPastItsMemoryLimitIsKilledAndReportedOutOfMemory(t *testing.T) {
	needCgroups(t)
	c := start(t)
	c.worker("w1", 1)
	// tail keeps a line until it ends: one without newlines grows
	// until the limit stops it.
	j := c.submit(`
id: hog
tasks:
  - name: hog
    resources: {memory: 64Mi}
    run: head -c 400M /dev/zero | tail
`)
	final := c.waitJob(j.ID, 60*time.Second)
	tk := taskByName(final, "hog")
	if final.State != "failed" || tk.Reason == nil || !strings.Contains(tk.Reason.Message, "out of memory") {
		t.Fatalf("job %s, task %+v; want failed, out of memory", final.State, tk)
	}
	if tk.PeakMemory < 32<<20 || tk.PeakMemory > 72<<20 {
		t.Errorf("peak memory %d bytes, want about the limit of 64 MiB", tk.PeakMemory)
	}
	if !strings.Contains(tk.Reason.Message, "peak") {
		t.Errorf("reason %q does not give the peak", tk.Reason.Message)
	}
	for _, args := range [][]string{{"get", j.ID}, {"logs", j.ID, "hog"}, {"events", "--job", j.ID}} {
		out, err := c.cli(args...)
		if err != nil {
			t.Fatalf("allot %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if !strings.Contains(out, "out of memory") {
			t.Errorf("allot %s does not say out of memory:\n%s", strings.Join(args, " "), out)
		}
		if args[0] == "get" && (!strings.Contains(out, "PEAK MEM") || !strings.Contains(out, "Mi")) {
			t.Errorf("allot get does not show the peak memory:\n%s", out)
		}
	}
}

func TestCancelKillsTheDaemonsATaskStarted(t *testing.T) {
	needCgroups(t)
	c := start(t)
	c.worker("w1", 1)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "daemon.pid")
	// A daemon: a session of its own, its parent gone (double fork), its
	// output away from the task's.
	j := c.submit(fmt.Sprintf(`
id: daemon
tasks:
  - name: d
    run: (setsid sh -c 'echo $$ > %[1]s.tmp; mv %[1]s.tmp %[1]s; exec sleep 300' </dev/null >/dev/null 2>&1 &); sleep 300
`, pidFile))
	var pid int
	deadline := time.Now().Add(30 * time.Second)
	for pid == 0 {
		if b, err := os.ReadFile(pidFile); err == nil {
			fmt.Sscan(string(b), &pid)
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !alive(pid) {
		t.Fatalf("daemon %d is not running", pid)
	}
	if out, err := c.cli("cancel", j.ID); err != nil {
		t.Fatalf("allot cancel: %v %s", err, out)
	}
	if final := c.waitJob(j.ID, 30*time.Second); final.State != "cancelled" {
		t.Fatalf("job %s, want cancelled", final.State)
	}
	deadline = time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("daemon %d outlived the cancelled task", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestATaskAskingOneCPUCannotUseTwo(t *testing.T) {
	needCgroups(t)
	c := start(t)
	c.worker("w1", 1)
	j := c.submit(`
id: spin
tasks:
  - name: spin
    resources: {cpu: 1}
    run: |
      timeout 2 sh -c 'while :; do :; done' &
      timeout 2 sh -c 'while :; do :; done' &
      wait
`)
	final := c.waitJob(j.ID, 60*time.Second)
	tk := taskByName(final, "spin")
	if final.State != "succeeded" || tk.Started == nil || tk.Ended == nil {
		t.Fatalf("job %s, task %+v", final.State, tk)
	}
	wall := tk.Ended.Sub(*tk.Started).Seconds()
	t.Logf("CPU time %.2f s over %.2f s of wall time", tk.CPUSeconds, wall)
	if tk.CPUSeconds <= 0.2 {
		t.Errorf("CPU time %.2f s: not measured", tk.CPUSeconds)
	}
	if tk.CPUSeconds >= 1.5*wall {
		t.Errorf("CPU time %.2f s over %.2f s of wall time: the task used more than its 1 CPU", tk.CPUSeconds, wall)
	}
}

func TestAWorkerThatCannotMakeCgroupsSaysItRunsUnconfined(t *testing.T) {
	c := start(t)
	// A file where the cgroups would go: nothing can be made under it.
	root := filepath.Join(t.TempDir(), "not-a-directory")
	if err := os.WriteFile(root, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.startWorker("w1", "--slots", "1", "--cpu", "4", "--memory", "8Gi", "--cgroup-root", root)
	j := c.submit(`
id: unconfined
tasks:
  - name: t
    resources: {cpu: 1, memory: 64Mi}
    run: head -c 20M /dev/zero | tail | wc -c
`)
	final := c.waitJob(j.ID, 60*time.Second)
	tk := taskByName(final, "t")
	if final.State != "succeeded" {
		t.Fatalf("job %s, task %+v", final.State, tk)
	}
	// Measured by the process's own usage: tail's buffer counts.
	if tk.PeakMemory < 10<<20 {
		t.Errorf("peak memory %d bytes, want the process's own (20 MiB and more)", tk.PeakMemory)
	}
	var ws []api.Worker
	c.getJSON("/v1/workers", &ws)
	if len(ws) != 1 || ws[0].Unconfined == "" {
		t.Fatalf("workers %+v, want w1 unconfined with a reason", ws)
	}
	out, err := c.cli("workers")
	if err != nil {
		t.Fatalf("allot workers: %v\n%s", err, out)
	}
	if !strings.Contains(out, "CGROUPS") || !strings.Contains(out, "worker w1 runs tasks unconfined: ") {
		t.Errorf("allot workers does not say w1 runs unconfined:\n%s", out)
	}
}
