package agent

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/allot-sched/allot/internal/api"
)

// orphanGroup starts what an agent killed with SIGKILL leaves: a process
// group whose leader (the task's shell, killed by its parent-death signal)
// is gone while a child it started in the background runs on. It returns
// the group's ID, as the agent recorded it, and the child's PID.
func orphanGroup(t *testing.T, groups *taskGroups) (pgid, child int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "child")
	leader := exec.Command("/bin/sh", "-c", "sleep 300 & echo $! > "+pidFile+"; wait")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := groups.add(leader.Process.Pid, startWindow{}, api.Attempt{Job: "j", Task: "t", Attempt: 1}, ""); err != nil {
		t.Fatal(err)
	}
	child = readPID(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	_ = leader.Process.Kill()
	_ = leader.Wait()
	return leader.Process.Pid, child
}

// bystander starts a process group the agent did not start.
func bystander(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func TestARestartedAgentKillsWhatItsPreviousLifeLeftRunning(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	first, err := openStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, child := orphanGroup(t, first.groups)
	// A group recorded with the start time of another process: its ID was
	// reused after the task's group ended. It must be left alone.
	other := bystander(t)
	if _, err := first.groups.add(other.Process.Pid, startWindow{}, api.Attempt{Job: "j", Task: "u", Attempt: 1}, ""); err != nil {
		t.Fatal(err)
	}
	first.groups.mu.Lock()
	first.groups.byPGID[other.Process.Pid] = groupEntry{PGID: other.Process.Pid, Start: 1, Job: "j", Task: "u", Attempt: 1}
	if err := first.groups.saveLocked(); err != nil {
		t.Fatal(err)
	}
	first.groups.mu.Unlock()
	first.close() // as SIGKILL would: the lock goes with the process, the file stays

	again, err := openStateDir(dir)
	if err != nil {
		t.Fatalf("the restarted agent could not take its state directory: %v", err)
	}
	defer again.close()
	killed, err := again.killLeftovers()
	if err != nil {
		t.Fatal(err)
	}
	if !gone(child) {
		t.Errorf("the orphan (pid %d) still runs after the restart's cleanup", child)
	}
	if len(killed) != 1 || killed[0].Task != "t" {
		t.Errorf("killed %+v, want the group of task t only", killed)
	}
	if gone(other.Process.Pid) {
		t.Error("a process whose group ID was reused was killed")
	}
	// What was left is dealt with: the file lists nothing any more.
	if n := len(readGroupsFile(t, dir).Groups); n != 0 {
		t.Errorf("after the cleanup the state lists %d groups, want none", n)
	}
}

func TestLeftoversOfAnotherBootAreNotTouched(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	first, err := openStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, child := orphanGroup(t, first.groups)
	first.close()
	st := readGroupsFile(t, dir)
	st.Boot = "another-boot"
	b, _ := json.Marshal(st)
	if err := os.WriteFile(filepath.Join(dir, groupsFile), b, 0o600); err != nil {
		t.Fatal(err)
	}

	again, err := openStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.close()
	if killed, err := again.killLeftovers(); err != nil || len(killed) != 0 {
		t.Errorf("killed %+v (%v); after a reboot the recorded IDs mean nothing", killed, err)
	}
	if gone(child) {
		t.Error("a process recorded under another boot was killed")
	}
}

func TestAStateDirectoryIsTheAgentsAlone(t *testing.T) {
	t.Run("a second agent on the same directory is refused, naming the first", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		first, err := openStateDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer first.close()
		_, err = openStateDir(dir)
		if err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
			t.Fatalf("second agent: err = %v, want one saying the directory is in use by pid %d", err, os.Getpid())
		}
	})
	t.Run("a directory others may write to is refused", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		_, err := openStateDir(dir)
		if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "0777") {
			t.Fatalf("err = %v, want one naming the directory and its mode", err)
		}
	})
	t.Run("a new directory is private", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		sd, err := openStateDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer sd.close()
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("state directory mode %v (%v), want 0700", fi.Mode().Perm(), err)
		}
	})
}

