package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/allot-sched/allot/internal/api"
)

// leftoverWait bounds how long the agent waits for the leftovers it killed
// to be gone before it registers.
const leftoverWait = 5 * time.Second

// stateDir is the agent's private directory: it holds it locked while it
// runs, and records its tasks' process groups there (leftovers.go).
type stateDir struct {
	dir    string
	lock   *os.File
	groups *taskGroups
}

// openStateDir creates (0700) or checks the state directory and locks it.
// A directory others may write to is refused, since whoever writes the
// groups file chooses what the agent kills; so is one another agent holds.
func openStateDir(dir string) (*stateDir, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return nil, fmt.Errorf("state directory %s: not a directory", dir)
	case ok && int(st.Uid) != os.Geteuid():
		return nil, fmt.Errorf("state directory %s: owned by uid %d, not by the agent's user (uid %d)", dir, st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return nil, fmt.Errorf("state directory %s: mode %04o lets others write to it; make it 0700", dir, fi.Mode().Perm())
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(lock.Name())
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("state directory %s is in use by another agent (pid %s): stop it, or give this one another state directory",
				dir, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("state directory %s: lock: %w", dir, err)
	}
	if err := lock.Truncate(0); err == nil {
		_, _ = lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	boot, err := bootID()
	if err != nil {
		lock.Close()
		return nil, err
	}
	return &stateDir{dir: dir, lock: lock,
		groups: &taskGroups{path: filepath.Join(dir, groupsFile), boot: boot, byPGID: map[int]groupEntry{}}}, nil
}

// close releases the directory (the lock goes with the process anyway).
func (s *stateDir) close() {
	s.groups.close()
	s.lock.Close()
}

// killLeftovers kills the process groups the groups file lists that still
// run (SIGKILL to the group), waits until they are gone, and empties the
// file. It returns the groups it killed. A group whose ID now belongs to
// a process started at another time (the ID was reused) is left alone, and
// so is everything recorded under another boot.
func (s *stateDir) killLeftovers() ([]groupEntry, error) {
	recorded, err := s.groups.load()
	if err != nil {
		return nil, err
	}
	var killed []groupEntry
	if recorded.Boot == s.groups.boot && len(recorded.Groups) > 0 {
		procs, err := processes()
		if err != nil {
			return nil, err
		}
		for _, g := range recorded.Groups {
			if !stillOurs(g, procs) {
				continue
			}
			if err := syscall.Kill(-g.PGID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return killed, fmt.Errorf("killing process group %d left by attempt %d of %s/%s: %w", g.PGID, g.Attempt, g.Job, g.Task, err)
			}
			killed = append(killed, g)
		}
		if err := waitGone(killed); err != nil {
			return killed, err
		}
	}
	removeAttemptDirs(recorded.Groups)
	s.groups.mu.Lock()
	defer s.groups.mu.Unlock()
	return killed, s.groups.saveLocked()
}

// removeAttemptDirs removes the attempt directories of recorded groups:
// their tasks are gone, and so is whoever would have read their results.
// Only absolute paths whose last element is an attempt directory's name
// are touched, so a damaged record cannot point the agent elsewhere.
func removeAttemptDirs(groups []groupEntry) {
	for _, g := range groups {
		if g.Dir == "" || !filepath.IsAbs(g.Dir) || !strings.HasPrefix(filepath.Base(g.Dir), attemptDirPrefix) {
			continue
		}
		_ = os.RemoveAll(g.Dir)
	}
}

// stillOurs reports whether a recorded group still has processes of the
// task's: members whose group is g.PGID and that started no earlier than
// its leader. A live process with the leader's PID and another start time
// (outside the recorded window, when the record has one) means the ID was
// reused: the group is someone else's.
func stillOurs(g groupEntry, procs []procInfo) bool {
	found := false
	for _, p := range procs {
		if p.pid == g.PGID && (p.start < g.Start || p.start > g.Start+g.StartSpan) {
			return false
		}
		if p.pgrp == g.PGID && p.start >= g.Start && !p.zombie {
			found = true
		}
	}
	return found
}

// waitGone waits until no live process is left in the killed groups.
func waitGone(killed []groupEntry) error {
	if len(killed) == 0 {
		return nil
	}
	deadline := time.Now().Add(leftoverWait)
	for {
		procs, err := processes()
		if err != nil {
			return err
		}
		left := 0
		for _, g := range killed {
			for _, p := range procs {
				if p.pgrp == g.PGID && !p.zombie {
					left++
				}
			}
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d process(es) of the tasks left by the previous run are still there %s after SIGKILL", left, leftoverWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// taskGroups records the process groups of the running tasks in the
// groups file. A nil *taskGroups records nothing (no state directory).
type taskGroups struct {
	path string
	boot string

	mu     sync.Mutex
	byPGID map[int]groupEntry
	// log is the groups file, open for appending changes since the last
	// snapshot (nil before the first); changes counts them.
	log     *os.File
	changes int
	// checked counts the start times told by forks checked so far;
	// forkClockWrong says one of them was not the kernel's.
	checked        atomic.Int32
	forkClockWrong atomic.Bool
}

// compactAfter is how many changes the log takes beyond four per group
// recorded before it is compacted: one whole write per that many
// appends.
const compactAfter = 256

// add records the group led by pid, a task of attempt a that just started
// in the directory dir, and returns the leader's start time as recorded,
// which remove needs. start is when the fork says it started (startTask),
// zero to read it in /proc.
func (g *taskGroups) add(pid int, start startWindow, a api.Attempt, dir string) (uint64, error) {
	if g == nil {
		return 0, nil
	}
	// The start times the forks tell are checked against /proc on the
	// first tasks: a kernel whose clock tick is not clockTicks, or whose
	// start times come from another clock, gives up on them.
	check := start.From != 0 && g.checked.Add(1) <= startChecks
	if start.From == 0 || check || g.forkClockWrong.Load() {
		p, err := procStat(pid)
		if err != nil {
			return 0, err
		}
		if check && (p.start < start.From || p.start > start.From+start.Span) {
			g.forkClockWrong.Store(true)
		}
		start = startWindow{From: p.start}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	e := groupEntry{PGID: pid, Start: start.From, StartSpan: start.Span, Job: a.Job, Task: a.Task, Attempt: a.Attempt, Dir: dir}
	g.byPGID[pid] = e
	return start.From, g.appendLocked(groupChange{Add: &e})
}

// startChecks is how many of the start times the forks tell are checked
// against /proc (taskGroups.add).
const startChecks = 16

// remove forgets the group led by pid whose leader started at start: its
// task ended, the group was killed and the attempt's directory removed.
// A record of the same ID with another start time is a later task's (the
// ID was reused meanwhile), and stays.
func (g *taskGroups) remove(pid int, start uint64) error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if e, ok := g.byPGID[pid]; !ok || e.Start != start {
		return nil
	}
	delete(g.byPGID, pid)
	return g.appendLocked(groupChange{Remove: pid})
}

// appendLocked records a change: one line appended to the log, or a new
// snapshot when there is no log yet or it has grown long.
func (g *taskGroups) appendLocked(c groupChange) error {
	if g.log == nil || g.changes >= 4*len(g.byPGID)+compactAfter {
		return g.saveLocked()
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if _, err := g.log.Write(append(b, '\n')); err != nil {
		// The log may now end in a torn line: start a new one.
		if serr := g.saveLocked(); serr != nil {
			return fmt.Errorf("recording the tasks' process groups: %w", errors.Join(err, serr))
		}
		return nil
	}
	g.changes++
	return nil
}

// close closes the log.
func (g *taskGroups) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.log != nil {
		g.log.Close()
		g.log = nil
	}
}

// saveLocked writes a snapshot of the groups as a new log (a new file
// renamed over the old one), so a crash leaves the old log or the new,
// never half of one, and appends the changes that follow to it.
func (g *taskGroups) saveLocked() error {
	st := groupsState{Boot: g.boot, Groups: make([]groupEntry, 0, len(g.byPGID))}
	for _, e := range g.byPGID {
		st.Groups = append(st.Groups, e)
	}
	sort.Slice(st.Groups, func(i, j int) bool { return st.Groups[i].PGID < st.Groups[j].PGID })
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := g.path + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("recording the tasks' process groups: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("recording the tasks' process groups: %w", err)
	}
	if err := os.Rename(tmp, g.path); err != nil {
		f.Close()
		return fmt.Errorf("recording the tasks' process groups: %w", err)
	}
	// The new file is the log now; what is appended to it follows the
	// snapshot.
	if g.log != nil {
		g.log.Close()
	}
	g.log, g.changes = f, 0
	return nil
}

// load reads the groups file (a snapshot and the changes since); none is
// an empty list. A last line that does not parse is the append a crash
// cut short: the change it was to record is ignored, as if the agent died
// just before it.
func (g *taskGroups) load() (groupsState, error) {
	var st groupsState
	b, err := os.ReadFile(g.path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("reading the tasks' process groups: %w", err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	bad := func(i int, err error) (groupsState, error) {
		return groupsState{}, fmt.Errorf("reading the tasks' process groups from %s, line %d: %w", g.path, i+1, err)
	}
	if err := json.Unmarshal(lines[0], &st); err != nil {
		return bad(0, err)
	}
	byPGID := make(map[int]groupEntry, len(st.Groups))
	for _, e := range st.Groups {
		byPGID[e.PGID] = e
	}
	for i, line := range lines[1:] {
		var c groupChange
		if err := json.Unmarshal(line, &c); err != nil {
			if i == len(lines)-2 {
				break // torn by a crash
			}
			return bad(i+1, err)
		}
		switch {
		case c.Add != nil:
			byPGID[c.Add.PGID] = *c.Add
		case c.Remove != 0:
			delete(byPGID, c.Remove)
		}
	}
	st.Groups = st.Groups[:0]
	for _, e := range byPGID {
		st.Groups = append(st.Groups, e)
	}
	sort.Slice(st.Groups, func(i, j int) bool { return st.Groups[i].PGID < st.Groups[j].PGID })
	return st, nil
}

// bootID identifies the machine's current boot.
func bootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("reading the boot ID: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// procInfo is what the agent reads of a process in /proc/PID/stat.
type procInfo struct {
	pid, pgrp int
	start     uint64 // clock ticks after boot
	zombie    bool
}

// procStat reads /proc/PID/stat: after the command name (in parentheses,
// and it may hold anything) come the state (field 3), the process group
// (field 5) and the start time (field 22).
func procStat(pid int) (procInfo, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want at least 20", pid, len(f))
	}
	pgrp, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return procInfo{pid: pid, pgrp: pgrp, start: start, zombie: f[0] == "Z"}, nil
}

// processes lists the machine's processes (those that end meanwhile are
// left out).
func processes() ([]procInfo, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	out := make([]procInfo, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := procStat(pid); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}
