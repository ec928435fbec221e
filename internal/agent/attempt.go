package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/allot-sched/allot/internal/agent/cgroup"
	"github.com/allot-sched/allot/internal/api"
)

// MaxResultBytes bounds the result file a task may write: results travel
// in reports and are substituted into later tasks, they are not outputs.
const MaxResultBytes = 64 << 10

// outputDrain bounds how long the output of a finished task is read after
// its process group was killed: a process that escaped the group (setsid)
// may hold the pipe open forever.
const outputDrain = time.Second

// attempt is one assignment on this worker, from the lease that brought it
// until its report is queued.
type attempt struct {
	as api.Assignment
	// started is set, under Agent.mu, when the attempt leaves the local
	// queue for a slot.
	started bool
	// batchHead names the head of the merged batch the attempt runs in
	// (the head included), "" outside a batch; batch, on the head only,
	// lists the batch's attempts in the order they run.
	batchHead string
	batch     []*attempt
	// accepted is when the lease answer that brought the attempt arrived;
	// slotted, when it got a slot; began and ended, when its process
	// started and was reaped (zero if it never started). They feed Stats.
	accepted, slotted, began, ended time.Time

	mu      sync.Mutex
	proc    *os.Process // nil until the process started
	cg      *confined   // the attempt's cgroup, nil when unconfined
	exited  bool        // the process was reaped: its group is not ours to signal
	cause   string      // why the agent ended it (stop, timeout, shutdown), "" if it did not
	stopped bool        // a stop order came for it
	killAt  time.Time
	kill    *time.Timer
}

func newAttempt(as api.Assignment) *attempt { return &attempt{as: as} }

// reportOf starts the report of assignment as: it names the attempt and
// carries the attempt's secret, without which the server refuses it. The
// exit code is -1 (did not run) until a process sets it.
func reportOf(as api.Assignment) api.Report {
	return api.Report{Attempt: as.Attempt, Secret: as.Secret, ExitCode: -1}
}

// terminate ends the attempt: SIGTERM to its process group now, SIGKILL
// after grace. Called again (a stop order after a timeout), it keeps the
// first cause but may bring the SIGKILL forward. Before the process starts
// it only records the cause, and the process is never started.
func (at *attempt) terminate(cause string, stopOrder bool, grace time.Duration) {
	at.mu.Lock()
	defer at.mu.Unlock()
	if at.cause == "" {
		at.cause = cause
	}
	at.stopped = at.stopped || stopOrder
	if at.proc == nil || at.exited {
		return
	}
	deadline := time.Now().Add(grace)
	if at.kill != nil {
		if !deadline.Before(at.killAt) {
			return
		}
		at.kill.Stop()
	} else {
		_ = terminateGroup(at.proc)
		at.cg.signal(syscall.SIGTERM) // what left the process group
	}
	at.killAt = deadline
	at.kill = time.AfterFunc(grace, func() {
		at.mu.Lock()
		defer at.mu.Unlock()
		if !at.exited {
			_ = killGroup(at.proc)
			at.cg.kill()
		}
	})
}

// reaped records that the process ended. Whatever it left behind in its
// process group or its cgroup (a background child, a daemon) is killed: a
// finished task must not keep holding the worker's resources.
func (at *attempt) reaped() (cause string, stopped bool) {
	at.mu.Lock()
	defer at.mu.Unlock()
	_ = killGroup(at.proc)
	at.cg.kill()
	at.exited = true
	if at.kill != nil {
		at.kill.Stop()
	}
	return at.cause, at.stopped
}

