package cgroup

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	var errs []error
	for _, d := range h.unique(h.base) {
		errs = append(errs, removeTree(d))
	}
	return errors.Join(errs...)
}

func (h *v1) newGroup(name string, l Limits) (_ *Group, err error) {
	g := &group1{h: h, dir: map[string]string{}}
	for _, c := range h.controllers() {
		// Joining a hierarchy costs a migration or two per start (the
		// kernel serializes them): the attempt stays in the agent's
		// groups where it has no limit to hold it to.
		switch {
		case c == "cpuset" && len(l.CPUs) == 0, c == "devices" && l.Devices == nil && len(l.DenyDevices) == 0,
			c == "cpu" && l.MilliCPU == 0, c == "pids" && l.Pids == 0:
			continue
		}
		g.dir[c] = filepath.Join(h.base[c], name)
	}
	defer func() {
		if err != nil {
			for _, d := range slices.Backward(g.dirs()) {
				_ = rmdir(d)
			}
		}
	}()
	for _, d := range g.dirs() {
		if err := mkdir(d); err != nil {
			return nil, err
		}
	}
	if d, ok := g.dir["cpu"]; ok && l.MilliCPU > 0 {
		if err := write(d, "cpu.cfs_period_us", strconv.Itoa(cfsPeriod)); err != nil {
			return nil, err
		}
		if err := write(d, "cpu.cfs_quota_us", strconv.FormatInt(quota(l.MilliCPU), 10)); err != nil {
			return nil, err
		}
	}
	if d, ok := g.dir["cpuset"]; ok {
		if err := write(d, "cpuset.cpus", cpuList(l.CPUs)); err != nil {
			return nil, err
		}
		if err := write(d, "cpuset.mems", h.mems); err != nil {
			return nil, err
		}
	}
	if d, ok := g.dir["memory"]; ok && l.Memory > 0 {
		v := strconv.FormatInt(l.Memory, 10)
		if err := write(d, "memory.limit_in_bytes", v); err != nil {
			return nil, err
		}
		// Memory plus swap, where the host accounts swap: the limit
		// is not to be dodged by swapping. Written after the memory
		// limit, which it may not be below.
		if exists(d, "memory.memsw.limit_in_bytes") {
			if err := write(d, "memory.memsw.limit_in_bytes", v); err != nil {
				return nil, err
			}
		}
	}
	if d, ok := g.dir["pids"]; ok && l.Pids > 0 {
		if err := write(d, "pids.max", strconv.FormatInt(l.Pids, 10)); err != nil {
			return nil, err
		}
	}
	if d, ok := g.dir["devices"]; ok && l.Devices != nil {
		if err := write(d, "devices.deny", "a"); err != nil {
			return nil, err
		}
		for _, dev := range append(slices.Clone(standardDevices), l.Devices...) {
			if err := write(d, "devices.allow", dev.rule()); err != nil {
				return nil, err
			}
		}
	}
	if d, ok := g.dir["devices"]; ok {
		for _, dev := range l.DenyDevices {
			if err := write(d, "devices.deny", dev.rule()); err != nil {
				return nil, err
			}
		}
	}
	return &Group{impl: g}, nil
}

// group1 is an attempt's group on v1: a directory per hierarchy it joined.
type group1 struct {
	h   *v1
	dir map[string]string // controller → the attempt's directory
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
		if ns, err := readInt(d, "cpuacct.usage"); err == nil {
			u.CPU, u.HasCPU = time.Duration(ns), true
		}
	}
	if d, ok := g.dir["memory"]; ok {
		if b, err := readInt(d, "memory.max_usage_in_bytes"); err == nil {
			u.PeakMemory, u.HasPeak = b, true
		}
		u.OOMKills, _ = keyed(d, "memory.oom_control", "oom_kill")
	}
	return u
}
