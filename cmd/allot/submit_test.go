package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/agent"
	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/spec"
)

// The end-to-end tests of submission without a file, resubmission,
// dependencies between jobs, requeue and the cancel of one task: the
// allot command line against a real server, with a worker agent that runs
// the tasks as processes.

// cluster is a server on a fresh data directory, with a worker of four
// slots unless none is asked for.
type cluster struct {
	url string
	c   *client.Client
	srv *runningServer
}

func startCluster(t *testing.T, workers bool) *cluster {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dir := t.TempDir()
	return startClusterIn(t, ctx, dir, workers)
}

func startClusterIn(t *testing.T, ctx context.Context, dir string, workers bool) *cluster {
	t.Helper()
	cfg := spec.ServerConfig{Scheduling: spec.Scheduling{Queues: []spec.Queue{{Name: "batch"}}}}
	cfg.Server.DataDir, cfg.Server.Listen = dir, "127.0.0.1:0"
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := startServer(ctx, cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if workers {
		a, err := agent.New(agent.Config{Server: srv.URL, Name: "w1", Logger: quiet, Slots: 4,
			Resources: spec.Resources{CPU: 4000, Memory: 4096}})
		if err != nil {
			t.Fatal(err)
		}
		actx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.Run(actx) }()
		t.Cleanup(func() { stop(); <-done })
	}
	return &cluster{url: srv.URL, c: c, srv: srv}
}