// The agent records each task's group while it runs and forgets it when
// the task ends.
func TestTheAgentRecordsTheGroupsOfRunningTasks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	fs, url := newFakeServer(t)
	cfg := testConfig(url)
	cfg.StateDir = dir
	start(t, cfg)
	pidFile := filepath.Join(t.TempDir(), "pid")
	a := assign("j", "t", 1, "echo $$ > "+pidFile+"; sleep 1", nil)
	fs.give(api.Lease{Assignments: []api.Assignment{a}})
	pid := readPID(t, pidFile)
	// The task may write its PID before the agent records its group.
	waitFor(t, "the task's group to be recorded", func() bool {
		st := readGroupsFile(t, dir)
		return len(st.Groups) == 1 && st.Groups[0].PGID == pid && st.Groups[0].Task == "t" && st.Groups[0].Start != 0
	})
	waitFor(t, "the report", func() bool { _, ok := fs.report(a.Attempt); return ok })
	// The record goes once the attempt's directory is removed, after the
	// report.
	waitFor(t, "the record to go", func() bool { return len(readGroupsFile(t, dir).Groups) == 0 })
}

// What an attempt leaves is cleaned after its report is made, and its
// group's record goes last: an agent that crashed in between removes the
// directory when it starts again.
func TestAnAttemptsRecordOutlivesItsDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	sd, err := openStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sd.killLeftovers(); err != nil {
		t.Fatal(err)
	}
	r := testRunner(DefaultOutputTailBytes)
	r.groups = sd.groups
	run := func() (api.Report, leftover) {
		return r.run(newAttempt(api.Assignment{Attempt: api.Attempt{Job: "j", Task: "t", Attempt: 1}, Run: `dirname "$ALLOT_RESULT_FILE"`}))
	}
	rep, left := run()
	attemptDir := strings.TrimSpace(rep.Output)
	if rep.ExitCode != 0 || left.dir != attemptDir || left.pid == 0 {
		t.Fatalf("report %+v, left %+v: want a success in the directory left", rep, left)
	}
	if st := readGroupsFile(t, dir); len(st.Groups) != 1 || st.Groups[0].Dir != attemptDir {
		t.Fatalf("before cleaning, the state lists %+v, want the attempt with its directory", st.Groups)
	}
	r.clean(left)
	if _, err := os.Stat(attemptDir); !os.IsNotExist(err) {
		t.Errorf("the attempt's directory is still there after cleaning (%v)", err)
	}
	if st := readGroupsFile(t, dir); len(st.Groups) != 0 {
		t.Errorf("after cleaning, the state lists %+v, want nothing", st.Groups)
	}

	// A crash after the report, before the cleaning.
	rep, left = run()
	attemptDir = strings.TrimSpace(rep.Output)
	if _, err := os.Stat(attemptDir); err != nil {
		t.Fatal(err)
	}
	sd.close()
	again, err := openStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.close()
	if killed, err := again.killLeftovers(); err != nil || len(killed) != 0 {
		t.Errorf("killed %+v (%v): the task had ended", killed, err)
	}
	if _, err := os.Stat(attemptDir); !os.IsNotExist(err) {
		t.Errorf("the directory of an attempt reported before a crash is still there after the restart (%v)", err)
	}
}

