package agent

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/model"
)

// fakeMachine writes files (path relative to the root: content) into a
// fresh directory standing for the root of a machine's file system.
func fakeMachine(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// meminfo16G is a host's /proc/meminfo with 16 GiB.
const meminfo16G = "MemTotal:       16777216 kB\nMemFree:         1000000 kB\n"

// mountinfoV2 mounts the unified hierarchy at /sys/fs/cgroup with the
// cgroup at its root, as in a container with a cgroup namespace.
const mountinfoV2 = `22 1 0:21 / / rw,relatime - overlay overlay rw
30 22 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw,nsdelegate
`

// mountinfoHybrid is this kind of host: v1 controllers, each on its own
// mount, and the unified tree beside them.
const mountinfoHybrid = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:7 - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:8 - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

func TestDetectTakesTheSmallerOfHostAndCgroupLimit(t *testing.T) {
	tests := []struct {
		name  string
		cpus  int
		files map[string]string
		// want are the detected CPU and memory; wantFrom the cgroup files
		// the log names, "" when the host's figure is used.
		wantCPU     model.CPU
		wantMem     model.Memory
		wantCPUFrom string
		wantMemFrom string
	}{
		{
			name: "v2 container with a cgroup namespace",
			cpus: 8,
			files: map[string]string{
				"proc/meminfo":             meminfo16G,
				"proc/self/cgroup":         "0::/\n",
				"proc/self/mountinfo":      mountinfoV2,
				"sys/fs/cgroup/cpu.max":    "150000 100000\n",
				"sys/fs/cgroup/memory.max": "4294967296\n",
			},
			wantCPU: 1500, wantMem: 4096,
			wantCPUFrom: "/sys/fs/cgroup/cpu.max", wantMemFrom: "/sys/fs/cgroup/memory.max",
		},
		{
			name: "v2 nested: the pod's limit binds the container below it",
			cpus: 8,
			files: map[string]string{
				"proc/meminfo":     meminfo16G,
				"proc/self/cgroup": "0::/kubepods/pod1/ctr\n",
				"proc/self/mountinfo": `30 22 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw
`,
				"sys/fs/cgroup/kubepods/pod1/ctr/cpu.max":    "300000 100000\n",
				"sys/fs/cgroup/kubepods/pod1/cpu.max":        "200000 100000\n",
				"sys/fs/cgroup/kubepods/cpu.max":             "max 100000\n",
				"sys/fs/cgroup/kubepods/pod1/ctr/memory.max": "1073741824\n",
				"sys/fs/cgroup/kubepods/pod1/memory.max":     "2147483648\n",
			},
			wantCPU: 2000, wantMem: 1024,
			wantCPUFrom: "/sys/fs/cgroup/kubepods/pod1/cpu.max", wantMemFrom: "/sys/fs/cgroup/kubepods/pod1/ctr/memory.max",
		},
		{
			name: "v1 container without a cgroup namespace: the mount's root is the container's cgroup",
			cpus: 4,
			files: map[string]string{
				"proc/meminfo":     meminfo16G,
				"proc/self/cgroup": "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/docker/abc\n",
				"proc/self/mountinfo": `40 30 0:40 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct
41 30 0:41 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory
`,
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":  "50000\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
				"sys/fs/cgroup/memory/memory.limit_in_bytes":  "536870912\n",
			},
			wantCPU: 500, wantMem: 512,
			wantCPUFrom: "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", wantMemFrom: "/sys/fs/cgroup/memory/memory.limit_in_bytes",
		},
		{
			name: "v1 controllers beside a unified tree: v1 is read, and unlimited is the host",
			cpus: 2,
			files: map[string]string{
				"proc/meminfo":        meminfo16G,
				"proc/self/cgroup":    "4:memory:/batch/job7\n1:cpu,cpuacct:/\n0::/\n",
				"proc/self/mountinfo": mountinfoHybrid,
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":                 "-1\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us":                "100000\n",
				"sys/fs/cgroup/memory/batch/job7/memory.limit_in_bytes":      "9223372036854771712\n",
				"sys/fs/cgroup/memory/batch/memory.limit_in_bytes":           "9223372036854771712\n",
				"sys/fs/cgroup/memory/memory.limit_in_bytes":                 "9223372036854771712\n",
				"sys/fs/cgroup/unified/cpu.max":                              "100000 100000\n",
				"sys/fs/cgroup/unified/memory.max":                           "1048576\n",
				"sys/fs/cgroup/memory/batch/job7/memory.soft_limit_in_bytes": "1048576\n",
			},
			wantCPU: 2000, wantMem: 16384,
		},
		{
			name: "a limit above the host's is the host's",
			cpus: 2,
			files: map[string]string{
				"proc/meminfo":             meminfo16G,
				"proc/self/cgroup":         "0::/\n",
				"proc/self/mountinfo":      mountinfoV2,
				"sys/fs/cgroup/cpu.max":    "800000 100000\n",
				"sys/fs/cgroup/memory.max": "68719476736\n",
			},
			wantCPU: 2000, wantMem: 16384,
		},
		{
			name: "no limits set: max",
			cpus: 3,
			files: map[string]string{
				"proc/meminfo":             meminfo16G,
				"proc/self/cgroup":         "0::/\n",
				"proc/self/mountinfo":      mountinfoV2,
				"sys/fs/cgroup/cpu.max":    "max 100000\n",
				"sys/fs/cgroup/memory.max": "max\n",
			},
			wantCPU: 3000, wantMem: 16384,
		},
		{
			name: "a fraction of a CPU rounds down, a few bytes are at least 1Mi",
			cpus: 2,
			files: map[string]string{
				"proc/meminfo":             meminfo16G,
				"proc/self/cgroup":         "0::/\n",
				"proc/self/mountinfo":      mountinfoV2,
				"sys/fs/cgroup/cpu.max":    "33333 100000\n",
				"sys/fs/cgroup/memory.max": "4096\n",
			},
			wantCPU: 333, wantMem: 1,
			wantCPUFrom: "/sys/fs/cgroup/cpu.max", wantMemFrom: "/sys/fs/cgroup/memory.max",
		},
		{
			name: "the cgroup lies outside the mount: no limit",
			cpus: 2,
			files: map[string]string{
				"proc/meminfo":     meminfo16G,
				"proc/self/cgroup": "0::/elsewhere\n",
				"proc/self/mountinfo": `30 22 0:26 /kubepods /sys/fs/cgroup rw - cgroup2 cgroup2 rw
`,
				"sys/fs/cgroup/cpu.max":    "50000 100000\n",
				"sys/fs/cgroup/memory.max": "1048576\n",
			},
			wantCPU: 2000, wantMem: 16384,
		},
		{
			name: "a mount point with a space, escaped in mountinfo",
			cpus: 2,
			files: map[string]string{
				"proc/meminfo":     meminfo16G,
				"proc/self/cgroup": "0::/a\n",
				"proc/self/mountinfo": `30 22 0:26 / /cg\040root rw - cgroup2 cgroup2 rw
`,
				"cg root/a/cpu.max": "100000 100000\n",
			},
			wantCPU: 1000, wantMem: 16384,
			wantCPUFrom: "/cg root/a/cpu.max",
		},
		{
			name:    "no /proc/self/cgroup (another OS): the host's",
			cpus:    2,
			files:   map[string]string{"proc/meminfo": meminfo16G},
			wantCPU: 2000, wantMem: 16384,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fakeMachine(t, tt.files)
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			m := machine{root: root, cpus: tt.cpus, gpus: func() (int, model.Memory, error) { return 0, 0, nil }}
			got := m.detect(model.ResourceSpec{}, log)
			if got.CPU != tt.wantCPU || got.Memory != tt.wantMem {
				t.Errorf("detected cpu %dm, memory %dMi; want %dm, %dMi", got.CPU, got.Memory, tt.wantCPU, tt.wantMem)
			}
			checkSource(t, logs.String(), "cpuFrom", tt.wantCPUFrom)
			checkSource(t, logs.String(), "memoryFrom", tt.wantMemFrom)
		})
	}
}

