package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/allot-sched/allot/internal/agent/cgroup"
	"github.com/allot-sched/allot/internal/model"
)

// An agent in a container sees the host's CPUs (runtime.NumCPU follows
// only the CPU affinity) and the host's /proc/meminfo, but may use only
// what its cgroup allows: a pod limited to 2 CPUs and 4 GiB on a 64-CPU
// host must not offer 64 CPUs. So detection also reads the CPU quota and
// the memory limit of the cgroup the agent runs in, and of its ancestors
// up to the root of the hierarchy it can see (a limit on a parent binds
// its children), under the unified hierarchy (cgroup v2: cpu.max,
// memory.max) or the v1 hierarchy of the controller (cpu.cfs_quota_us
// over cpu.cfs_period_us, memory.limit_in_bytes); the smaller of host and
// limit is offered.

// cgroupLimits are the CPU and memory the agent's cgroup lets it use, and
// the file each came from. Zero is no limit.
type cgroupLimits struct {
	cpu     model.CPU
	cpuFrom string
	memory  model.Memory
	memFrom string
}

// v1Unlimited is the least memory.limit_in_bytes that means no limit: the
// kernel writes the largest page count times the page size
// (9223372036854771712 with 4 KiB pages), never a real machine's memory.
const v1Unlimited = 1 << 62

// readCgroupLimits reads the limits of the cgroup this process runs in,
// with /proc and the cgroup mounts looked up under root ("/" on a real
// machine, a fake tree in tests). A controller that is not mounted, or a
// cgroup that cannot be found under its mount, gives no limit; the error
// says what could not be read at all.
func readCgroupLimits(root string) (cgroupLimits, error) {
	var lim cgroupLimits
	member, err := cgroup.ParseProcCgroup(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return lim, err
	}
	all, err := cgroup.ParseMountinfo(filepath.Join(root, "proc/self/mountinfo"))
	if err != nil {
		return lim, err
	}
	mounts := byController(all)
	var errs []error
	if dir, v1, ok := locate(member, mounts, "cpu"); ok {
		var err error
		if v1 {
			lim.cpu, lim.cpuFrom, err = leastUp(root, dir, readCPUv1)
		} else {
			lim.cpu, lim.cpuFrom, err = leastUp(root, dir, readCPUv2)
		}
		errs = append(errs, err)
	}
	if dir, v1, ok := locate(member, mounts, "memory"); ok {
		var err error
		if v1 {
			lim.memory, lim.memFrom, err = leastUp(root, dir, readMemoryV1)
		} else {
			lim.memory, lim.memFrom, err = leastUp(root, dir, readMemoryV2)
		}
		errs = append(errs, err)
	}
	return lim, errors.Join(errs...)
}

// cgroupMounts are the mounts of the unified hierarchy and of each v1
// controller, in mountinfo's order.
type cgroupMounts struct {
	unified []cgroup.Mount
	v1      map[string][]cgroup.Mount
}

// byController sorts the mounts of a mountinfo file by hierarchy.
func byController(ms []cgroup.Mount) cgroupMounts {
	out := cgroupMounts{v1: map[string][]cgroup.Mount{}}
	for _, m := range ms {
		if m.V2 {
			out.unified = append(out.unified, m)
			continue
		}
		for _, c := range m.Controllers {
			out.v1[c] = append(out.v1[c], m)
		}
	}
	return out
}

// cgroupDir is a cgroup's directory and the mount point above which the
// hierarchy is not visible.
type cgroupDir struct {
	dir, top string
}

// locate finds the directory of the process's cgroup for controller: in
// its v1 hierarchy when the controller is mounted as v1 (a host may mount
// some controllers as v1 with a unified tree beside them), else in the
// unified hierarchy. ok is false when neither is mounted or the cgroup
// lies outside every mount of its hierarchy.
func locate(member map[string]string, mounts cgroupMounts, controller string) (d cgroupDir, v1, ok bool) {
	if p, in := member[controller]; in && len(mounts.v1[controller]) > 0 {
		d, ok = under(p, mounts.v1[controller])
		return d, true, ok
	}
	if p, in := member[""]; in && len(mounts.unified) > 0 {
		d, ok = under(p, mounts.unified)
		return d, false, ok
	}
	return d, false, false
}

// under finds cgroup path p in the first mount whose root holds it: in a
// container the mount's root is often the container's own cgroup, which
// /proc/self/cgroup also names in full (v1 without a cgroup namespace) or
// as "/" (with one).
func under(p string, mounts []cgroup.Mount) (cgroupDir, bool) {
	p = path.Clean("/" + p)
	for _, m := range mounts {
		r := path.Clean("/" + m.Root)
		rel, ok := strings.CutPrefix(p, r)
		if !ok || (rel != "" && r != "/" && !strings.HasPrefix(rel, "/")) {
			continue
		}
		return cgroupDir{dir: path.Join(m.Point, rel), top: path.Clean(m.Point)}, true
	}
	return cgroupDir{}, false
}

