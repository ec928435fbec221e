// Package cgroup holds each attempt of a worker to the resources it was
// given: a control group per attempt, with a CPU quota (and a cpuset when
// whole CPUs are allocated), a memory limit and a pids limit. The same group
// tells what the attempt used (CPU time, peak memory, out-of-memory kills)
// and kills every process of the task, whatever it forked or detached
// (setsid, double fork), which a process group cannot.
//
// Both hierarchies are supported: the unified one (cgroup v2) and the
// per-controller one (v1), which some hosts still mount, often beside an
// empty v2 tree. Open finds what the host mounts (/proc/self/mountinfo) and
// nests the attempts' groups under the agent's own group in each hierarchy,
// so that a worker confined by its supervisor (systemd, a container) keeps
// its tasks inside its own bounds.
package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultPids is the pids limit (processes and threads at once) of an
// attempt when the agent is given none: enough for a build or a thread
// pool, low enough that a fork bomb cannot exhaust the host's PIDs.
const DefaultPids = 4096

// Limits are what one attempt may use. A zero field sets no limit.
type Limits struct {
	// MilliCPU is the CPU quota in thousandths of a CPU: 1500 lets the
	// attempt's processes run 1.5 CPUs' worth of time per period, on any
	// CPU the group may use.
	MilliCPU int64
	// CPUs, when set, pins the attempt to these CPUs (a cpuset): the
	// agent gives whole CPUs to attempts that ask for a whole number.
	CPUs []int
	// Memory is the memory limit in bytes (swap included where the host
	// accounts it): past it the kernel kills a process of the group.
	Memory int64
	// Pids bounds the processes and threads the attempt runs at once.
	Pids int64
	// Devices, when not nil, are the only devices the attempt may open
	// beside the standard ones (null, zero, full, random, urandom, tty and
	// pseudo-terminals): the place where GPUs are given to an attempt.
	// Implemented on v1 (devices.allow); v2 needs an eBPF program, not yet
	// written, so New refuses a non-nil list there (ErrDevices).
	Devices []Device
	// DenyDevices are devices the attempt may not open, all others staying
	// as the agent's own: on a GPU worker, the GPUs the task was not
	// given. Implemented on v1 (devices.deny); refused on v2 (ErrDevices).
	DenyDevices []Device
}

// Device is a character or block device an attempt may use, as the kernel
// names it: type 'c' or 'b', major and minor numbers (-1 for any).
type Device struct {
	Type         byte
	Major, Minor int64
}

func (d Device) rule() string {
	num := func(n int64) string {
		if n < 0 {
			return "*"
		}
		return strconv.FormatInt(n, 10)
	}
	return fmt.Sprintf("%c %s:%s rwm", d.Type, num(d.Major), num(d.Minor))
}

// standardDevices are the devices every attempt may use when Limits.Devices
// restricts them.
var standardDevices = []Device{
	{'c', 1, 3}, {'c', 1, 5}, {'c', 1, 7}, {'c', 1, 8}, {'c', 1, 9}, // null, zero, full, random, urandom
	{'c', 5, 0}, {'c', 5, 2}, {'c', 136, -1}, // tty, ptmx, pts
}

// ErrDevices is returned by New for a device list on a hierarchy that
// cannot restrict devices yet (v2).
var ErrDevices = errors.New("cgroup: restricting devices is not supported on cgroup v2 yet")

// Usage is what an attempt used, read from its group.
type Usage struct {
	// CPU is the CPU time of every process the group ever held, user and
	// system; valid when HasCPU.
	CPU    time.Duration
	HasCPU bool
	// PeakMemory is the most memory the group held at once, in bytes;
	// valid when HasPeak.
	PeakMemory int64
	HasPeak    bool
	// OOMKills counts the processes the kernel killed because the group
	// reached its memory limit.
	OOMKills int64
}

// Options say where to look for the hierarchies. The zero value finds them
// in /proc/self/mountinfo.
type Options struct {
	// Root, when set, is used instead of the mounted hierarchies: the
	// hierarchy itself for v2, a directory holding one per controller
	// (Root/memory, Root/cpu, ...) for v1. Groups are made directly under
	// it. Tests point it at a fake tree or at a directory that cannot be
	// written.
	Root string
	// Version chooses the hierarchy: 1 or 2; 0 picks the one the host
	// gives controllers to (v2 when its tree has any, else v1).
	Version int
}

// safeName keeps letters, digits, '.', '-' and '_' of s, replacing others
// with '_', and bounds its length: a group is a directory.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
		default:
			b[i] = '_'
		}
	}
	if len(b) > 200 {
		b = b[:200]
	}
	if s := string(b); s != "" && s != "." && s != ".." {
		return s
	}
	return "_"
}

// readInt reads a control file holding one integer.
func readInt(dir, file string) (int64, error) {
	s, err := read(dir, file)
	return parseInt(s, err)
}

// parseInt parses what a control file holding one integer gave.
func parseInt(s string, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

// keyed reads the value of key in a flat keyed file (memory.events,
// cpu.stat, memory.oom_control).
func keyed(dir, file, key string) (int64, bool) {
	s, err := read(dir, file)
	return parseKeyed(s, err, key)
}

// parseKeyed finds the value of key in what a flat keyed file gave.
func parseKeyed(s string, err error, key string) (int64, bool) {
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(s, "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// exists reports whether the control file dir/file exists: kernels differ
// in what they offer (memory.peak, memory.swap.max, cgroup.kill).
func exists(dir, file string) bool {
	_, err := os.Stat(filepath.Join(dir, file))
	return err == nil
}

// cpuList formats CPUs as the kernel's list format ("0,2,3").
func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// ParseCPUList parses the kernel's list format ("0-3,6") into CPUs.
func ParseCPUList(s string) ([]int, error) {
	var out []int
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("cgroup: CPU list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("cgroup: CPU list %q: %w", s, err)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

// cfsPeriod is the CPU quota's period in microseconds: the kernel's
// default, short enough that a throttled task does not stall for long.
const cfsPeriod = 100000

// quota is the CFS quota, in microseconds per cfsPeriod, of milli CPUs.
func quota(milli int64) int64 { return max(milli*cfsPeriod/1000, 1000) }
