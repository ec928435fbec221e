// Package e2e runs the allot binary as users do: a real server process, real
// worker processes running real tasks, over loopback HTTP. Servers run with
// authentication on, as allot server does by default: the tests read the
// admin token the server writes to its data directory, create a worker token
// with the CLI, and pass tokens to every call.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/store/postgres/pgtest"
)

var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "allot-e2e-")
	if err != nil {
		panic(err)
	}
	// Agents started as another user (nobody) must be able to run it.
	if err := os.Chmod(dir, 0o755); err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "allot")
	build := exec.Command("go", "build", "-o", bin, "../cmd/allot")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("building allot: " + err.Error())
	}
	// Tests that call net/http directly (http.Get, http.Post) act as the
	// admin of the cluster they call; the helpers below pass their tokens
	// explicitly.
	http.DefaultClient.Transport = adminTransport{}
	code := pgtest.Main(m) // the failover test's PostgreSQL, started only if a test needs it
	os.RemoveAll(dir)
	os.Exit(code)
}

// cluster is a running server with workers.
type cluster struct {
	t       *testing.T
	url     string
	dataDir string
	server  *exec.Cmd
	workers []*exec.Cmd
	// admin is the secret of the admin token the server created on its
	// first start (DATA_DIR/admin.token); workerToken, of a worker token
	// for every worker name, created with allot tokens create. Both are
	// empty when the server runs with --no-auth.
	admin       string
	workerToken string
	// stateDirs holds each worker's state directory, by name: a worker
	// started again under its name finds what its previous run left.
	stateDirs string
}

// admins maps a server's host:port to its admin secret, for adminTransport.
var admins sync.Map

// adminTransport authenticates requests that carry no Authorization header
// as the admin of the cluster they go to.
type adminTransport struct{}

func (adminTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if tok, ok := admins.Load(r.URL.Host); ok && r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+tok.(string))
	}
	return http.DefaultTransport.RoundTrip(r)
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start runs a server process on a fresh data directory.
func start(t *testing.T, args ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, dataDir: t.TempDir(), stateDirs: t.TempDir()}
	addr := freePort(t)
	c.url = "http://" + addr
	t.Cleanup(c.stop)
	c.startServer(addr, args...)
	if c.admin == "" {
		return c // --no-auth
	}
	out, err := c.cli("tokens", "create", "--role", "worker", "--worker", "*", "--name", "e2e workers", "-q")
	if err != nil {
		t.Fatalf("creating the worker token: %v\n%s", err, out)
	}
	c.workerToken = strings.TrimSpace(out)
	// Worker processes started without --token (as some tests do) use
	// the worker token from the environment.
	t.Setenv("ALLOT_TOKEN", c.workerToken)
	return c
}

func (c *cluster) startServer(addr string, args ...string) {
	c.t.Helper()
	c.server = exec.Command(bin, append([]string{"server", "--listen", addr, "--data-dir", c.dataDir}, args...)...)
	c.server.Stderr = logWriter(c.t, "server")
	if err := c.server.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.waitReady()
	if slices.Contains(args, "--no-auth") {
		return
	}
	raw, err := os.ReadFile(filepath.Join(c.dataDir, "admin.token"))
	if err != nil {
		c.t.Fatalf("the server wrote no admin token: %v", err)
	}
	c.admin = strings.TrimSpace(string(raw))
	admins.Store(strings.TrimPrefix(c.url, "http://"), c.admin)
}

func (c *cluster) waitReady() {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(c.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("server at %s not ready", c.url)
}

// worker starts an allot worker process.
func (c *cluster) worker(name string, slots int) *exec.Cmd {
	c.t.Helper()
	return c.startWorker(name, "--slots", fmt.Sprint(slots), "--cpu", "4", "--memory", "8Gi")
}

// startWorker starts an allot worker process with the cluster's worker
// token (in its environment), a state directory of its name's, and args.
// Tasks write into the test's own directories, which only root may write
// to: a worker run by root runs its tasks as root here (tenants_test.go
// tests the default, nobody).
func (c *cluster) startWorker(name string, args ...string) *exec.Cmd {
	c.t.Helper()
	args = append([]string{"worker", "--server", c.url, "--name", name, "--state-dir", filepath.Join(c.stateDirs, name)}, args...)
	if os.Geteuid() == 0 {
		args = append(args, "--run-as", "root")
	}
	// Attempt directories go in a temporary directory of the worker's own,
	// removed with the test: a worker a test kills leaves its running
	// attempts' directories behind (its next start would remove them).
	tmp := filepath.Join(c.stateDirs, name+".tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		c.t.Fatal(err)
	}
	w := exec.Command(bin, args...)
	w.Env = append(os.Environ(), "ALLOT_TOKEN="+c.workerToken, "TMPDIR="+tmp)
	w.Stderr = logWriter(c.t, name)
	if err := w.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.workers = append(c.workers, w)
	return w
}

func (c *cluster) stop() {
	// SIGTERM first, so that each worker removes the cgroups it made;
	// SIGKILL for one that does not stop soon (its server gone).
	for _, w := range c.workers {
		_ = w.Process.Signal(syscall.SIGTERM)
	}
	for _, w := range c.workers {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = w.Wait()
		}()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			_ = w.Process.Kill()
			<-done
		}
	}
	if c.server != nil && c.server.Process != nil {
		_ = c.server.Process.Kill()
		_ = c.server.Wait()
	}
}

