package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
)

// Manager makes the groups of one agent's attempts, under a group of its
// own (allot-<pid>-<random>) in each hierarchy, which Close removes.
type Manager struct {
	h    hierarchy
	name string // the agent's group's name
}

// hierarchy is what a version of cgroups does: v1 and v2 implement it.
type hierarchy interface {
	// setUp makes the agent's group; describe says what is enforced.
	setUp(name string) error
	describe() string
	// missing lists the controllers the host does not give, whose limits
	// are not enforced.
	missing() []string
	newGroup(name string, l Limits) (*Group, error)
	// take is newGroup for a group that Release may give back for
	// reuse.
	take(name string, l Limits) (*Group, error)
	// ownDirs are the agent's own groups, where its group is made.
	ownDirs() []string
	tearDown() error
}

// Open finds the cgroup hierarchy and makes the agent's group in it. An
// error says why attempts cannot be confined here (no hierarchy mounted,
// not root, no delegation, a read-only tree): the agent then runs them
// unconfined.
func Open(opts Options) (*Manager, error) {
	var h hierarchy
	var err error
	switch {
	case opts.Root != "" && opts.Version == 1:
		h, err = fakeV1(opts.Root)
	case opts.Root != "":
		h = &v2{own: opts.Root, mount: opts.Root}
	default:
		h, err = detect(opts.Version)
	}
	if err != nil {
		return nil, err
	}
	var rnd [4]byte
	if _, err := readFull("/dev/urandom", rnd[:]); err != nil {
		return nil, err
	}
	sweep(h.ownDirs())
	name := fmt.Sprintf("allot-%d-%x", os.Getpid(), rnd)
	if err := h.setUp(name); err != nil {
		return nil, err
	}
	return &Manager{h: h, name: name}, nil
}

func readFull(path string, b []byte) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.Read(b)
}

// Describe says which hierarchy is used, where, and which controllers are
// missing, for the agent's log.
func (m *Manager) Describe() string { return m.h.describe() }

// Missing lists the controllers the host does not give: the limits they
// would enforce are not.
func (m *Manager) Missing() []string { return m.h.missing() }

// New makes the group of one attempt, named name (made safe for a file
// name), with limits l. The group is empty until Start puts the task's
// process in it.
func (m *Manager) New(name string, l Limits) (*Group, error) {
	return m.h.newGroup(safeName(name), l)
}

// Take gives a group for an attempt with limits l, as New does, but one
// that Group.Release may keep for a later attempt instead of removing it.
// On v1 it is an idle group of an earlier attempt when there is one
// (named slot-N, not after the attempt), its limits rewritten where they
// differ, its peak memory reset when it was given back, and its CPU time
// and out-of-memory kills counted from what they were then: making a
// group and removing it cost a directory per hierarchy each time, about
// half of what a group per attempt cost a short task. On v2 it is New's
// group.
func (m *Manager) Take(name string, l Limits) (*Group, error) {
	return m.h.take(safeName(name), l)
}

// Close removes the agent's group. Groups of attempts still there are
// killed and removed first: they belong to no running attempt.
func (m *Manager) Close() error { return m.h.tearDown() }

// staleName matches the groups agents make (Open): allot-PID-HEX, and
// the leaf a v2 agent moves itself into, allot-PID-HEX-agent.
var staleName = regexp.MustCompile(`^allot-([0-9]+)-[0-9a-f]+(-agent)?$`)

// sweep removes the groups that agents which died without removing them
// (SIGKILL, a crash) left in dirs: their processes are killed, since no
// agent watches them any more. A group whose agent (by its PID) still
// runs is left alone.
func sweep(dirs []string) {
	for _, d := range dirs {
		names, _ := readDirs(d)
		for _, n := range names {
			m := staleName.FindStringSubmatch(n)
			if m == nil {
				continue
			}
			pid, err := strconv.Atoi(m[1])
			if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) != syscall.ESRCH {
				continue
			}
			_ = removeTree(filepath.Join(d, n))
		}
	}
}
