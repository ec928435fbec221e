package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// The crash tests run real processes and kill them: the server with
// SIGKILL in the middle of a run, a worker with SIGKILL, a worker frozen
// with SIGSTOP past the heartbeat timeout. Whatever happens, every task
// must end exactly once, and nothing acknowledged may be lost.

// heartbeat is the agents' heartbeat interval in these tests: short, so
// that a server that restarted is told what they run at once.
const heartbeat = "300ms"

// crashWorker starts a worker with a short heartbeat interval.
func crashWorker(c *cluster, name string, slots int, extra ...string) *exec.Cmd {
	c.t.Helper()
	return c.startWorker(name, append([]string{"--slots", fmt.Sprint(slots), "--cpu", "4", "--memory", "8Gi", "--heartbeat", heartbeat, "--grace", "1s"}, extra...)...)
}

// killServer ends the server process with SIGKILL: no shutdown, no flush.
func (c *cluster) killServer() {
	c.t.Helper()
	if err := c.server.Process.Kill(); err != nil {
		c.t.Fatal(err)
	}
	_ = c.server.Wait()
}

// restartServer starts a server again on the same data directory and port.
func (c *cluster) restartServer(args ...string) {
	c.t.Helper()
	c.startServer(strings.TrimPrefix(c.url, "http://"), args...)
}

// trySubmit submits a job and reports whether the server acknowledged it.
func (c *cluster) trySubmit(doc string) (api.Job, error) {
	resp, err := c.request("POST", "/v1/jobs", "application/yaml", strings.NewReader(doc))
	if err != nil {
		return api.Job{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return api.Job{}, fmt.Errorf("submit: %d %s", resp.StatusCode, body)
	}
	var j api.Job
	return j, json.Unmarshal(body, &j)
}

// events returns the whole event log, one page after another.
func (c *cluster) events() []api.Event {
	c.t.Helper()
	var all []api.Event
	for {
		var page []api.Event
		after := int64(0)
		if len(all) > 0 {
			after = all[len(all)-1].ID
		}
		c.getJSON(fmt.Sprintf("/v1/events?after=%d&limit=1000", after), &page)
		all = append(all, page...)
		if len(page) < 1000 {
			return all
		}
	}
}

// succeededCount counts task_succeeded events per job/task.
func succeededCount(evs []api.Event) map[string]int {
	n := map[string]int{}
	for _, e := range evs {
		if e.Kind == "task_succeeded" {
			n[e.Job+"/"+e.Task]++
		}
	}
	return n
}

// waitUntil polls cond until it holds or within passes.
func waitUntil(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkEndedOnce checks that every task of every job succeeded, that the
// event log records exactly one success per task, and that each task's
// result is the one it wrote.
func checkEndedOnce(t *testing.T, c *cluster, ids []string) {
	t.Helper()
	jobs := make([]api.Job, len(ids))
	for i, id := range ids {
		jobs[i] = c.waitJob(id, 60*time.Second)
	}
	counts := succeededCount(c.events())
	tasks := 0
	for i, id := range ids {
		j := jobs[i]
		if j.State != "succeeded" {
			t.Errorf("job %s ended %s, want succeeded", id, j.State)
		}
		for _, tk := range j.Tasks {
			tasks++
			if tk.State != "succeeded" {
				t.Errorf("%s/%s is %s (%+v)", id, tk.Name, tk.State, tk.Reason)
			}
			if n := counts[id+"/"+tk.Name]; n != 1 {
				t.Errorf("%s/%s succeeded %d times in the event log, want exactly once", id, tk.Name, n)
			}
			var res struct{ Task string }
			if err := json.Unmarshal(tk.Result, &res); err != nil || res.Task != tk.Name {
				t.Errorf("%s/%s: result %s, want the one it wrote", id, tk.Name, tk.Result)
			}
		}
	}
	t.Logf("%d jobs, %d tasks, each ended exactly once", len(ids), tasks)
}

// publish is a task script that writes a result naming the task.
const publish = `echo "{\"task\": \"$ALLOT_TASK\"}" > "$ALLOT_RESULT_FILE"`

func TestServerKilledMidRunLosesNothingAndEndsEveryTaskOnce(t *testing.T) {
	args := []string{"--heartbeat-timeout", "20s"}
	c := start(t, args...)
	for i := 1; i <= 3; i++ {
		crashWorker(c, fmt.Sprintf("w%d", i), 4)
	}
	// 300 short tasks in 6 jobs, and a DAG whose tasks read a result.
	var ids []string
	for i := range 6 {
		j := c.submit(fmt.Sprintf(`
id: many-%d
tasks:
  - name: t
    count: 50
    run: |
      sleep 0.0$(($$ %% 5))
      %s
`, i, publish))
		ids = append(ids, j.ID)
	}
	dag := c.submit(fmt.Sprintf(`
id: dag
tasks:
  - name: prepare
    run: |
      sleep 0.5
      echo '{"task": "prepare", "rows": 42}' > "$ALLOT_RESULT_FILE"
  - name: use
    count: 4
    needs: [prepare]
    run: |
      test "${tasks.prepare.result.rows}" = 42 || exit 9
      sleep 1
      %s
  - name: report
    needs: [use]
    run: |
      sleep 0.3
      %s
`, publish, publish))
	ids = append(ids, dag.ID)

	// Submissions keep coming while the server dies and returns: those
	// it acknowledged must all run; the others may or may not exist.
	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	var submitting sync.WaitGroup
	submitting.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if j, err := c.trySubmit(fmt.Sprintf("id: late-%d\ntasks: [{name: t, run: '%s'}]\n", i, publish)); err == nil {
				mu.Lock()
				acked = append(acked, j.ID)
				mu.Unlock()
			}
		}
	})

	done := func() int {
		var evs []api.Event
		c.getJSON("/v1/events?limit=1000&job=many-2", &evs)
		return len(succeededCount(evs))
	}
	// Kill twice, at different depths of the run.
	for round, depth := range []int{10, 30} {
		waitUntil(t, fmt.Sprintf("%d tasks of many-2 to succeed", depth), 60*time.Second, func() bool { return done() >= depth })
		t.Logf("killing the server after %d tasks of many-2", done())
		c.killServer()
		time.Sleep(time.Duration(300*(round+1)) * time.Millisecond) // workers finish tasks while it is away
		c.restartServer(args...)
		t.Logf("restarted")
	}
	close(stop)
	submitting.Wait()
	mu.Lock()
	ids = append(ids, acked...)
	mu.Unlock()
	if len(acked) == 0 {
		t.Error("no submission was acknowledged while the server came and went")
	}
	checkEndedOnce(t, c, ids)

	var logs api.Logs
	c.getJSON("/v1/jobs/dag/logs", &logs)
	if len(logs.Tasks) != 6 {
		t.Errorf("dag logs: %+v", logs)
	}
}

