package cgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// v2Controllers are the v2 controllers the agent enables for its attempts.
var v2Controllers = []string{"cpu", "cpuset", "memory", "pids"}

// v2 is the unified hierarchy: one tree, the attempt one directory in it.
type v2 struct {
	mount string // the hierarchy's mount point
	own   string // the agent's own group
	base  string // the agent's group for its attempts
	// enabled lists the controllers the attempts' groups have.
	enabled []string
	// moved names the leaf the agent moved itself into so that its own
	// group could hand controllers down, "" if it did not.
	moved string
}

func (h *v2) setUp(name string) error {
	h.base = filepath.Join(h.own, name)
	avail, _ := read(h.own, "cgroup.controllers")
	var want []string
	for c := range strings.FieldsSeq(avail) {
		if slices.Contains(v2Controllers, c) {
			want = append(want, c)
		}
	}
	if err := mkdir(h.base); err != nil {
		return err
	}
	if len(want) == 0 {
		return nil
	}
	err := enable(h.own, want)
	if errors.Is(err, syscall.EBUSY) && h.own != h.mount {
		// A group with processes may not hand controllers to children
		// (except the root): the agent moves itself into a leaf of its
		// own group, as systemd's delegation expects.
		leaf := h.base + "-agent"
		if err := mkdir(leaf); err != nil {
			_ = rmdir(h.base)
			return err
		}
		if err := write(leaf, "cgroup.procs", strconv.Itoa(os.Getpid())); err != nil {
			_ = rmdir(leaf)
			_ = rmdir(h.base)
			return err
		}
		h.moved = leaf
		err = enable(h.own, want)
	}
	if err != nil {
		_ = rmdir(h.base)
		return err
	}
	if err := enable(h.base, want); err != nil {
		_ = rmdir(h.base)
		return err
	}
	h.enabled = want
	return nil
}

// enable hands controllers cs down to the children of the group dir.
func enable(dir string, cs []string) error {
	for _, c := range cs {
		if err := write(dir, "cgroup.subtree_control", "+"+c); err != nil {
			return err
		}
	}
	return nil
}

func (h *v2) describe() string {
	s := "cgroup v2, attempts under " + h.base
	if h.moved != "" {
		s += "; the agent moved itself to " + h.moved
	}
	return s
}

func (h *v2) ownDirs() []string { return []string{h.own} }

func (h *v2) missing() []string {
	var out []string
	for _, c := range v2Controllers {
		if !slices.Contains(h.enabled, c) {
			out = append(out, c)
		}
	}
	return out
}

func (h *v2) tearDown() error {
	return removeTree(h.base)
}

func (h *v2) has(c string) bool { return slices.Contains(h.enabled, c) }

func (h *v2) newGroup(name string, l Limits) (_ *Group, err error) {
	if l.Devices != nil || len(l.DenyDevices) > 0 {
		return nil, ErrDevices
	}
	g := &group2{dir: filepath.Join(h.base, name)}
	if err := mkdir(g.dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = rmdir(g.dir)
		}
	}()
	if h.has("cpu") && l.MilliCPU > 0 {
		if err := write(g.dir, "cpu.max", fmt.Sprintf("%d %d", quota(l.MilliCPU), cfsPeriod)); err != nil {
			return nil, err
		}
	}
	if h.has("cpuset") && len(l.CPUs) > 0 {
		if err := write(g.dir, "cpuset.cpus", cpuList(l.CPUs)); err != nil {
			return nil, err
		}
	}
	if h.has("memory") && l.Memory > 0 {
		if err := write(g.dir, "memory.max", strconv.FormatInt(l.Memory, 10)); err != nil {
			return nil, err
		}
		// No swap: the limit is the memory the attempt may hold.
		if exists(g.dir, "memory.swap.max") {
			if err := write(g.dir, "memory.swap.max", "0"); err != nil {
				return nil, err
			}
		}
		// An out-of-memory kill takes the whole task, not one process
		// of it that the rest would wait for.
		if exists(g.dir, "memory.oom.group") {
			if err := write(g.dir, "memory.oom.group", "1"); err != nil {
				return nil, err
			}
		}
	}
	if h.has("pids") && l.Pids > 0 {
		if err := write(g.dir, "pids.max", strconv.FormatInt(l.Pids, 10)); err != nil {
			return nil, err
		}
	}
	return &Group{impl: g}, nil
}

// take makes a group of its own for each attempt: a v2 group could be
// reused only where memory.peak can be reset (Linux 6.12, and then only
// for the descriptor that reset it).
func (h *v2) take(name string, l Limits) (*Group, error) { return h.newGroup(name, l) }

// group2 is an attempt's group on v2.
type group2 struct{ dir string }

func (g *group2) dirs() []string { return []string{g.dir} }

func (g *group2) release(bool) error { return rmdir(g.dir) }

// start forks the task straight into the group (clone3's
// CLONE_INTO_CGROUP, Linux 5.7), so that it never runs outside it.
func (g *group2) start(cmd *exec.Cmd, start func() error) (startErr, leaveErr error) {
	fd, err := unix.Open(g.dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cgroup: opening %s: %w", g.dir, err), nil
	}
	defer unix.Close(fd)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	return start(), nil
}

func (g *group2) procs() ([]int, error) { return readProcs(g.dir) }

func (g *group2) empty() bool { return false }

func (g *group2) freeze(on bool) bool {
	if !exists(g.dir, "cgroup.freeze") {
		return false
	}
	v := "0"
	if on {
		v = "1"
	}
	if write(g.dir, "cgroup.freeze", v) != nil {
		return false
	}
	if !on {
		return true
	}
	for range 200 {
		if n, ok := keyed(g.dir, "cgroup.events", "frozen"); !ok || n == 1 {
			return ok
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

func (g *group2) killAll() bool {
	return exists(g.dir, "cgroup.kill") && write(g.dir, "cgroup.kill", "1") == nil
}

func (g *group2) usage() Usage {
	var u Usage
	if us, ok := keyed(g.dir, "cpu.stat", "usage_usec"); ok {
		u.CPU, u.HasCPU = time.Duration(us)*time.Microsecond, true
	}
	if b, err := readInt(g.dir, "memory.peak"); err == nil {
		u.PeakMemory, u.HasPeak = b, true
	}
	u.OOMKills, _ = keyed(g.dir, "memory.events", "oom_kill")
	return u
}
