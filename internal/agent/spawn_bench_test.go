//go:build linux

package agent

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/allot-sched/allot/internal/agent/cgroup"
	"github.com/allot-sched/allot/internal/api"
)

// The machine's process-spawn limit, and the agent's spawn path against
// it (docs/performance.md, "The worker side"). Each operation is one
// process of /usr/bin/true started and reaped; ns/op over g goroutines is
// the inverse of the rate the machine sustains with g slots.
//
//	bare      exec.Command(true).Run(): what any Go program pays
//	hardened  the agent's process shape (own process group, parent-death
//	          signal, forked from the locked thread) with output to a pipe
//	runner    the whole per-attempt path of the agent: attempt directory,
//	          environment, pipe and tail, process group recorded in the
//	          state directory, result read; then, in one goroutine, the
//	          directory removed and the record dropped
//	runner-cgroup-v1, runner-cgroup-v2
//	          the same, each attempt in a cgroup of its own (made,
//	          joined, measured, killed and removed) on that hierarchy
func BenchmarkSpawn(b *testing.B) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true on this machine")
	}
	for _, g := range []int{1, 16} {
		b.Run(fmt.Sprintf("bare/g=%d", g), func(b *testing.B) {
			spawnParallel(b, g, func(int) error { return exec.Command(truePath).Run() })
		})
		b.Run(fmt.Sprintf("hardened/g=%d", g), func(b *testing.B) {
			spawnParallel(b, g, func(int) error {
				cmd := exec.Command(truePath)
				setTaskAttrs(cmd, nil)
				return startAndWait(cmd)
			})
		})
		for _, v := range []int{0, 1, 2} {
			name := fmt.Sprintf("runner/g=%d", g)
			if v > 0 {
				name = fmt.Sprintf("runner-cgroup-v%d/g=%d", v, g)
			}
			b.Run(name, func(b *testing.B) { benchRunner(b, g, v) })
		}
	}
}

// benchRunner runs the agent's whole per-attempt path from g goroutines,
// unconfined (version 0) or in a cgroup each on cgroup v1 or v2.
func benchRunner(b *testing.B, g, version int) {
	sd, err := openStateDir(filepath.Join(b.TempDir(), "state"))
	if err != nil {
		b.Fatal(err)
	}
	defer sd.close()
	r := runner{tailBytes: DefaultOutputTailBytes, grace: DefaultGrace, log: slog.New(slog.DiscardHandler), groups: sd.groups}
	if version > 0 {
		m, err := cgroup.Open(cgroup.Options{Version: version})
		if err != nil {
			b.Skipf("no cgroup v%d here: %v", version, err)
		}
		defer m.Close()
		r.cg, r.pids = m, cgroup.DefaultPids
	}
	// What attempts leave is cleaned by one goroutine, as the agent's
	// tidy does.
	leftovers := make(chan leftover, 4*g+16)
	tidied := make(chan struct{})
	go func() {
		defer close(tidied)
		for left := range leftovers {
			r.clean(left)
		}
	}()
	spawnParallel(b, g, func(i int) error {
		as := api.Assignment{Attempt: api.Attempt{Job: "j", Task: fmt.Sprintf("t%d", i), Attempt: 1}, Command: []string{"true"}}
		rep, left := r.run(newAttempt(as))
		leftovers <- left
		if rep.ExitCode != 0 || rep.Error != "" {
			return fmt.Errorf("exit code %d, error %q", rep.ExitCode, rep.Error)
		}
		return nil
	})
	close(leftovers)
	<-tidied
}

// startAndWait starts cmd as the agent does, output to a pipe it drains,
// and waits for it.
func startAndWait(cmd *exec.Cmd) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	_, err = startTask(cmd, nil)
	pw.Close()
	if err != nil {
		pr.Close()
		return err
	}
	out := newTail(DefaultOutputTailBytes)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(out, pr)
	}()
	err = cmd.Wait()
	<-drained
	pr.Close()
	return err
}

// spawnParallel runs b.N calls of spawn from g goroutines.
func spawnParallel(b *testing.B, g int, spawn func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var failed error
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	for range g {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				if i > b.N {
					return
				}
				if err := spawn(i); err != nil {
					once.Do(func() { failed = err })
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	if failed != nil {
		b.Fatal(failed)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "procs/s")
	// The agent's own CPU time per process (the children's is not in it),
	// which the wall time of a shared machine hides.
	cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
	b.ReportMetric(float64(cpu)/1e3/float64(b.N), "cpu-µs/op")
}

// BenchmarkRecordGroup is the state directory's record of one task's
// process group: added when it starts, removed when it ends, with 15
// other tasks running.
func BenchmarkRecordGroup(b *testing.B) {
	sd, err := openStateDir(filepath.Join(b.TempDir(), "state"))
	if err != nil {
		b.Fatal(err)
	}
	defer sd.close()
	if _, err := sd.killLeftovers(); err != nil {
		b.Fatal(err)
	}
	self := os.Getpid()
	for i := range 15 {
		if _, err := sd.groups.add(self, startWindow{}, api.Attempt{Job: "j", Task: fmt.Sprintf("other-%d", i), Attempt: 1}, "/tmp/allot-attempt-other"); err != nil {
			b.Fatal(err)
		}
		sd.groups.mu.Lock()
		sd.groups.byPGID[1_000_000+i] = sd.groups.byPGID[self]
		delete(sd.groups.byPGID, self)
		sd.groups.mu.Unlock()
	}
	for b.Loop() {
		start, err := sd.groups.add(self, startWindow{}, api.Attempt{Job: "j", Task: "t", Attempt: 1}, "/tmp/allot-attempt-123456789")
		if err != nil {
			b.Fatal(err)
		}
		if err := sd.groups.remove(self, start); err != nil {
			b.Fatal(err)
		}
	}
}