// readGroupsFile reads the groups a state directory records, as a
// restarted agent would.
func readGroupsFile(t *testing.T, dir string) groupsState {
	t.Helper()
	path := filepath.Join(dir, groupsFile)
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	st, err := (&taskGroups{path: path}).load()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// The groups file is a log: starts and ends are appended to it, it reads
// as what is running, a crash's torn last line is as if never written,
// and it is compacted before it grows long.
func TestTheGroupsLogReadsAsWhatRunsAndStaysShort(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	sd, err := openStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sd.close()
	if _, err := sd.killLeftovers(); err != nil {
		t.Fatal(err)
	}
	running := bystander(t).Process.Pid
	ended := bystander(t).Process.Pid
	var start uint64
	for i, pid := range []int{running, ended} {
		var err error
		if start, err = sd.groups.add(pid, startWindow{}, api.Attempt{Job: "j", Task: "t" + strconv.Itoa(i), Attempt: 1}, ""); err != nil {
			t.Fatal(err)
		}
	}
	// A removal of the same ID with another start time is of an earlier
	// task that had it: it leaves the record alone.
	if err := sd.groups.remove(running, 1); err != nil {
		t.Fatal(err)
	}
	if err := sd.groups.remove(ended, start); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, groupsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 4 {
		t.Errorf("the log has %d lines, want 4 (the snapshot, two starts, an end):\n%s", n, b)
	}
	want := func(what string) {
		t.Helper()
		st := readGroupsFile(t, dir)
		if len(st.Groups) != 1 || st.Groups[0].PGID != running || st.Groups[0].Task != "t0" || st.Boot == "" {
			t.Errorf("%s: the log reads as %+v, want the running group %d only", what, st, running)
		}
	}
	want("after two starts and an end")

	// A crash in the middle of an append.
	torn := append(append([]byte(nil), b...), []byte(`{"add":{"pgid":4`)...)
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	want("with a torn last line")
	// Damage anywhere else is not a crash's: it is an error.
	damaged := strings.Replace(string(b), `{"add"`, `{"add":x`, 1)
	if err := os.WriteFile(path, []byte(damaged), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (&taskGroups{path: path}).load(); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a damaged change line read with err = %v, want one naming line 2", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	// Many starts and ends: the log is rewritten from time to time.
	for i := range 3 * compactAfter {
		if _, err := sd.groups.add(ended, startWindow{}, api.Attempt{Job: "j", Task: "x" + strconv.Itoa(i), Attempt: 1}, ""); err != nil {
			t.Fatal(err)
		}
		if err := sd.groups.remove(ended, start); err != nil {
			t.Fatal(err)
		}
	}
	b, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > compactAfter+6 {
		t.Errorf("after %d starts and ends the log has %d lines: it is not compacted", 3*compactAfter, n)
	}
	want("after compactions")
}

// The attempt directories a crashed agent left (working directories and
// result files of tasks, possibly large or private) are removed when it
// starts again; a recorded path that is not an attempt directory is not.
func TestARestartedAgentRemovesTheAttemptDirectoriesItsPreviousLifeLeft(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	first, err := openStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	left, err := os.MkdirTemp("", attemptDirPrefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(left) })
	if err := os.WriteFile(filepath.Join(left, "result.json"), []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	notOurs := t.TempDir()
	task := bystander(t)
	if _, err := first.groups.add(task.Process.Pid, startWindow{}, api.Attempt{Job: "j", Task: "t", Attempt: 1}, left); err != nil {
		t.Fatal(err)
	}
	other := bystander(t)
	if _, err := first.groups.add(other.Process.Pid, startWindow{}, api.Attempt{Job: "j", Task: "u", Attempt: 1}, notOurs); err != nil {
		t.Fatal(err)
	}
	first.close()

	again, err := openStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.close()
	if _, err := again.killLeftovers(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the attempt directory %s is still there after the restart (%v)", left, err)
	}
	if _, err := os.Stat(notOurs); err != nil {
		t.Errorf("a recorded path that is not an attempt directory was removed: %v", err)
	}
}

func TestTheStartWindowAForkTellsHoldsTheStartTimeInProc(t *testing.T) {
	told := 0
	for range 20 {
		cmd := exec.Command("/bin/true")
		start, err := startTask(cmd, nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := procStat(cmd.Process.Pid) // a zombie until Wait
		_ = cmd.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if start.From != 0 {
			told++
			if p.start < start.From || p.start > start.From+start.Span {
				t.Errorf("the fork told start window %+v, /proc/%d/stat has %d", start, p.pid, p.start)
			}
		}
	}
	if told == 0 {
		t.Errorf("no fork of 20 told its start window")
	}
}

func TestAStartTimeNotTheKernelsIsReplacedAndTheForksAreNoLongerBelieved(t *testing.T) {
	sd, err := openStateDir(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	defer sd.close()
	self := os.Getpid()
	p, err := procStat(self)
	if err != nil {
		t.Fatal(err)
	}
	wrong := startWindow{From: p.start + 1, Span: 2}
	got, err := sd.groups.add(self, wrong, api.Attempt{Job: "j", Task: "t", Attempt: 1}, "")
	if err != nil {
		t.Fatal(err)
	}
	if e := sd.groups.byPGID[self]; got != p.start || e.Start != p.start || e.StartSpan != 0 {
		t.Errorf("recorded start %d+%d (returned %d), want /proc's %d", e.Start, e.StartSpan, got, p.start)
	}
	// Past the first checks too, a wrong clock is not believed again.
	sd.groups.checked.Store(startChecks)
	if got, _ := sd.groups.add(self, wrong, api.Attempt{Job: "j", Task: "u", Attempt: 1}, ""); got != p.start {
		t.Errorf("after a wrong start time, add recorded %d, want /proc's %d", got, p.start)
	}
}

func TestARecordedStartWindowTellsTheLeaderFromAProcessThatTookItsID(t *testing.T) {
	g := groupEntry{PGID: 100, Start: 5000, StartSpan: 2}
	for _, tc := range []struct {
		leaderStart uint64
		ours        bool
	}{{4999, false}, {5000, true}, {5002, true}, {5003, false}} {
		procs := []procInfo{{pid: 100, pgrp: 100, start: tc.leaderStart}}
		if got := stillOurs(g, procs); got != tc.ours {
			t.Errorf("leader started at %d, window %d+%d: stillOurs = %v, want %v", tc.leaderStart, g.Start, g.StartSpan, got, tc.ours)
		}
	}
}