// cli runs an allot client command against the cluster, as the admin
// unless args has a --token of its own.
func (c *cluster) cli(args ...string) (string, error) {
	args = append(args, "--server", c.url)
	if !slices.Contains(args, "--token") && c.admin != "" {
		args = append(args, "--token", c.admin)
	}
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String() + errb.String(), err
	}
	return out.String(), nil
}

// request calls the API as the admin.
func (c *cluster) request(method, path, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequest(method, c.url+path, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.admin != "" {
		req.Header.Set("Authorization", "Bearer "+c.admin)
	}
	return http.DefaultClient.Do(req)
}

func (c *cluster) submit(doc string) api.Job {
	c.t.Helper()
	resp, err := c.request("POST", "/v1/jobs", "application/yaml", strings.NewReader(doc))
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		c.t.Fatalf("submit: %d %s", resp.StatusCode, body)
	}
	var j api.Job
	if err := json.Unmarshal(body, &j); err != nil {
		c.t.Fatal(err)
	}
	return j
}

func (c *cluster) job(id string) api.Job {
	c.t.Helper()
	var j api.Job
	c.getJSON("/v1/jobs/"+id, &j)
	return j
}

func (c *cluster) getJSON(path string, out any) {
	c.t.Helper()
	resp, err := c.request("GET", path, "", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		c.t.Fatal(err)
	}
}

// waitJob polls until the job ends.
func (c *cluster) waitJob(id string, within time.Duration) api.Job {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		j := c.job(id)
		if j.State == "succeeded" || j.State == "failed" || j.State == "cancelled" {
			return j
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("job %s still %s after %s: %+v", id, j.State, within, j.Tasks)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func taskByName(j api.Job, name string) api.Task {
	for _, t := range j.Tasks {
		if t.Name == name {
			return t
		}
	}
	return api.Task{}
}

// syncBuffer is a buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type testWriter struct {
	t      *testing.T
	prefix string
}

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s: %s", w.prefix, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func logWriter(t *testing.T, prefix string) io.Writer {
	if testing.Verbose() {
		return testWriter{t, prefix}
	}
	return io.Discard
}