func TestKilledWorkerTasksAreRequeuedAndFinishElsewhere(t *testing.T) {
	c := start(t, "--heartbeat-timeout", "2s")
	w1 := crashWorker(c, "w1", 2)
	j := c.submit(fmt.Sprintf(`
id: orphaned
tasks:
  - name: t
    count: 2
    run: |
      [ "$ALLOT_ATTEMPT" = 1 ] && sleep 5
      %s
`, publish))
	waitUntil(t, "both tasks to run on w1", 15*time.Second, func() bool { return c.job(j.ID).Counts["running"] == 2 })
	crashWorker(c, "w2", 2)
	if err := w1.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = w1.Wait()

	checkEndedOnce(t, c, []string{j.ID})
	final := c.job(j.ID)
	for _, tk := range final.Tasks {
		if tk.Worker != "w2" || tk.Attempt != 2 || tk.Fails != 0 {
			t.Errorf("%s: worker %s attempt %d fails %d; want w2, attempt 2, no failure counted", tk.Name, tk.Worker, tk.Attempt, tk.Fails)
		}
	}
	requeued := 0
	for _, e := range c.events() {
		if e.Kind == "task_requeued" && e.Reason == "worker_lost" && e.Worker == "w1" {
			requeued++
		}
	}
	if requeued != 2 {
		t.Errorf("%d task_requeued/worker_lost events for w1, want 2", requeued)
	}
	var ws []api.Worker
	c.getJSON("/v1/workers", &ws)
	for _, w := range ws {
		if w.Name == "w1" && w.State != "lost" {
			t.Errorf("w1 is %s, want lost", w.State)
		}
	}
}