// limitReader reads one level's limit from the cgroup directory dir; zero
// is no limit at that level, and a missing file is no limit.
type limitReader[T ~int64] func(dir string) (limit T, file string, err error)

// leastUp walks from the cgroup up to the top of its mount and returns the
// smallest limit on the way (zero if none) and the file that set it.
func leastUp[T ~int64](root string, d cgroupDir, read limitReader[T]) (T, string, error) {
	var least T
	var from string
	for dir := d.dir; ; dir = path.Dir(dir) {
		v, file, err := read(filepath.Join(root, dir))
		if err != nil {
			return least, from, err
		}
		if v > 0 && (least == 0 || v < least) {
			least, from = v, path.Join(dir, filepath.Base(file))
		}
		if dir == d.top || dir == "/" || !strings.HasPrefix(dir, d.top) {
			return least, from, nil
		}
	}
}

// readCPUv2 reads cpu.max, "QUOTA PERIOD" in microseconds or "max PERIOD".
func readCPUv2(dir string) (model.CPU, string, error) {
	file := filepath.Join(dir, "cpu.max")
	s, err := readSmall(file)
	if s == "" || err != nil {
		return 0, file, err
	}
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, file, fmt.Errorf("%s: %q: want \"QUOTA PERIOD\"", file, s)
	}
	if f[0] == "max" {
		return 0, file, nil
	}
	quota, err1 := strconv.ParseInt(f[0], 10, 64)
	period, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
		return 0, file, fmt.Errorf("%s: %q: want \"QUOTA PERIOD\" in microseconds", file, s)
	}
	return quotaCPU(quota, period), file, nil
}

// readCPUv1 reads cpu.cfs_quota_us (-1: no limit) over cpu.cfs_period_us.
func readCPUv1(dir string) (model.CPU, string, error) {
	qfile := filepath.Join(dir, "cpu.cfs_quota_us")
	q, err := readSmall(qfile)
	if q == "" || err != nil {
		return 0, qfile, err
	}
	quota, err := strconv.ParseInt(q, 10, 64)
	if err != nil {
		return 0, qfile, fmt.Errorf("%s: %q is not a number of microseconds", qfile, q)
	}
	if quota <= 0 {
		return 0, qfile, nil
	}
	pfile := filepath.Join(dir, "cpu.cfs_period_us")
	p, err := readSmall(pfile)
	if err != nil {
		return 0, pfile, err
	}
	period, err := strconv.ParseInt(p, 10, 64)
	if err != nil || period <= 0 {
		return 0, pfile, fmt.Errorf("%s: %q is not a number of microseconds", pfile, p)
	}
	return quotaCPU(quota, period), qfile, nil
}

// quotaCPU is a CFS quota per period in millicores, rounded down (a task
// placed on the rounded-up share would be throttled), at least 1m.
func quotaCPU(quota, period int64) model.CPU {
	return max(model.CPU(quota*1000/period), 1)
}

// readMemoryV2 reads memory.max, bytes or "max".
func readMemoryV2(dir string) (model.Memory, string, error) {
	file := filepath.Join(dir, "memory.max")
	s, err := readSmall(file)
	if s == "" || s == "max" || err != nil {
		return 0, file, err
	}
	return parseMemoryLimit(file, s)
}

// readMemoryV1 reads memory.limit_in_bytes.
func readMemoryV1(dir string) (model.Memory, string, error) {
	file := filepath.Join(dir, "memory.limit_in_bytes")
	s, err := readSmall(file)
	if s == "" || err != nil {
		return 0, file, err
	}
	return parseMemoryLimit(file, s)
}

// parseMemoryLimit reads a limit in bytes as MiB, rounded down; v1's
// "unlimited" value is no limit.
func parseMemoryLimit(file, s string) (model.Memory, string, error) {
	b, err := strconv.ParseInt(s, 10, 64)
	if err != nil || b < 0 {
		return 0, file, fmt.Errorf("%s: %q is not a size in bytes", file, s)
	}
	if b >= v1Unlimited {
		return 0, file, nil
	}
	return max(model.Memory(b>>20), 1), file, nil
}

// readSmall reads a cgroup file's one value; a file that does not exist
// (the controller is not enabled at that level, the root cgroup) is "".
func readSmall(file string) (string, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