func TestDAGWithResultsRetriesAndFailureCascade(t *testing.T) {
	c := start(t)
	c.worker("w1", 2)
	c.worker("w2", 2)
	flaky := filepath.Join(t.TempDir(), "flaky")
	j := c.submit(fmt.Sprintf(`
id: dag
tasks:
  - name: prepare
    run: |
      echo preparing
      echo '{"rows": 42, "name": "alpha"}' > "$ALLOT_RESULT_FILE"
  - name: use
    needs: [prepare]
    command: [sh, -c, 'echo "rows=$ROWS name=$1"', x, "${tasks.prepare.result.name}"]
    env: {ROWS: "${tasks.prepare.result.rows}"}
  - name: flaky
    needs: [prepare]
    maxAttempts: 3
    run: |
      # fails on the first attempt, succeeds on the second
      if [ ! -f %[1]s ]; then touch %[1]s; echo first try fails; exit 3; fi
      echo second try works
  - name: broken
    needs: [prepare]
    maxAttempts: 2
    run: echo broken >&2; exit 7
  - name: after-broken
    needs: [broken]
    run: echo never
  - name: last
    needs: [after-broken, use]
    run: echo never either
`, flaky))
	final := c.waitJob(j.ID, 30*time.Second)
	if final.State != "failed" {
		t.Fatalf("job state %s, want failed", final.State)
	}
	want := map[string]string{"prepare": "succeeded", "use": "succeeded", "flaky": "succeeded", "broken": "failed",
		"after-broken": "failed", "last": "failed"}
	for name, state := range want {
		if got := taskByName(final, name); got.State != state {
			t.Errorf("task %s: state %s, want %s (%+v)", name, got.State, state, got.Reason)
		}
	}
	if tk := taskByName(final, "flaky"); tk.Attempt != 2 || tk.Fails != 1 {
		t.Errorf("flaky: attempt %d fails %d, want attempt 2 after 1 failure", tk.Attempt, tk.Fails)
	}
	if tk := taskByName(final, "broken"); tk.Attempt != 2 || tk.ExitCode == nil || *tk.ExitCode != 7 {
		t.Errorf("broken: attempt %d exit %v, want 2 attempts ending with exit 7", tk.Attempt, tk.ExitCode)
	}
	for _, name := range []string{"after-broken", "last"} {
		r := taskByName(final, name).Reason
		if r == nil || r.Code != "dependency_failure" {
			t.Errorf("%s reason %+v, want dependency_failure", name, r)
		}
	}
	if r := taskByName(final, "after-broken").Reason; r == nil || !strings.Contains(r.Message, `"broken"`) {
		t.Errorf("after-broken's reason does not name the parent: %+v", r)
	}
	if r := taskByName(final, "last").Reason; r == nil || !strings.Contains(r.Message, `"after-broken"`) {
		t.Errorf("last's reason does not name its failed parent: %+v", r)
	}
	var logs api.Logs
	c.getJSON("/v1/jobs/dag/logs", &logs)
	got := map[string]string{}
	for _, l := range logs.Tasks {
		got[l.Task] = l.Output
	}
	if got["use"] != "rows=42 name=alpha\n" {
		t.Errorf("use's output %q: result references not substituted", got["use"])
	}
	if !strings.Contains(got["broken"], "broken") {
		t.Errorf("broken's output tail %q lacks its stderr", got["broken"])
	}
	out, err := c.cli("logs", "dag", "flaky")
	if err != nil || !strings.Contains(out, "second try works") {
		t.Errorf("allot logs dag flaky: %v\n%s", err, out)
	}
	// The event log tells the story with reasons.
	var events []api.Event
	c.getJSON("/v1/events?job=dag", &events)
	kinds := map[string]int{}
	for _, e := range events {
		kinds[e.Kind+"/"+e.Reason]++
	}
	for _, k := range []string{"job_submitted/", "task_retry/retry", "task_failed/failed", "task_failed/dependency_failure", "job_ended/failed"} {
		if kinds[k] == 0 {
			t.Errorf("no %s event; got %v", k, kinds)
		}
	}
}