func TestFrozenWorkerIsLostAndItsStaleAttemptsStopWhenItResumes(t *testing.T) {
	c := start(t, "--heartbeat-timeout", "2s")
	w1 := crashWorker(c, "w1", 2)
	dir := t.TempDir()
	// The first attempt records its PID and would run for a minute; the
	// next one ends at once.
	j := c.submit(fmt.Sprintf(`
id: frozen
tasks:
  - name: t
    count: 2
    run: |
      if [ "$ALLOT_ATTEMPT" = 1 ]; then
        echo $$ > %s/$ALLOT_TASK.pid
        exec sleep 60
      fi
      %s
`, dir, publish))
	pids := map[string]int{}
	waitUntil(t, "both first attempts to record their PIDs", 15*time.Second, func() bool {
		for _, name := range []string{"t-0", "t-1"} {
			b, err := os.ReadFile(filepath.Join(dir, name+".pid"))
			if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
				return false
			}
			var pid int
			if _, err := fmt.Sscan(string(b), &pid); err != nil {
				return false
			}
			pids[name] = pid
		}
		return true
	})
	crashWorker(c, "w2", 2)
	if err := w1.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Past the timeout the tasks are requeued and end on w2, while w1's
	// first attempts still run.
	checkEndedOnce(t, c, []string{j.ID})
	for _, tk := range c.job(j.ID).Tasks {
		if tk.Worker != "w2" || tk.Attempt != 2 || tk.Fails != 0 {
			t.Errorf("%s: worker %s attempt %d fails %d; want w2, attempt 2, no failure counted", tk.Name, tk.Worker, tk.Attempt, tk.Fails)
		}
	}
	for name, pid := range pids {
		if !alive(pid) {
			t.Fatalf("%s's first attempt (pid %d) ended while its worker was frozen", name, pid)
		}
	}

	if err := w1.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Its next heartbeat is refused; it registers again with its stale
	// attempts, which the server stops.
	waitUntil(t, "w1's stale attempts to be stopped", 15*time.Second, func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return true
	})
	waitUntil(t, "w1 to register again", 10*time.Second, func() bool {
		var ws []api.Worker
		c.getJSON("/v1/workers", &ws)
		for _, w := range ws {
			if w.Name == "w1" {
				return w.State == "ready"
			}
		}
		return false
	})
	stopped := 0
	for _, e := range c.events() {
		if e.Kind == "worker_lost" && e.Worker == "w1" {
			stopped++
		}
	}
	if stopped != 1 {
		t.Errorf("%d worker_lost events for w1, want 1", stopped)
	}
	// The stale attempts' reports (stopped) changed nothing.
	time.Sleep(time.Second)
	checkEndedOnce(t, c, []string{j.ID})
}

// alive reports whether a process still runs (a zombie does not).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return !(i > 0 && len(b) > i+2 && b[i+2] == 'Z')
}

// A worker with many slots running very short tasks sends its reports in
// batches, and has some in flight almost all the time: a server killed
// under that load must still end every task exactly once, with the
// result it wrote, whether its report went before the kill, was in
// flight, or waited for the server to return.
func TestBatchedReportsOfShortTasksSurviveServerKills(t *testing.T) {
	shortTasksThroughServerKills(t)
}

// A worker that prefetches holds tasks the server started that wait in
// its queue for a slot: across server kills each still runs once, and
// none is handed to anyone else.
func TestPrefetchedShortTasksSurviveServerKills(t *testing.T) {
	c, maxRunning := shortTasksThroughServerKills(t, "--prefetch", "8")
	var ws []api.Worker
	c.getJSON("/v1/workers", &ws)
	if len(ws) != 1 || ws[0].Slots != 16 || ws[0].Prefetch != 8 {
		t.Errorf("workers %+v, want w1 with 16 slots and prefetch 8", ws)
	}
	if maxRunning <= 16 {
		t.Errorf("at most %d tasks ran on w1 at once; with prefetch 8, more than its 16 slots should", maxRunning)
	}
}

// shortTasksThroughServerKills returns the cluster and the most tasks the
// server counted as running on the worker at once.
func shortTasksThroughServerKills(t *testing.T, workerArgs ...string) (*cluster, int) {
	args := []string{"--heartbeat-timeout", "20s"}
	c := start(t, args...)
	crashWorker(c, "w1", 16, workerArgs...)
	const jobs, size = 4, 250
	var ids []string
	for i := range jobs {
		j := c.submit(fmt.Sprintf(`
id: short-%d
tasks:
  - name: t
    count: %d
    run: '%s'
`, i, size, publish))
		ids = append(ids, j.ID)
	}
	done := func() int {
		n := 0
		for _, id := range ids {
			for _, tk := range c.job(id).Tasks {
				if tk.State == "succeeded" {
					n++
				}
			}
		}
		return n
	}
	maxRunning := 0
	for _, depth := range []int{100, 500} {
		waitUntil(t, fmt.Sprintf("%d tasks to succeed", depth), 60*time.Second, func() bool {
			var ws []api.Worker
			c.getJSON("/v1/workers", &ws)
			for _, w := range ws {
				maxRunning = max(maxRunning, w.Running)
			}
			return done() >= depth
		})
		t.Logf("killing the server after %d tasks", done())
		c.killServer()
		time.Sleep(200 * time.Millisecond) // tasks end and their reports wait
		c.restartServer(args...)
	}
	checkEndedOnce(t, c, ids)
	return c, maxRunning
}