// run runs the command line and fails the test on an error.
func (k *cluster) run(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := runCLIErr(t, k.url, args...)
	if err != nil {
		t.Fatalf("allot %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// fail runs the command line and returns its error, failing the test if
// there is none.
func (k *cluster) fail(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := runCLIErr(t, k.url, args...)
	if err == nil {
		t.Fatalf("allot %s succeeded, want an error\n%s%s", strings.Join(args, " "), out, errOut)
	}
	return err.Error()
}

// job reads a job.
func (k *cluster) job(t *testing.T, id string) api.Job {
	t.Helper()
	var j api.Job
	if err := json.Unmarshal([]byte(k.run(t, "get", id, "-o", "json")), &j); err != nil {
		t.Fatal(err)
	}
	return j
}

// waitFor polls a job until ok holds.
func (k *cluster) waitFor(t *testing.T, id string, what string, ok func(api.Job) bool) api.Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		j := k.job(t, id)
		if ok(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s never %s: %+v", id, what, j)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (k *cluster) waitState(t *testing.T, id, state string) api.Job {
	t.Helper()
	return k.waitFor(t, id, state, func(j api.Job) bool { return j.State == state })
}

// submitted is the ID `allot submit` printed.
func submitted(t *testing.T, out string) string {
	t.Helper()
	f := strings.Fields(out)
	if len(f) < 2 || f[0] != "submitted" {
		t.Fatalf("submit printed %q", out)
	}
	return f[1]
}

func taskOf(j api.Job, name string) api.Task {
	for _, t := range j.Tasks {
		if t.Name == name {
			return t
		}
	}
	return api.Task{}
}

func TestSubmitWithoutAFileAndAFileAgain(t *testing.T) {
	k := startCluster(t, true)

	// --wrap: a job of one command, shaped by the flags.
	id := submitted(t, k.run(t, "submit", "--wrap", "echo hello", "--name", "greet", "--queue", "batch", "--share", "team-a",
		"--cpu", "500m", "--memory", "64Mi", "--timeout", "1m", "--id", "wrapped"))
	if id != "wrapped" {
		t.Fatalf("submitted %s, want wrapped", id)
	}
	j := k.waitState(t, id, "succeeded")
	ts := j.Spec.Tasks[0]
	if j.Share != "team-a" || ts.Name != "greet" || ts.Run != "echo hello" || ts.Resources.CPU != 500 || ts.Resources.Memory != 64 ||
		time.Duration(ts.Timeout) != time.Minute {
		t.Errorf("wrapped job %+v, task %+v", j, ts)
	}
	if logs := k.run(t, "logs", id); !strings.Contains(logs, "hello") {
		t.Errorf("logs of the wrapped job: %q", logs)
	}
	j = k.waitState(t, submitted(t, k.run(t, "submit", "--wrap", "true", "--count", "3")), "succeeded")
	if len(j.Tasks) != 3 || j.Tasks[0].Name != "main-0" {
		t.Errorf("--count 3 made tasks %+v", j.Tasks)
	}

	// A file that names its ID and a variable, submitted again under new IDs.
	file := filepath.Join(t.TempDir(), "job.yaml")
	doc := "id: fixed\nqueue: batch\ntasks:\n- name: t\n  run: echo ${{ msg }} $HOME\n"
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := k.fail(t, "submit", file); !strings.Contains(err, `line 5: ${{ msg }} is not set: give --set msg=VALUE`) {
		t.Errorf("submit without --set: %s", err)
	}
	if err := k.fail(t, "submit", file, "--set", "msg=x", "--set", "mgs=y"); !strings.Contains(err, "--set mgs: the job document has no ${{ mgs }} (it names only msg)") {
		t.Errorf("submit with an unknown variable: %s", err)
	}
	k.run(t, "submit", file, "--set", "msg=first")
	if err := k.fail(t, "submit", file, "--set", "msg=first"); !strings.Contains(err, `"fixed" is taken`) {
		t.Errorf("the same file again: %s", err)
	}
	a := submitted(t, k.run(t, "submit", file, "--set", "msg=again", "--id-prefix", "nightly"))
	b := submitted(t, k.run(t, "submit", file, "--set", "msg=again", "--id-prefix", "nightly"))
	if a == b || !strings.HasPrefix(a, "nightly-") || !strings.HasPrefix(b, "nightly-") {
		t.Errorf("--id-prefix gave %s and %s", a, b)
	}
	if j := k.waitState(t, a, "succeeded"); j.Spec.Tasks[0].Run != "echo again $HOME" {
		t.Errorf("the variable filled in: %q", j.Spec.Tasks[0].Run)
	}
	if logs := k.run(t, "logs", a); !strings.Contains(logs, "again") {
		t.Errorf("logs: %q", logs)
	}

	// - reads standard input, with the same flags.
	root := newRoot()
	root.SetIn(strings.NewReader(doc))
	var out strings.Builder
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"submit", "-", "--set", "msg=piped", "--id", "from-stdin", "--server", k.url})
	if err := root.Execute(); err != nil {
		t.Fatalf("submit -: %v\n%s", err, out.String())
	}
	k.waitState(t, "from-stdin", "succeeded")

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"submit"}, "--wrap 'COMMAND'"},
		{[]string{"submit", file, "--cpu", "2"}, "go with --wrap"},
		{[]string{"submit", "--wrap", "true", "--id", "x", "--id-prefix", "y"}, "give one"},
		{[]string{"submit", "--wrap", "true", "--cpu", "lots"}, "tasks[0].resources.cpu"},
	} {
		if err := k.fail(t, bad.args...); !strings.Contains(err, bad.want) {
			t.Errorf("allot %v: %s, want %q", bad.args, err, bad.want)
		}
	}
}

