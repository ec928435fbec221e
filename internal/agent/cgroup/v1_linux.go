package cgroup

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// v1 is the per-controller hierarchy: one tree per controller (or per
// group of controllers mounted together, such as cpu,cpuacct), in each of
// which an attempt has a directory.
type v1 struct {
	own  map[string]string // controller → the agent's own group's directory
	base map[string]string // controller → the agent's group for its attempts
	mems string            // the memory nodes of the agent's cpuset
	// noTrace says tasks cannot be started stopped (ptrace is not
	// allowed): the forking thread moves instead.
	noTrace atomic.Bool
	// idle are the groups given back for reuse (Release), the last
	// given back first; made counts the groups take made.
	mu   sync.Mutex
	idle []*group1
	made atomic.Int64
}

func (h *v1) controllers() []string {
	var out []string
	for _, c := range v1Controllers {
		if _, ok := h.own[c]; ok {
			out = append(out, c)
		}
	}
	return out
}

// unique lists the distinct directories of dirs (controllers mounted
// together share one), in controller order.
func (h *v1) unique(dirs map[string]string) []string {
	var out []string
	for _, c := range h.controllers() {
		if d, ok := dirs[c]; ok && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

func (h *v1) setUp(name string) (err error) {
	h.base = map[string]string{}
	for _, c := range h.controllers() {
		h.base[c] = filepath.Join(h.own[c], name)
	}
	made := []string{}
	defer func() {
		if err != nil {
			for _, d := range slices.Backward(made) {
				_ = rmdir(d)
			}
		}
	}()
	for _, d := range h.unique(h.base) {
		if err := mkdir(d); err != nil {
			return err
		}
		made = append(made, d)
	}
	if own, ok := h.own["cpuset"]; ok {
		// A new v1 cpuset has no CPUs and no memory nodes: a process
		// could not join it. The agent's group takes its own.
		cpus, err := read(own, "cpuset.cpus")
		if err != nil {
			return fmt.Errorf("cgroup: %w", err)
		}
		if h.mems, err = read(own, "cpuset.mems"); err != nil {
			return fmt.Errorf("cgroup: %w", err)
		}
		if err := write(h.base["cpuset"], "cpuset.cpus", cpus); err != nil {
			return err
		}
		if err := write(h.base["cpuset"], "cpuset.mems", h.mems); err != nil {
			return err
		}
	}
	// Yama's ptrace_scope 3 forbids ptrace altogether, PTRACE_TRACEME
	// included.
	if s, err := read("/proc/sys/kernel/yama", "ptrace_scope"); err == nil && s == "3" {
		h.noTrace.Store(true)
	}
	// A controller that takes no write is found now, not at the first
	// attempt: the agent then runs unconfined and says so.
	if d, ok := h.base["pids"]; ok {
		if err := write(d, "pids.max", "max"); err != nil {
			return err
		}
	}
	return nil
}

func (h *v1) describe() string {
	d := h.base["memory"]
	if d == "" {
		d = h.unique(h.base)[0]
	}
	return fmt.Sprintf("cgroup v1 (%s), attempts under %s", strings.Join(h.controllers(), ","), d)
}

func (h *v1) ownDirs() []string { return h.unique(h.own) }

func (h *v1) missing() []string {
	var out []string
	for _, c := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "freezer"} {
		if _, ok := h.own[c]; !ok {
			out = append(out, c)
		}
	}
	return out
}

func (h *v1) tearDown() error {
	h.mu.Lock()
	for _, g := range h.idle {
		g.files.close()
	}
	h.idle = nil
	h.mu.Unlock()
	var errs []error
	for _, d := range h.unique(h.base) {
		errs = append(errs, removeTree(d))
	}
	return errors.Join(errs...)
}

func (h *v1) newGroup(name string, l Limits) (*Group, error) {
	g := &group1{h: h, name: name, made: map[string]string{}}
	if err := g.apply(l); err != nil {
		_ = removeDirs(g.madeDirs())
		return nil, err
	}
	return &Group{impl: g}, nil
}

// reuseSlack is the most memory a group may still be charged for once its
// task is gone (page cache and kernel objects the task's processes
// touched, files it left in a tmpfs) to be reused: the next attempt's
// peak would count it, and its limit would hold it. A group holding more
// is removed, which hands the charge to the agent's group.
const reuseSlack = 1 << 20

// take gives an idle group back to work, or makes one (see
// Manager.Take). A group that does not take the new limits (a memory
// limit below what it is still charged for) is removed, and a new one
// made.
func (h *v1) take(_ string, l Limits) (*Group, error) {
	h.mu.Lock()
	var g *group1
	if n := len(h.idle); n > 0 {
		g, h.idle = h.idle[n-1], h.idle[:n-1]
	}
	h.mu.Unlock()
	if g != nil {
		if err := g.apply(l); err == nil {
			return &Group{impl: g}, nil
		}
		_ = g.remove()
	}
	g = &group1{h: h, name: fmt.Sprintf("slot-%d", h.made.Add(1)), made: map[string]string{}, reusable: true}
	if err := g.apply(l); err != nil {
		_ = g.remove()
		return nil, err
	}
	return &Group{impl: g}, nil
}

// group1 is an attempt's group on v1: a directory per hierarchy it joined.
type group1 struct {
	h    *v1
	name string
	// dir are the directories the current attempt joins, by controller:
	// those of the hierarchies where it has a limit, and cpuacct,
	// memory and freezer; made are all the group's directories, those
	// an earlier attempt needed included.
	dir, made map[string]string
	// reusable says the group came from take: Release may keep it.
	// files are the control files it keeps open meanwhile.
	reusable bool
	files    openFiles
	// set is what the group's directories hold, written by apply.
	set settings
	// cpuBase and oomBase are the group's CPU time (ns) and
	// out-of-memory kills when it was given back: its earlier attempts'
	// share, which usage takes off. lastCPU and lastOOM are what usage
	// read, and hasCPU and hasOOM whether it did.
	cpuBase, oomBase, lastCPU, lastOOM int64
	hasCPU, hasOOM                     bool
	// lastPeak is the peak memory usage read, if hasPeak.
	lastPeak int64
	hasPeak  bool
}

// settings are the limits a group's directories hold; zero values mean
// none (what a new directory inherits).
type settings struct {
	quota   int64  // cpu.cfs_quota_us
	cpus    string // cpuset.cpus
	memory  int64  // memory.limit_in_bytes
	pids    int64  // pids.max
	devices string // the device rules written, as devicesKey gives them
}

// devicesKey says which device rules l needs, "" for none.
func devicesKey(l Limits) string {
	if l.Devices == nil && len(l.DenyDevices) == 0 {
		return ""
	}
	var b strings.Builder
	if l.Devices != nil {
		b.WriteString("only")
		for _, d := range l.Devices {
			b.WriteString(";" + d.rule())
		}
	}
	b.WriteString("|deny")
	for _, d := range l.DenyDevices {
		b.WriteString(";" + d.rule())
	}
	return b.String()
}

// apply makes the group's directories the attempt needs and writes its
// limits l where the directories do not hold them already.
func (g *group1) apply(l Limits) error {
	h := g.h
	g.dir = map[string]string{}
	for _, c := range h.controllers() {
		// Joining a hierarchy costs a migration or two per start (the
		// kernel serializes them): the attempt stays in the agent's
		// groups where it has no limit to hold it to.
		switch {
		case c == "cpuset" && len(l.CPUs) == 0, c == "devices" && l.Devices == nil && len(l.DenyDevices) == 0,
			c == "cpu" && l.MilliCPU == 0, c == "pids" && l.Pids == 0:
			continue
		}
		d, ok := g.made[c]
		if !ok {
			d = filepath.Join(h.base[c], g.name)
			if err := mkdir(d); err != nil {
				return err
			}
			g.made[c] = d
		}
		g.dir[c] = d
	}
	if d, ok := g.dir["cpu"]; ok && quota(l.MilliCPU) != g.set.quota {
		if g.set.quota == 0 {
			if err := write(d, "cpu.cfs_period_us", strconv.Itoa(cfsPeriod)); err != nil {
				return err
			}
		}
		if err := write(d, "cpu.cfs_quota_us", strconv.FormatInt(quota(l.MilliCPU), 10)); err != nil {
			return err
		}
		g.set.quota = quota(l.MilliCPU)
	}
	if d, ok := g.dir["cpuset"]; ok && cpuList(l.CPUs) != g.set.cpus {
		if err := write(d, "cpuset.cpus", cpuList(l.CPUs)); err != nil {
			return err
		}
		if g.set.cpus == "" {
			if err := write(d, "cpuset.mems", h.mems); err != nil {
				return err
			}
		}
		g.set.cpus = cpuList(l.CPUs)
	}
	if d, ok := g.dir["memory"]; ok && l.Memory != g.set.memory {
		if err := g.setMemory(d, l.Memory); err != nil {
			return err
		}
	}
	if d, ok := g.dir["pids"]; ok && l.Pids != g.set.pids {
		if err := write(d, "pids.max", strconv.FormatInt(l.Pids, 10)); err != nil {
			return err
		}
		g.set.pids = l.Pids
	}
	if d, ok := g.dir["devices"]; ok && devicesKey(l) != g.set.devices {
		if g.set.devices != "" {
			// Rules cannot be taken back one by one: a new
			// directory starts from the agent's.
			if err := rmdir(d); err != nil {
				return err
			}
			if err := mkdir(d); err != nil {
				delete(g.made, "devices")
				return err
			}
			g.set.devices = ""
		}
		if l.Devices != nil {
			if err := write(d, "devices.deny", "a"); err != nil {
				return err
			}
			for _, dev := range append(slices.Clone(standardDevices), l.Devices...) {
				if err := write(d, "devices.allow", dev.rule()); err != nil {
					return err
				}
			}
		}
		for _, dev := range l.DenyDevices {
			if err := write(d, "devices.deny", dev.rule()); err != nil {
				return err
			}
		}
		g.set.devices = devicesKey(l)
	}
	return nil
}

// setMemory sets the memory limit of the group's directory d to limit
// bytes (0: none), with memory plus swap where the host accounts swap:
// the limit is not to be dodged by swapping. Memory plus swap may never
// be below memory alone, so a limit going up is written to it first, and
// one going down last.
func (g *group1) setMemory(d string, limit int64) error {
	v, up := "-1", true
	if limit > 0 {
		v, up = strconv.FormatInt(limit, 10), g.set.memory > 0 && limit > g.set.memory
	}
	files := []string{"memory.limit_in_bytes"}
	if exists(d, "memory.memsw.limit_in_bytes") {
		files = append(files, "memory.memsw.limit_in_bytes")
		if up {
			slices.Reverse(files)
		}
	}
	for _, f := range files {
		if err := write(d, f, v); err != nil {
			return err
		}
	}
	g.set.memory = limit
	return nil
}

// madeDirs lists the group's distinct directories.
func (g *group1) madeDirs() []string { return g.h.unique(g.made) }

// readInt and keyed read the counters of a group, through the files a
// reusable group keeps open.
func (g *group1) readInt(dir, file string) (int64, error) {
	if !g.reusable {
		return readInt(dir, file)
	}
	return parseInt(g.files.read(dir, file))
}

func (g *group1) keyed(dir, file, key string) (int64, bool) {
	if !g.reusable {
		return keyed(dir, file, key)
	}
	s, err := g.files.read(dir, file)
	return parseKeyed(s, err, key)
}

// remove closes the group's files and removes its directories.
func (g *group1) remove() error {
	g.files.close()
	return removeDirs(g.madeDirs())
}

// release keeps a reusable group whose task left nothing behind for
// the next attempt, and removes any other.
func (g *group1) release(reusable bool) error {
	if !reusable || !g.reusable || !g.reset() {
		return g.remove()
	}
	g.h.mu.Lock()
	defer g.h.mu.Unlock()
	g.h.idle = append(g.h.idle, g)
	return nil
}

// reset readies the group for its next attempt: its peak memory back to
// what it holds now, the CPU time and out-of-memory kills so far taken
// as the base to count from. False if the group is not to be reused: the
// kernel killed a process of the task for memory, or the group is still
// charged for more than reuseSlack.
func (g *group1) reset() bool {
	if d, ok := g.made["cpuacct"]; ok {
		if !g.hasCPU {
			ns, err := g.readInt(d, "cpuacct.usage")
			if err != nil {
				return false
			}
			g.lastCPU = ns
		}
		g.cpuBase = g.lastCPU
	}
	if d, ok := g.made["memory"]; ok {
		if !g.hasOOM {
			n, ok := g.keyed(d, "memory.oom_control", "oom_kill")
			if !ok {
				return false
			}
			g.lastOOM = n
		}
		if g.lastOOM != g.oomBase {
			return false
		}
		// What it holds now is at most its peak, read when the task
		// ended: for a small task, that is enough.
		if !g.hasPeak || g.lastPeak > reuseSlack {
			if n, err := g.readInt(d, "memory.usage_in_bytes"); err != nil || n > reuseSlack {
				return false
			}
		}
		if g.files.write(d, "memory.max_usage_in_bytes", "0") != nil {
			return false
		}
	}
	g.hasCPU, g.hasOOM, g.hasPeak = false, false, false
	return true
}

func (g *group1) dirs() []string { return g.h.unique(g.dir) }

// start starts the task stopped at its exec (PTRACE_TRACEME), moves it
// into the group's hierarchies, and lets it go: on v1 a process cannot be
// born in a group other than its parent thread's, and moving the process
// once costs half of moving the forking thread in and back (the kernel
// serializes every move). Where ptrace is not allowed, the thread moves.
func (g *group1) start(cmd *exec.Cmd, start func() error) (startErr, leaveErr error) {
	if g.h.noTrace.Load() {
		return g.startByThread(start)
	}
	err := g.startTraced(cmd, start)
	if errors.Is(err, syscall.EPERM) {
		// PTRACE_TRACEME refused (a seccomp or LSM policy): the next
		// attempts start by moving the thread.
		g.h.noTrace.Store(true)
	}
	return err, nil
}

// startTraced starts cmd stopped after its exec, moves it in, and
// detaches; the calling thread, which forked it, is its tracer.
func (g *group1) startTraced(cmd *exec.Cmd, start func() error) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Ptrace = true
	if err := start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	// The exec stops it with SIGTRAP; peek at that without reaping, so
	// that a child killed meanwhile is still the caller's to wait for.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WEXITED|unix.WNOWAIT|unix.WALL, nil); err != nil {
		return fmt.Errorf("cgroup: waiting for the task to stop at its exec: %w", err)
	}
	var errs []error
	for _, d := range g.dirs() {
		write := write
		if g.reusable {
			write = g.files.write
		}
		if err := write(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			errs = append(errs, err)
			break
		}
	}
	if err := unix.PtraceDetach(pid); err != nil && err != unix.ESRCH {
		errs = append(errs, fmt.Errorf("cgroup: letting the task go: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	return nil
}

// startByThread moves the calling thread into the group, forks, and moves
// the thread back: on v1 a thread may sit in another group than its
// process, and a child is born in its parent thread's groups.
func (g *group1) startByThread(start func() error) (startErr, leaveErr error) {
	tid := strconv.Itoa(unix.Gettid())
	joined := map[string]string{}
	leave := func() error {
		var errs []error
		for c := range joined {
			errs = append(errs, write(g.h.own[c], "tasks", tid))
		}
		return errors.Join(errs...)
	}
	for _, c := range g.h.controllers() {
		d, ok := g.dir[c]
		if !ok {
			continue
		}
		if _, done := joined[c]; done {
			continue
		}
		if err := write(d, "tasks", tid); err != nil {
			return err, leave()
		}
		// Controllers mounted together moved with it.
		for _, c2 := range g.h.controllers() {
			if g.dir[c2] == d {
				joined[c2] = d
			}
		}
	}
	err := start()
	return err, leave()
}

func (g *group1) procs() ([]int, error) { return readProcs(g.dirs()[0]) }

// empty reads pids.current, the processes and threads in the group's pids
// hierarchy, through the file a reused group keeps open: cgroup.procs
// cannot be read so (see openFiles), and opening it costs more.
func (g *group1) empty() bool {
	d, ok := g.dir["pids"]
	if !ok || !g.reusable {
		return false
	}
	n, err := g.readInt(d, "pids.current")
	return err == nil && n == 0
}

func (g *group1) freeze(on bool) bool {
	d, ok := g.dir["freezer"]
	if !ok {
		return false
	}
	state := "THAWED"
	if on {
		state = "FROZEN"
	}
	if write(d, "freezer.state", state) != nil {
		return false
	}
	if !on {
		return true
	}
	for range 200 {
		if s, err := read(d, "freezer.state"); err != nil || s == "FROZEN" {
			return err == nil
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

func (g *group1) killAll() bool { return false }

func (g *group1) usage() Usage {
	var u Usage
	if d, ok := g.dir["cpuacct"]; ok {
		if ns, err := g.readInt(d, "cpuacct.usage"); err == nil {
			g.lastCPU, g.hasCPU = ns, true
			u.CPU, u.HasCPU = time.Duration(ns-g.cpuBase), true
		}
	}
	if d, ok := g.dir["memory"]; ok {
		if b, err := g.readInt(d, "memory.max_usage_in_bytes"); err == nil {
			g.lastPeak, g.hasPeak = b, true
			u.PeakMemory, u.HasPeak = b, true
		}
		if n, ok := g.keyed(d, "memory.oom_control", "oom_kill"); ok {
			g.lastOOM, g.hasOOM = n, true
			u.OOMKills = n - g.oomBase
		}
	}
	return u
}