// runner runs attempts as processes. It holds the part of the agent's
// configuration that shapes a process.
type runner struct {
	workDir   string // base for tasks without a workdir, "" for a per-attempt temp dir
	tailBytes int
	grace     time.Duration
	log       *slog.Logger
	// groups records the process groups of running tasks, so that a
	// restarted agent kills what a crash left (leftovers.go); nil records
	// nothing.
	groups *taskGroups
	// users decides the user each task runs as (runas.go); nil runs every
	// task as the agent's user.
	users *userPolicy
	// started, when set, is told of every process started (Config.Started).
	started func(api.Attempt)
	// cg makes the attempts' cgroups (confine.go); nil runs them
	// unconfined. cpus are the CPUs it may give attempts of their own;
	// pids is each attempt's pids limit (0: none).
	cg   *cgroup.Manager
	cpus *cpuPool
	pids int64
	// gpuNodes are the device nodes of the worker's GPUs by index
	// (gpunodes_linux.go): each attempt's cgroup denies those its task was
	// not given. Nil where they are not found (GPUs declared with --gpus).
	gpuNodes map[int]cgroup.Device
	// stream, when set, makes the stream that sends an attempt's output
	// to the server while it runs (stream.go).
	stream func(api.Assignment) *outStream
	// gpus is the worker's GPU count: on a worker with GPUs, every task
	// is shown only the devices its assignment gives it (devices.go).
	gpus int
}

// leftover is what remains of an attempt once its report is made: its
// directory, and the record of its process group, which goes only after
// the directory did, so that an agent that crashes in between removes the
// directory when it starts again.
type leftover struct {
	cg    *confined // the attempt's cgroup, nil if none
	dir   string    // "" if none was made
	pid   int       // the group's ID, 0 if none was recorded
	start uint64    // its leader's start time, as recorded
}

// run runs the attempt to its end and returns its report; it never fails,
// since a task that cannot run is a report too (exit code -1 and Error).
// What it leaves is for clean, once the report is on its way.
func (r runner) run(at *attempt) (api.Report, leftover) {
	var left leftover
	as := at.as
	rep := reportOf(as)
	cmd, err := command(as)
	if err != nil {
		rep.Error = err.Error()
		return rep, left
	}
	user, err := r.users.userFor(as)
	if err != nil {
		rep.Error = err.Error()
		return rep, left
	}
	tmp, err := os.MkdirTemp("", attemptDirPrefix+"*")
	if err != nil {
		rep.Error = fmt.Sprintf("could not create the attempt's directory: %v", err)
		return rep, left
	}
	left.dir = tmp
	// The task owns the directory, so it may rename it and leave a link in
	// its place: the result is read through the directory made here, held
	// open from before the task starts, never through its path.
	dir, err := os.OpenRoot(tmp)
	if err != nil {
		rep.Error = fmt.Sprintf("could not open the attempt's directory: %v", err)
		return rep, left
	}
	defer dir.Close()
	// The directory is the task's (it writes its result there, and works
	// there when it names no workdir), whoever it runs as.
	if err := giveTo(tmp, user); err != nil {
		rep.Error = fmt.Sprintf("could not give the attempt's directory to user %q: %v", user.Name, err)
		return rep, left
	}
	const resultName = "result.json"
	resultPath := filepath.Join(tmp, resultName)
	cmd.Dir = r.dir(as, tmp)
	cmd.Env = environ(as, resultPath, user)
	if at.batchHead != "" {
		cmd.Env = append(cmd.Env, "ALLOT_BATCH="+at.batchHead)
	}
	if as.TaskCount > 0 {
		// A server that sends no array place (TaskCount 0) predates GPU
		// devices too: it gave the task none, and must not hide the GPUs.
		cmd.Env = append(cmd.Env, deviceEnv(as.GPUs, r.gpus)...)
	}
	setTaskAttrs(cmd, user)

	// The process writes into a pipe we read ourselves, rather than letting
	// exec copy its output: then Wait returns when the process ends, not
	// when the last holder of its stdout (a background child) does.
	out := newTail(r.tailBytes)
	pr, pw, err := os.Pipe()
	if err != nil {
		rep.Error = fmt.Sprintf("could not create the output pipe: %v", err)
		return rep, left
	}
	cmd.Stdout, cmd.Stderr = pw, pw

	cg, err := r.newGroup(as)
	if err != nil {
		pr.Close()
		pw.Close()
		rep.Error = fmt.Sprintf("could not make the attempt's cgroup: %v", err)
		return rep, left
	}
	left.cg = cg
	at.mu.Lock()
	at.cg = cg
	if at.cause != "" {
		rep.Error, rep.Stopped = at.cause+" before it started", at.stopped
		at.mu.Unlock()
		pr.Close()
		pw.Close()
		return rep, left
	}
	forked, err := startTask(cmd, cg.group())
	pw.Close()
	if err != nil {
		at.mu.Unlock()
		pr.Close()
		rep.Error = startError(err, cmd.Dir)
		return rep, left
	}
	at.proc = cmd.Process
	at.began = time.Now()
	at.mu.Unlock()
	if r.started != nil {
		r.started(as.Attempt)
	}
	if start, err := r.groups.add(cmd.Process.Pid, forked, as.Attempt, tmp); err != nil {
		r.log.Warn("could not record the task's process group: what it leaves would survive a crash of the agent",
			append(attemptAttrs(as.Attempt), "err", err)...)
	} else {
		left.pid, left.start = cmd.Process.Pid, start
	}

	var sink io.Writer = out
	var stream *outStream
	if r.stream != nil {
		stream = r.stream(as)
		sink = io.MultiWriter(out, stream)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(sink, pr)
	}()
	var timer *time.Timer
	if d := time.Duration(as.Timeout); d > 0 {
		timer = time.AfterFunc(d, func() { at.terminate(fmt.Sprintf("timed out after %s", d), false, r.grace) })
	}
	werr := cmd.Wait()
	at.ended = time.Now()
	if timer != nil {
		timer.Stop()
	}
	cause, stopped := at.reaped()
	oom := cg.usage(&rep, cmd.ProcessState)
	r.giveCPUs(cg)
	select {
	case <-copied:
	case <-time.After(outputDrain):
		pr.Close()
		<-copied
	}
	pr.Close()
	if stream != nil {
		if oom != "" {
			// The same line the report's output ends with (below), for
			// the output the server keeps from the stream.
			note := "allot: " + oom + "\n"
			if o := out.String(); o != "" && !strings.HasSuffix(o, "\n") {
				note = "\n" + note
			}
			_, _ = stream.Write([]byte(note))
		}
		stream.finish()
	}

	rep.ExitCode = exitCode(cmd.ProcessState)
	rep.Stopped = stopped
	rep.Output = out.String()
	if oom != "" {
		// Where the task's output stops, as a line of its own: allot
		// logs shows why it did.
		rep.Output = withNote(rep.Output, "allot: "+oom, r.tailBytes)
	}
	var problems []string
	if oom != "" {
		problems = append(problems, oom)
	}
	if cause != "" {
		problems = append(problems, cause)
	}
	var exitErr *exec.ExitError
	if werr != nil && !errors.As(werr, &exitErr) {
		problems = append(problems, fmt.Sprintf("waiting for the process: %v", werr))
	}
	result, err := readResult(dir, resultName, user)
	if err != nil {
		problems = append(problems, err.Error())
	}
	rep.Result = result
	rep.Error = strings.Join(problems, "; ")
	return rep, left
}

