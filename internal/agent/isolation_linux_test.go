package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/allot-sched/allot/internal/api"
)

// A file the agent's process holds open without close-on-exec (one it
// inherited from whoever started it: a supervisor's socket, a token file)
// must not reach a task.
func TestTasksInheritNoFileDescriptorOfTheAgent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent-secret")
	if err := os.WriteFile(path, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(path, syscall.O_RDONLY, 0) // no O_CLOEXEC, as an inherited descriptor
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)

	fs, url := newFakeServer(t)
	start(t, testConfig(url))
	// ls lists the shell's descriptors from another process, so the
	// listing opens none of its own in the shell.
	a := assign("j", "t", 1, `ls /proc/$$/fd`, nil)
	fs.give(api.Lease{Assignments: []api.Assignment{a}})
	waitFor(t, "the report", func() bool { _, ok := fs.report(a.Attempt); return ok })
	rep, _ := fs.report(a.Attempt)
	if got := strings.Fields(rep.Output); strings.Join(got, " ") != "0 1 2" || rep.ExitCode != 0 {
		t.Errorf("the task holds descriptors %v (exit %d, %s), want only 0 1 2", got, rep.ExitCode, rep.Error)
	}
}

// startOnEndingThread starts a task, with start, from a goroutine locked
// to a thread that ends right after, and returns it. The main thread never
// ends (the runtime keeps it): a goroutine that lands there holds it until
// the task is started, so that the next one runs elsewhere.
func startOnEndingThread(t *testing.T, start func(*exec.Cmd) error) *exec.Cmd {
	t.Helper()
	type result struct {
		cmd  *exec.Cmd
		park chan struct{} // set when the goroutine holds the main thread
	}
	var parked []chan struct{}
	defer func() {
		for _, c := range parked {
			close(c)
		}
	}()
	for range 100 {
		started := make(chan result, 1)
		go func() {
			runtime.LockOSThread() // not unlocked: the thread ends with this goroutine
			if unix.Gettid() == unix.Getpid() {
				park := make(chan struct{})
				started <- result{park: park}
				<-park
				runtime.UnlockOSThread()
				return
			}
			cmd := exec.Command("sleep", "30")
			setTaskAttrs(cmd, nil)
			if err := start(cmd); err != nil {
				t.Error(err)
			}
			started <- result{cmd: cmd}
		}()
		r := <-started
		if r.park != nil {
			parked = append(parked, r.park)
			continue
		}
		t.Cleanup(func() {
			_ = r.cmd.Process.Kill()
			_ = r.cmd.Wait()
		})
		return r.cmd
	}
	t.Fatal("no goroutine ran on a thread other than the main one")
	return nil
}

// A task dies with the agent (Pdeathsig), and the kernel sends that signal
// when the thread that forked the task ends, not the process. So tasks are
// forked from a thread that lives as long as the agent: a task started by
// a goroutine whose thread then ends keeps running.
func TestATaskOutlivesTheThreadOfTheGoroutineThatStartedIt(t *testing.T) {
	cmd := startOnEndingThread(t, func(c *exec.Cmd) error { _, err := startTask(c, nil); return err })
	time.Sleep(200 * time.Millisecond) // the thread's end and its signal are asynchronous
	if gone(cmd.Process.Pid) {
		t.Fatal("the task ended when the thread of the goroutine that started it did")
	}
}

// Pdeathsig itself: a task forked on a thread that ends dies. This is what
// the test above relies on to fail without the dedicated thread.
func TestATaskForkedOnAnEndingThreadDies(t *testing.T) {
	cmd := startOnEndingThread(t, (*exec.Cmd).Start)
	waitFor(t, "the task to die with its thread", func() bool { return gone(cmd.Process.Pid) })
}
