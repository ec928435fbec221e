package agent

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/agent/cgroup"
	"github.com/allot-sched/allot/internal/model"
)

// cgroupChildEnv holds, in the helper process, the cgroup directories it
// must move into before it detects its resources.
const cgroupChildEnv = "ALLOT_TEST_CGROUP_CHILD"

// TestDetectReadsTheLimitsOfARealCgroup makes a cgroup with a CPU quota of
// half a CPU and a memory limit of 256 MiB on this machine's own hierarchy
// (v1 controllers where they are mounted, else the unified one), starts a
// process in it, and checks that it detects those limits, not the host's.
func TestDetectReadsTheLimitsOfARealCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("making a cgroup needs root, and CI runs the tests as root")
		}
		t.Skip("making a cgroup needs root: skipped")
	}
	member, err := cgroup.ParseProcCgroup("/proc/self/cgroup")
	if err != nil {
		t.Skipf("no /proc/self/cgroup: %v", err)
	}
	all, err := cgroup.ParseMountinfo("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	mounts := byController(all)
	name := fmt.Sprintf("allot-limits-test-%d", os.Getpid())
	var dirs []string
	made := map[string]bool{}
	mk := func(parent string) string {
		d := filepath.Join(parent, name)
		if !made[d] {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Skipf("cannot make a cgroup under %s: %v", parent, err)
			}
			made[d] = true
			t.Cleanup(func() {
				if err := os.Remove(d); err != nil {
					t.Errorf("removing the test's cgroup: %v", err)
				}
			})
			dirs = append(dirs, d)
		}
		return d
	}
	write := func(dir, file, value string) {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
			t.Fatalf("setting %s: %v", filepath.Join(dir, file), err)
		}
	}
	for _, c := range []string{"cpu", "memory"} {
		d, v1, ok := locate(member, mounts, c)
		if !ok {
			t.Skipf("the %s controller is not mounted where this process's cgroup is", c)
		}
		if !v1 {
			// The unified hierarchy gives a child the controllers its parent
			// enables for its children, and only the root may hold processes
			// and enable them too.
			sub, err := os.ReadFile(filepath.Join(d.dir, "cgroup.subtree_control"))
			if err != nil || !slices.Contains(strings.Fields(string(sub)), c) {
				t.Skipf("cgroup v2: %s does not enable %s for its children (%q), so no limit can be set here", d.dir, c, sub)
			}
		}
		dir := mk(d.dir)
		switch {
		case c == "cpu" && v1:
			write(dir, "cpu.cfs_period_us", "100000")
			write(dir, "cpu.cfs_quota_us", "50000")
		case c == "cpu":
			write(dir, "cpu.max", "50000 100000")
		case v1:
			write(dir, "memory.limit_in_bytes", "268435456")
		default:
			write(dir, "memory.max", "268435456")
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCgroupLimitsChild$", "-test.v")
	cmd.Env = append(os.Environ(), cgroupChildEnv+"="+strings.Join(dirs, "\n"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the process in the cgroup: %v\n%s", err, out)
	}
	t.Logf("the process in the cgroup:\n%s", out)
	if !strings.Contains(string(out), "detected cpu=500m memory=256Mi\n") {
		t.Errorf("in a cgroup of half a CPU and 256 MiB, detected otherwise:\n%s", out)
	}
}

// TestCgroupLimitsChild is the process TestDetectReadsTheLimitsOfARealCgroup
// starts: it moves itself into the cgroups and prints what it detects.
func TestCgroupLimitsChild(t *testing.T) {
	dirs := os.Getenv(cgroupChildEnv)
	if dirs == "" {
		t.Skip("the helper process of TestDetectReadsTheLimitsOfARealCgroup")
	}
	for d := range strings.SplitSeq(dirs, "\n") {
		// "0" is the writing process: all of its threads move.
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte("0"), 0o644); err != nil {
			t.Fatalf("moving into %s: %v", d, err)
		}
	}
	got, _ := detectResources(model.ResourceSpec{GPUs: 1, GPUMemory: 1}, slog.New(slog.NewTextHandler(os.Stdout, nil)))
	fmt.Printf("detected cpu=%dm memory=%dMi\n", got.CPU, got.Memory)
}