// clean removes what an attempt left: its directory, then its cgroup
// (kept for a later attempt when it can be: the files the task left in a
// tmpfs are charged to its memory until the directory goes), then the
// record of its process group (killed when the process was reaped).
func (r runner) clean(left leftover) {
	if left.dir != "" {
		if err := os.RemoveAll(left.dir); err != nil {
			r.log.Warn("could not remove an attempt's directory", "dir", left.dir, "err", err)
		}
	}
	r.releaseGroup(left.cg)
	if left.pid != 0 {
		if err := r.groups.remove(left.pid, left.start); err != nil {
			r.log.Warn("could not update the record of the tasks' process groups", "processGroup", left.pid, "err", err)
		}
	}
}

// command builds the process of an assignment: Run through the shell,
// Command as is (no shell, no word splitting).
func command(as api.Assignment) (*exec.Cmd, error) {
	switch {
	case len(as.Command) > 0 && as.Command[0] != "":
		name := as.Command[0]
		if path, ok := programs.lookPath(name); ok {
			cmd := exec.Command(path, as.Command[1:]...)
			cmd.Args[0] = name // as exec.Command does for a name it looks up
			return cmd, nil
		}
		return exec.Command(name, as.Command[1:]...), nil
	case strings.TrimSpace(as.Run) != "":
		return exec.Command("/bin/sh", "-c", as.Run), nil
	default:
		return nil, errors.New("the assignment has neither run nor command")
	}
}