func TestCancelStopsRunningTasks(t *testing.T) {
	c := start(t)
	c.worker("w1", 2)
	marker := filepath.Join(t.TempDir(), "started")
	j := c.submit(fmt.Sprintf(`
id: long
tasks:
  - name: sleeper
    count: 2
    run: touch %s; sleep 60
  - name: later
    needs: [sleeper]
    run: echo never
`, marker))
	deadline := time.Now().Add(15 * time.Second)
	for c.job(j.ID).Counts["running"] < 2 {
		if time.Now().After(deadline) {
			t.Fatal("tasks never started")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out, err := c.cli("cancel", j.ID); err != nil {
		t.Fatalf("allot cancel: %v %s", err, out)
	}
	final := c.waitJob(j.ID, 15*time.Second)
	if final.State != "cancelled" {
		t.Fatalf("state %s, want cancelled", final.State)
	}
	for _, tk := range final.Tasks {
		if tk.State != "cancelled" {
			t.Errorf("task %s: %s, want cancelled", tk.Name, tk.State)
		}
	}
	// The worker's slots come free: a new job runs.
	j2 := c.submit("id: after\ntasks: [{name: t, run: echo ok}]\n")
	if got := c.waitJob(j2.ID, 15*time.Second); got.State != "succeeded" {
		t.Errorf("job after cancel: %s", got.State)
	}
	if _, err := c.cli("cancel", j.ID); err == nil {
		t.Errorf("cancelling an ended job succeeded; want a conflict")
	}
}

func TestSubmitWaitAndCLIOutputs(t *testing.T) {
	c := start(t)
	c.worker("w1", 1)
	file := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(file, []byte("id: hello\nshare: team-a\ntasks: [{name: greet, run: echo hello world}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := c.cli("submit", file, "--wait")
	if err != nil {
		t.Fatalf("submit --wait: %v\n%s", err, out)
	}
	if !strings.Contains(out, "greet") || !strings.Contains(out, "succeeded") {
		t.Errorf("submit --wait output:\n%s", out)
	}
	out, err = c.cli("list", "--share", "team-a", "-o", "json")
	if err != nil {
		t.Fatal(err, out)
	}
	var list api.JobList
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Jobs) != 1 || list.Jobs[0].ID != "hello" {
		t.Errorf("list -o json: %v %s", err, out)
	}
	out, err = c.cli("get", "hello", "-o", "yaml")
	if err != nil || !strings.Contains(out, "state: succeeded") {
		t.Errorf("get -o yaml: %v\n%s", err, out)
	}
	failing := filepath.Join(t.TempDir(), "bad.yaml")
	_ = os.WriteFile(failing, []byte("id: bad\ntasks: [{name: x, run: exit 1}]\n"), 0o644)
	if out, err := c.cli("submit", failing, "--wait"); err == nil {
		t.Errorf("submit --wait of a failing job exited 0:\n%s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	follow := exec.CommandContext(ctx, bin, "events", "--follow", "--server", c.url, "--token", c.admin)
	var buf syncBuffer
	follow.Stdout = &buf
	_ = follow.Start()
	c.submit("id: streamed\ntasks: [{name: t, run: 'true'}]\n")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(buf.String(), "job_ended") || !strings.Contains(buf.String(), "streamed") {
		if time.Now().After(deadline) {
			t.Fatalf("events --follow did not stream the new job's end:\n%s", buf.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	_ = follow.Wait()
}

func TestSubmitterTokenCannotSubmitToAShareItLacks(t *testing.T) {
	c := start(t)
	c.worker("w1", 1)
	out, err := c.cli("tokens", "create", "--role", "submitter", "--queue", "*", "--share", "research", "--name", "alice", "-o", "json")
	if err != nil {
		t.Fatalf("tokens create: %v\n%s", err, out)
	}
	var alice api.NewToken
	if err := json.Unmarshal([]byte(out), &alice); err != nil || alice.Secret == "" {
		t.Fatalf("tokens create -o json: %v\n%s", err, out)
	}
	dir := t.TempDir()
	ops := filepath.Join(dir, "ops.yaml")
	research := filepath.Join(dir, "research.yaml")
	_ = os.WriteFile(ops, []byte("id: sneaky\nshare: ops\ntasks: [{name: t, run: echo no}]\n"), 0o644)
	_ = os.WriteFile(research, []byte("id: fine\nshare: research\ntasks: [{name: t, run: echo yes}]\n"), 0o644)

	out, err = c.cli("submit", ops, "--token", alice.Secret)
	if err == nil || !strings.Contains(out, `share "ops" is not allowed for this token (allowed: research)`) || !strings.Contains(out, "forbidden") {
		t.Fatalf("submitting to another share: %v\n%s", err, out)
	}
	if out, err := c.cli("submit", research, "--wait", "--token", alice.Secret); err != nil {
		t.Fatalf("submitting to her own share: %v\n%s", err, out)
	}
	var list api.JobList
	c.getJSON("/v1/jobs", &list)
	if len(list.Jobs) != 1 || list.Jobs[0].ID != "fine" {
		t.Fatalf("jobs %+v, want only the allowed one", list.Jobs)
	}
	// The secret is shown once: the list has the token, never its secret.
	out, err = c.cli("tokens", "list")
	if err != nil || !strings.Contains(out, alice.ID) || strings.Contains(out, alice.Secret) {
		t.Fatalf("tokens list: %v\n%s", err, out)
	}
	if out, err := c.cli("tokens", "list", "--token", alice.Secret); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("a submitter listed tokens: %v\n%s", err, out)
	}
	if out, err := c.cli("tokens", "revoke", alice.ID); err != nil {
		t.Fatalf("tokens revoke: %v\n%s", err, out)
	}
	if out, err := c.cli("list", "--token", alice.Secret); err == nil || !strings.Contains(out, "unauthorized") {
		t.Errorf("a revoked token still lists jobs: %v\n%s", err, out)
	}
	if out, err := c.cli("list", "--token", ""); err == nil || !strings.Contains(out, "unauthorized") {
		t.Errorf("no token still lists jobs: %v\n%s", err, out)
	}
}
