package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/allot-sched/allot/internal/agent/cgroup"
	"github.com/allot-sched/allot/internal/api"
)

// Each attempt runs in a cgroup of its own (package cgroup): it holds the
// task to the CPU, memory and processes it asked for, measures what the
// task used, and kills every process of the task, what it detached
// included. Where no cgroup can be made the agent says so once, registers
// the reason (api.Register.Unconfined) and runs tasks as before: in a
// process group, measured by their own resource usage.

// Cgroup modes of Config.Cgroups.
const (
	CgroupsAuto = "auto" // the hierarchy the host gives controllers to
	CgroupsV1   = "v1"
	CgroupsV2   = "v2"
	CgroupsOff  = "off" // run tasks unconfined
)

// confine opens the cgroup hierarchy for the agent's attempts, or records
// why it runs them unconfined. It logs which, once. The returned function
// removes the agent's group when it stops.
func (a *Agent) confine() func() {
	why := ""
	var m *cgroup.Manager
	switch a.cfg.Cgroups {
	case CgroupsOff:
		why = "cgroups are turned off (--cgroups off)"
	default:
		version := map[string]int{CgroupsV1: 1, CgroupsV2: 2}[a.cfg.Cgroups]
		var err error
		if m, err = cgroup.Open(cgroup.Options{Root: a.cfg.CgroupRoot, Version: version}); err != nil {
			why = err.Error()
		}
	}
	if m == nil {
		a.reg.Unconfined = why
		a.log.Warn("tasks run unconfined: no cgroup holds them to their CPU, memory and pids limits, and what they detach outlives them",
			"reason", why)
		return func() {}
	}
	a.reg.Unconfined = ""
	a.run.cg = m
	a.run.cpus = newCPUPool()
	a.run.gpuNodes = gpuNodes("/dev", a.reg)
	a.log.Info("tasks run in cgroups", "cgroups", m.Describe(), "pidsLimit", a.run.pids, "gpuNodes", len(a.run.gpuNodes))
	if missing := m.Missing(); len(missing) > 0 {
		a.log.Warn("the host gives no cgroup controller for some limits: those are not enforced",
			"missing", strings.Join(missing, ","))
	}
	return func() {
		if err := m.Close(); err != nil {
			a.log.Warn("could not remove the agent's cgroup", "err", err)
		}
	}
}

// deniedGPUs are the nodes of the worker's GPUs the assignment does not
// give its task, by index. An assignment without an array place
// (TaskCount 0) comes from a server that predates GPU devices: it gives
// none, its task sees every GPU (as its environment says), and nothing is
// denied.
func deniedGPUs(nodes map[int]cgroup.Device, as api.Assignment) []cgroup.Device {
	if as.TaskCount < 1 {
		return nil
	}
	given := make(map[int]bool, len(as.GPUs))
	for _, d := range as.GPUs {
		given[d.Index] = true
	}
	var out []cgroup.Device
	for _, i := range slices.Sorted(maps.Keys(nodes)) {
		if !given[i] {
			out = append(out, nodes[i])
		}
	}
	return out
}

// confined is the cgroup of one running attempt, with what it holds.
type confined struct {
	g      *cgroup.Group
	cpus   []int // the CPUs given to the attempt alone, to give back
	memory int64 // its memory limit in bytes, 0 for none
	log    *slog.Logger
}

// newGroup makes the cgroup of an attempt from what it asked for: a CPU
// quota; whole CPUs of its own when it asks for a whole number and that
// many are free; its memory as the limit; the agent's pids limit.
func (r runner) newGroup(as api.Assignment) (*confined, error) {
	if r.cg == nil {
		return nil, nil
	}
	c := &confined{memory: int64(as.Resources.Memory) << 20, log: r.log.With(attemptAttrs(as.Attempt)...)}
	milli := int64(as.Resources.CPU)
	if milli > 0 && milli%1000 == 0 {
		c.cpus = r.cpus.take(int(milli / 1000))
	}
	name := fmt.Sprintf("%s.%s.%d", as.Job, as.Task, as.Attempt.Attempt)
	l := cgroup.Limits{MilliCPU: milli, CPUs: c.cpus, Memory: c.memory, Pids: r.pids, DenyDevices: deniedGPUs(r.gpuNodes, as)}
	g, err := r.cg.Take(name, l)
	if errors.Is(err, cgroup.ErrDevices) {
		// The hierarchy cannot deny devices (v2): the task still gets
		// only its GPUs in CUDA_VISIBLE_DEVICES (docs/agent.md).
		l.DenyDevices = nil
		g, err = r.cg.Take(name, l)
	}
	if err != nil {
		r.cpus.give(c.cpus)
		return nil, err
	}
	c.g = g
	return c, nil
}