// startError says why a task could not start. A working directory the
// child cannot change to fails the start with exec's error, which names
// the program ("fork/exec /bin/sh: no such file or directory"), as if the
// program were missing; so a directory that is missing or is not one is
// named instead.
func startError(err error, dir string) string {
	if dir != "" {
		fi, serr := os.Stat(dir)
		var pe *fs.PathError
		switch {
		case errors.As(serr, &pe):
			return fmt.Sprintf("could not start: workdir %s: %v", dir, pe.Err)
		case serr == nil && !fi.IsDir():
			return fmt.Sprintf("could not start: workdir %s: not a directory", dir)
		}
	}
	return fmt.Sprintf("could not start: %v", err)
}

// dir is the attempt's working directory: the assignment's workdir
// (relative to the agent's WorkDir when it has one), else the agent's
// WorkDir, else the attempt's own temporary directory.
func (r runner) dir(as api.Assignment, tmp string) string {
	switch {
	case as.WorkDir != "" && r.workDir != "" && !filepath.IsAbs(as.WorkDir):
		return filepath.Join(r.workDir, as.WorkDir)
	case as.WorkDir != "":
		return as.WorkDir
	case r.workDir != "":
		return r.workDir
	default:
		return tmp
	}
}

// environ is the agent's environment without its token (a task must not
// be able to act as the worker), then HOME, USER and LOGNAME of the user
// the task runs as (when it is not the agent's), then the assignment's
// variables, then the ALLOT_* variables that identify the attempt; later
// entries win.
func environ(as api.Assignment, resultPath string, user *taskUser) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ALLOT_TOKEN=") {
			env = append(env, kv)
		}
	}
	if user != nil {
		env = append(env, "HOME="+user.Home, "USER="+user.Name, "LOGNAME="+user.Name)
	}
	keys := make([]string, 0, len(as.Env))
	for k := range as.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+as.Env[k])
	}
	return append(append(env,
		"ALLOT_JOB="+as.Job,
		"ALLOT_TASK="+as.Task,
		"ALLOT_ATTEMPT="+strconv.Itoa(as.Attempt.Attempt),
		"ALLOT_RESULT_FILE="+resultPath,
	), arrayEnv(as)...)
}

// arrayEnv places the task in its array (the entry of the job spec it was
// expanded from): ALLOT_TASK_INDEX from 0 and ALLOT_TASK_COUNT. An
// assignment from a server that does not send them (TaskCount 0) adds
// nothing.
func arrayEnv(as api.Assignment) []string {
	if as.TaskCount < 1 {
		return nil
	}
	return []string{"ALLOT_TASK_INDEX=" + strconv.Itoa(as.TaskIndex), "ALLOT_TASK_COUNT=" + strconv.Itoa(as.TaskCount)}
}

// readResult reads the result file a task may write: nothing (no file, or
// an empty one) is no result; anything else must be one JSON object of at
// most MaxResultBytes.
//
// The file is the task's: it is read inside the attempt's directory dir,
// and a link leading out of it or anything but a regular file is refused,
// so a task running as another user cannot have the agent read what it may
// not (or wait on a pipe forever); with owner set (the task's user), a
// file that is not that user's own (a hard link to another's) is refused.
func readResult(dir *os.Root, name string, owner *taskUser) (json.RawMessage, error) {
	fi, err := dir.Lstat(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil // most tasks write none
	case err == nil && fi.Mode()&os.ModeSymlink != 0:
		return nil, errors.New("invalid result: the result file is a symbolic link")
	}
	f, err := dir.OpenFile(name, openResultFlags, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("invalid result: %w", err)
	}
	defer f.Close()
	fi, err = f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("invalid result: the result file is not a regular file")
	}
	if !ownedBy(fi, owner) {
		return nil, fmt.Errorf("invalid result: the result file is not owned by the task's user %q", owner.Name)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxResultBytes+1))
	if err != nil {
		return nil, fmt.Errorf("invalid result: %w", err)
	}
	if len(b) > MaxResultBytes {
		return nil, fmt.Errorf("invalid result: the result file is larger than %d KiB", MaxResultBytes>>10)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		return nil, errors.New("invalid result: the result file does not hold a JSON object")
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		return nil, fmt.Errorf("invalid result: %w", err)
	}
	return c.Bytes(), nil
}