// checkSource checks that the log's "resources detected" line says where
// a figure came from (key cpuFrom or memoryFrom): the cgroup file from, or
// the host when from is "".
func checkSource(t *testing.T, logs, key, from string) {
	t.Helper()
	if from == "" {
		from = "host"
	}
	for line := range strings.Lines(logs) {
		if !strings.Contains(line, `msg="resources detected"`) {
			continue
		}
		if got := loggedValue(line, key); got != from {
			t.Errorf("%s=%q, want %q, in %s", key, got, from, line)
		}
		return
	}
	t.Errorf("no \"resources detected\" line in\n%s", logs)
}

// loggedValue is the value of key= in a text log line, "" without one.
func loggedValue(line, key string) string {
	_, v, ok := strings.Cut(strings.TrimSpace(line), " "+key+"=")
	if !ok {
		return ""
	}
	if u, err := strconv.QuotedPrefix(v); err == nil {
		v, _ = strconv.Unquote(u)
		return v
	}
	v, _, _ = strings.Cut(v, " ")
	return v
}

func TestDetectReadsNoCgroupForGivenResources(t *testing.T) {
	// A broken cgroup file would be logged; given resources skip the read.
	root := fakeMachine(t, map[string]string{
		"proc/self/cgroup":      "0::/\n",
		"proc/self/mountinfo":   mountinfoV2,
		"sys/fs/cgroup/cpu.max": "garbage\n",
	})
	var logs bytes.Buffer
	m := machine{root: root, cpus: 2, gpus: func() (int, model.Memory, error) { return 0, 0, nil }}
	given := model.ResourceSpec{CPU: 500, Memory: 64}
	if got := m.detect(given, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))); got != given {
		t.Errorf("detect changed given resources: %+v", got)
	}
	if logs.Len() != 0 {
		t.Errorf("logged for given resources:\n%s", logs.String())
	}
}

func TestReadCgroupLimitsReportsAnUnreadableLimit(t *testing.T) {
	root := fakeMachine(t, map[string]string{
		"proc/self/cgroup":         "0::/\n",
		"proc/self/mountinfo":      mountinfoV2,
		"sys/fs/cgroup/cpu.max":    "garbage\n",
		"sys/fs/cgroup/memory.max": "2097152\n",
	})
	lim, err := readCgroupLimits(root)
	if err == nil || !strings.Contains(err.Error(), "cpu.max") {
		t.Errorf("err = %v, want one naming cpu.max", err)
	}
	if lim.memory != 2 || lim.cpu != 0 {
		t.Errorf("limits %+v: want the memory limit read despite the CPU's error", lim)
	}
}