// group is the cgroup to start the attempt in, nil when unconfined.
func (c *confined) group() *cgroup.Group {
	if c == nil {
		return nil
	}
	return c.g
}

// signal sends sig to every process of the attempt's cgroup.
func (c *confined) signal(sig syscall.Signal) {
	if c != nil {
		_ = c.g.Signal(sig)
	}
}

// kill kills every process of the attempt's cgroup and waits for them.
func (c *confined) kill() {
	if c == nil {
		return
	}
	if err := c.g.Kill(); err != nil {
		c.log.Warn("could not kill every process of the task's cgroup", "err", err)
	}
}

// usage fills the report's CPU time and peak memory, from the cgroup
// where it has them and from the process's own usage otherwise, and
// returns the problem to report when the kernel killed a process of the
// task for going past its memory limit.
func (c *confined) usage(rep *api.Report, ps *os.ProcessState) string {
	var u cgroup.Usage
	if c != nil {
		u = c.g.Usage()
	}
	cpu, peak := u.CPU, u.PeakMemory
	if !u.HasCPU || !u.HasPeak {
		rcpu, rpeak := rusage(ps)
		if !u.HasCPU {
			cpu = rcpu
		}
		if !u.HasPeak {
			peak = rpeak
		}
	}
	rep.CPUSeconds = float64(cpu.Microseconds()) / 1e6
	rep.PeakMemory = peak
	if u.OOMKills == 0 {
		return ""
	}
	return fmt.Sprintf("out of memory: killed at its memory limit of %s (peak %s)", bytesText(c.memory), bytesText(peak))
}

// giveCPUs gives the attempt's CPUs back, once its processes are gone.
func (r runner) giveCPUs(c *confined) {
	if c != nil {
		r.cpus.give(c.cpus)
		c.cpus = nil
	}
}

// releaseGroup ends the attempt's use of its cgroup, its processes gone:
// the group is kept for a later attempt, or removed (cgroup.Group.Release).
func (r runner) releaseGroup(c *confined) {
	if c == nil {
		return
	}
	r.giveCPUs(c)
	if err := c.g.Release(); err != nil {
		r.log.Warn("could not remove an attempt's cgroup", "err", err)
	}
}

// withNote ends output with a line of the agent's, keeping at most limit
// bytes (the line's, at least).
func withNote(output, note string, limit int) string {
	if output != "" && !strings.HasSuffix(output, "\n") {
		output += "\n"
	}
	output += note + "\n"
	if cut := len(output) - max(limit, len(note)+1); cut > 0 {
		output = output[cut:]
	}
	return output
}

// bytesText writes a byte count the way a memory limit is given.
func bytesText(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
	default:
		return fmt.Sprintf("%d bytes", b)
	}
}

// cpuPool hands out the CPUs the agent may use, each to one attempt at
// a time, to attempts that ask for whole CPUs. An attempt that finds too
// few free runs on the CPUs the others are not pinned to, held by its
// quota alone.
type cpuPool struct {
	mu   sync.Mutex
	free []int // sorted
}

func newCPUPool() *cpuPool { return &cpuPool{free: agentCPUs()} }

// take takes n free CPUs, the lowest first, or none if fewer are free.
func (p *cpuPool) take(n int) []int {
	if p == nil || n <= 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < n {
		return nil
	}
	out := slices.Clone(p.free[:n])
	p.free = slices.Delete(p.free, 0, n)
	return out
}

// give gives CPUs back.
func (p *cpuPool) give(cpus []int) {
	if p == nil || len(cpus) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, cpus...)
	slices.Sort(p.free)
}