func TestDependenciesBetweenJobsThroughTheCLI(t *testing.T) {
	k := startCluster(t, true)
	k.run(t, "submit", "--wrap", "exit 3", "--id", "bad")
	k.run(t, "submit", "--wrap", "sleep 2", "--id", "slow")
	k.run(t, "submit", "--wrap", "true", "--id", "needs-bad", "--dependency", "afterok:bad")
	k.run(t, "submit", "--wrap", "true", "--id", "rescue", "--dependency", "afternotok:bad")
	k.run(t, "submit", "--wrap", "true", "--id", "after-slow", "--dependency", "afterany:slow,after:bad")

	// While slow runs, after-slow waits for it, and says so.
	if got := k.run(t, "get", "after-slow"); !strings.Contains(got, "depends on afterany:slow (waiting)") {
		t.Errorf("get of a waiting job:\n%s", got)
	}
	if got := k.run(t, "explain", "after-slow"); !strings.Contains(got, `waits for job "slow" to end (afterany)`) {
		t.Errorf("explain of a waiting job:\n%s", got)
	}

	j := k.waitState(t, "needs-bad", "failed")
	if r := j.Tasks[0].Reason; r == nil || r.Code != "dependency_failure" || !strings.Contains(r.Message, `job "bad" failed`) {
		t.Errorf("needs-bad's task ended with %+v, want dependency_failure naming job bad", r)
	}
	if got := k.run(t, "get", "needs-bad"); !strings.Contains(got, "depends on afterok:bad") || !strings.Contains(got, `job "bad" failed`) {
		t.Errorf("get of the failed dependent:\n%s", got)
	}
	k.waitState(t, "rescue", "succeeded")
	j = k.waitState(t, "after-slow", "succeeded")
	if slow := k.job(t, "slow"); j.Tasks[0].Started.Before(*slow.Ended) {
		t.Errorf("after-slow started at %v, before slow ended at %v", j.Tasks[0].Started, slow.Ended)
	}

	// A dependency on a job that ended before the submission is settled
	// from the store.
	k.waitState(t, submitted(t, k.run(t, "submit", "--wrap", "true", "--dependency", "afterok:rescue")), "succeeded")
	k.waitState(t, submitted(t, k.run(t, "submit", "--wrap", "true", "--dependency", "afterok:bad")), "failed")

	if err := k.fail(t, "submit", "--wrap", "true", "--dependency", "afterok:nope"); !strings.Contains(err, "dependsOn[0].job") || !strings.Contains(err, `no job "nope"`) {
		t.Errorf("a dependency on an unknown job: %s", err)
	}
	if err := k.fail(t, "submit", "--wrap", "true", "--dependency", "afterwards:bad"); !strings.Contains(err, "TYPE:ID") {
		t.Errorf("a bad --dependency: %s", err)
	}
}

func TestJobDependenciesSurviveAServerRestart(t *testing.T) {
	dir := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	k := startClusterIn(t, ctx, dir, false) // no worker: nothing runs
	k.run(t, "submit", "--wrap", "true", "--id", "first")
	k.run(t, "submit", "--wrap", "true", "--id", "second", "--dependency", "afterok:first")
	k.run(t, "submit", "--wrap", "true", "--id", "ended")
	k.run(t, "cancel", "ended")
	k.run(t, "submit", "--wrap", "true", "--id", "third", "--dependency", "afternotok:ended,afterok:second")
	stop()
	if err := k.srv.Wait(); err != nil {
		t.Fatal(err)
	}

	ctx, stop = context.WithCancel(context.Background())
	defer stop()
	k = startClusterIn(t, ctx, dir, false)
	if got := k.run(t, "get", "third"); !strings.Contains(got, "depends on afternotok:ended (met), afterok:second (waiting)") {
		t.Errorf("after the restart:\n%s", got)
	}
	k.run(t, "cancel", "first")
	for _, id := range []string{"second", "third"} {
		j := k.waitState(t, id, "failed")
		if r := j.Tasks[0].Reason; r == nil || r.Code != "dependency_failure" {
			t.Errorf("%s ended with %+v", id, r)
		}
	}
}

func TestRequeueAndCancelOneTaskThroughTheCLI(t *testing.T) {
	k := startCluster(t, true)
	marker := filepath.Join(t.TempDir(), "ok")
	file := filepath.Join(t.TempDir(), "flaky.yaml")
	doc := "tasks:\n- name: flaky\n  run: test -f ${{ marker }} || { touch ${{ marker }}; exit 1; }\n- name: after\n  needs: [flaky]\n  run: 'true'\n"
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	id := submitted(t, k.run(t, "submit", file, "--set", "marker="+marker))
	j := k.waitState(t, id, "failed")
	if got := taskOf(j, "after").State; got != "failed" {
		t.Fatalf("after is %s, want failed by the cascade", got)
	}
	if err := k.fail(t, "requeue", id+"/nope"); !strings.Contains(err, `no task "nope"`) {
		t.Errorf("requeue of an unknown task: %s", err)
	}
	if out := k.run(t, "requeue", id+"/flaky"); !strings.Contains(out, "requeued "+id) {
		t.Errorf("requeue printed %q", out)
	}
	j = k.waitState(t, id, "succeeded")
	if f := taskOf(j, "flaky"); f.Attempt != 2 {
		t.Errorf("flaky ran %d attempts, want 2", f.Attempt)
	}
	if err := k.fail(t, "requeue", id); !strings.Contains(err, "nothing to requeue") {
		t.Errorf("requeue of a job that succeeded: %s", err)
	}
	if err := k.fail(t, "requeue", id+"/flaky"); !strings.Contains(err, "only a running, failed or cancelled task runs again") {
		t.Errorf("requeue of a task that succeeded: %s", err)
	}

	// A running task is stopped and runs again; one task is cancelled with
	// what needs it, and the rest of the job goes on.
	long := filepath.Join(t.TempDir(), "long.yaml")
	doc = "tasks:\n- {name: x, run: sleep 30}\n- {name: y, run: sleep 1}\n- {name: z, needs: [x], run: 'true'}\n"
	if err := os.WriteFile(long, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	id = submitted(t, k.run(t, "submit", long))
	k.waitFor(t, id, "runs x", func(j api.Job) bool { return taskOf(j, "x").State == "running" })
	k.run(t, "requeue", id+"/x")
	k.waitFor(t, id, "runs x again", func(j api.Job) bool {
		x := taskOf(j, "x")
		return x.State == "running" && x.Attempt == 2
	})
	if out := k.run(t, "cancel", id+"/x"); !strings.Contains(out, "cancelled "+id+"/x") {
		t.Errorf("cancel printed %q", out)
	}
	j = k.waitState(t, id, "cancelled")
	for name, want := range map[string]string{"x": "cancelled", "y": "succeeded", "z": "cancelled"} {
		if got := taskOf(j, name).State; got != want {
			t.Errorf("task %s is %s, want %s", name, got, want)
		}
	}
	// The cancelled job runs again: x and z, y kept.
	k.run(t, "requeue", id)
	j = k.waitFor(t, id, "runs x a third time", func(j api.Job) bool {
		x := taskOf(j, "x")
		return x.State == "running" && x.Attempt == 3
	})
	if taskOf(j, "y").State != "succeeded" || taskOf(j, "z").State != "blocked" {
		t.Errorf("after the requeue of the job: %+v", j.Tasks)
	}
	k.run(t, "cancel", id)
	k.waitState(t, id, "cancelled")
	if err := k.fail(t, "cancel", id+"/y"); !strings.Contains(err, "already ended") {
		t.Errorf("cancel of a task of an ended job: %s", err)
	}
}

func TestSubmitSetFillsEveryDocumentOfABulkFile(t *testing.T) {
	k := startCluster(t, false)
	file := filepath.Join(t.TempDir(), "jobs.yaml")
	doc := "id: a-${{ day }}\ntasks: [{name: t, run: 'true'}]\n---\nid: b-${{ day }}\ntasks: [{name: t, run: echo ${{ other }}}]\n"
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := k.fail(t, "submit", file, "--set", "day=1"); !strings.Contains(err, file+":5: ${{ other }} is not set") {
		t.Errorf("a variable unset in the second document: %s", err)
	}
	out := k.run(t, "submit", file, "--set", "day=1", "--set", "other=x", "--share", "s1")
	if !strings.Contains(out, "created a-1") || !strings.Contains(out, "created b-1") {
		t.Errorf("bulk submit printed %q", out)
	}
	if j := k.job(t, "b-1"); j.Share != "s1" || j.Spec.Tasks[0].Run != "echo x" {
		t.Errorf("b-1: share %q, run %q", j.Share, j.Spec.Tasks[0].Run)
	}
	if err := k.fail(t, "submit", file, "--set", "day=2", "--set", "other=x", "--id", "one"); !strings.Contains(err, "use --id-prefix") {
		t.Errorf("--id with two documents: %s", err)
	}
}
