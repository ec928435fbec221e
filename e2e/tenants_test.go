package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// What a task can reach: the tests below run a real server and real
// worker agents, and tasks that try to get at the worker's secrets and
// to report for another tenant's attempt.

// submitterToken creates a submitter token for one share and returns its
// secret.
func (c *cluster) submitterToken(share string) string {
	c.t.Helper()
	out, err := c.cli("tokens", "create", "--role", "submitter", "--queue", "*", "--share", share, "--name", share, "-o", "json")
	if err != nil {
		c.t.Fatalf("tokens create: %v\n%s", err, out)
	}
	var nt api.NewToken
	if err := json.Unmarshal([]byte(out), &nt); err != nil || nt.Secret == "" {
		c.t.Fatalf("tokens create -o json: %v\n%s", err, out)
	}
	return nt.Secret
}

// submitAs submits a job with a submitter's token.
func (c *cluster) submitAs(token, doc string) api.Job {
	c.t.Helper()
	req, _ := http.NewRequest("POST", c.url+"/v1/jobs", strings.NewReader(doc))
	req.Header.Set("Content-Type", "application/yaml")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var j api.Job
	if resp.StatusCode != http.StatusCreated {
		var eb api.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&eb)
		c.t.Fatalf("submit: %d %+v", resp.StatusCode, eb)
	}
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil {
		c.t.Fatal(err)
	}
	return j
}

// postReports posts reports for a worker with a token and returns the
// answer's status.
func (c *cluster) postReports(token, worker string, reports ...api.Report) int {
	c.t.Helper()
	body, _ := json.Marshal(api.Reports{Reports: reports})
	req, _ := http.NewRequest("POST", c.url+"/v1/workers/"+worker+"/reports", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitRunning waits until a task of a job runs and returns it.
func (c *cluster) waitRunning(job, task string) api.Task {
	c.t.Helper()
	var tk api.Task
	waitUntil(c.t, job+"/"+task+" to run", 30*time.Second, func() bool {
		tk = taskByName(c.job(job), task)
		return tk.State == "running"
	})
	return tk
}

// sharedDir is a directory every user may reach and write to (tasks may
// run as nobody, and the test's own directories are private).
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "allot-e2e-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// privateFile writes a 0600 file in a directory of its own, both owned by
// uid when it is not -1 (then in a directory every user may reach).
func privateFile(t *testing.T, content string, uid int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "secret")
	if uid >= 0 {
		dir = filepath.Join(sharedDir(t), "secret")
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "token")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if uid >= 0 {
		for _, p := range []string{dir, path} {
			if err := os.Chown(p, uid, -1); err != nil {
				t.Fatal(err)
			}
		}
	}
	return path
}

// attackerScript is a task that looks for secrets everywhere it can: the
// environment, command line, open files and memory of its agent ($PPID),
// every process's environment and command line, ps, its own environment
// and files, and files it can read; then it posts a forged success report
// for the victim's attempt with whatever token it found. It prints what
// it saw. The token prefix is built at run time so that the script's own
// text (in ps) does not hold it.
const attackerScript = `
P=$PPID
h() { echo "== $*"; }
pfx="allo"; pfx="${pfx}t_"
echo "uid $(id -u), agent pid $P"
for f in environ cmdline; do
  h /proc/$P/$f; tr '\0' ' ' < /proc/$P/$f 2>&1; echo
done
h /proc/$P/fd; ls -l /proc/$P/fd/ 2>&1
for f in /proc/$P/fd/*; do echo "-- $f"; timeout 1 head -c 4096 "$f" 2>&1; echo; done
h /proc/$P/mem; head -c 64 /proc/$P/mem 2>&1 >/dev/null
h /proc/$P/maps; head -3 /proc/$P/maps 2>&1
h ps; ps -eo user,pid,args 2>&1
h own environment; env
h own files; ls -l /proc/$$/fd/
h search
found=$( { cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n'
           timeout 20 grep -r -a -h -s "$pfx" /tmp "$HOME" "$PWD" 2>/dev/null; } |
         grep -a -o -E "$pfx[A-Za-z0-9_-]{43}" | sort -u)
echo "found: [$found]"
server=$(tr '\0' '\n' < /proc/$P/cmdline | grep -A1 -x -- --server | tail -1)
echo "server: $server"
forge() {
  curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    -d '{"reports":[{"job":"victim","task":"produce","attempt":1,"exitCode":0,"result":{"value":"forged"}}]}' \
    "$server/v1/workers/w1/reports"
}
for tok in $found; do echo "forged report with a token found: HTTP $(forge "$tok")"; done
echo "forged report without a token: HTTP $(forge "")"
exit 0
`

func TestATaskReachesNoSecretOfItsWorkerAndCannotForgeAnotherTenantsResult(t *testing.T) {
	root := os.Geteuid() == 0
	if !root {
		t.Log("not root: the agent and its tasks run as the same user, so the run-as part of this test is skipped")
	}
	c := start(t, "--heartbeat-timeout", "30s")
	tokenA, tokenB := c.submitterToken("tenant-a"), c.submitterToken("tenant-b")
	gate := sharedDir(t)

	// The worker gets its token every way an operator might give it, the
	// discouraged ones included: on the command line, in the environment,
	// and as a descriptor left open by whatever started it. It runs
	// tasks as nobody when it is root (the default).
	tokenFile := privateFile(t, c.workerToken, -1)
	leaked, err := os.Open(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	defer leaked.Close()
	w := exec.Command(bin, "worker", "--server", c.url, "--token", c.workerToken, "--name", "w1", "--slots", "2",
		"--cpu", "4", "--memory", "8Gi", "--state-dir", filepath.Join(t.TempDir(), "w1"))
	w.Env = append(os.Environ(), "ALLOT_TOKEN="+c.workerToken)
	w.ExtraFiles = []*os.File{leaked}
	w.Stderr = logWriter(t, "w1")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	c.workers = append(c.workers, w)

	victim := c.submitAs(tokenA, fmt.Sprintf(`
id: victim
share: tenant-a
tasks:
  - name: produce
    run: |
      for i in $(seq 600); do [ -e %s/release ] && break; sleep 0.1; done
      echo '{"value": "genuine"}' > "$ALLOT_RESULT_FILE"
  - name: consume
    needs: [produce]
    run: |
      echo '{"value": "${tasks.produce.result.value}"}' > "$ALLOT_RESULT_FILE"
`, gate))
	produce := c.waitRunning(victim.ID, "produce")

	attacker := c.submitAs(tokenB, "id: attacker\nshare: tenant-b\ntasks:\n  - name: look\n    run: |\n"+indent(attackerScript, "      "))
	final := c.waitJob(attacker.ID, 60*time.Second)
	var logs api.Logs
	c.getJSON("/v1/jobs/"+attacker.ID+"/logs", &logs)
	if final.State != "succeeded" || len(logs.Tasks) != 1 {
		t.Fatalf("the attacker task %s: %+v %+v", final.State, final.Tasks, logs)
	}
	seen := logs.Tasks[0].Output
	t.Logf("what the attacker task saw:\n%s", seen)

	// Nothing secret in anything it read.
	for what, secret := range map[string]string{"the worker token": c.workerToken, "the admin token": c.admin,
		"tenant A's token": tokenA, "tenant B's token": tokenB} {
		if strings.Contains(seen, secret) {
			t.Errorf("the attacker task found %s", what)
		}
	}
	// Whatever token-shaped string it found elsewhere on the machine (a
	// client's --token of another process) is not this cluster's, and
	// its forged reports are refused.
	if _, err := exec.LookPath("curl"); err != nil {
		t.Log("no curl here: the attacker task could not post its forged report (the test posts its own below)")
	} else {
		if !strings.Contains(seen, "forged report without a token: HTTP 401") {
			t.Error("the attacker's forged report without a token was not refused as unauthenticated")
		}
		for _, m := range regexp.MustCompile(`token found: HTTP (\d+)`).FindAllStringSubmatch(seen, -1) {
			if m[1] != "401" && m[1] != "403" {
				t.Errorf("a forged report with a token the attacker found was answered %s", m[1])
			}
		}
	}
	// The agent's environment, descriptors and memory are closed to it.
	pid := workerPID(w)
	for _, f := range []string{"environ", "fd", "mem"} {
		header := fmt.Sprintf("== /proc/%d/%s", pid, f)
		if got := section(seen, header+"\n", "\n=="); !strings.Contains(got, "Permission denied") {
			t.Errorf("reading the agent's %s was not refused: %q", f, got)
		}
	}
	if root && !strings.Contains(seen, "uid 65534,") {
		t.Errorf("the task of a root agent did not run as nobody")
	}
	// Its own descriptors are stdin, stdout and stderr only.
	if own := section(seen, "== own files", "== search"); strings.Count(own, " -> ") != 3 {
		t.Errorf("the task holds descriptors beyond 0, 1 and 2:\n%s", own)
	}

	// Even with the worker token itself (stolen some other way), a report
	// for tenant A's attempt without its secret is refused.
	at := api.Attempt{Job: victim.ID, Task: "produce", Attempt: produce.Attempt}
	for _, secret := range []string{"", "guessed-secret"} {
		forged := api.Report{Attempt: at, Secret: secret, Result: json.RawMessage(`{"value":"forged"}`)}
		if status := c.postReports(c.workerToken, "w1", forged); status != http.StatusForbidden {
			t.Errorf("forged report with the worker token and secret %q: HTTP %d, want 403", secret, status)
		}
	}
	if tk := taskByName(c.job(victim.ID), "produce"); tk.State != "running" || len(tk.Result) != 0 {
		t.Fatalf("after the forged reports produce is %s with result %s; want still running, no result", tk.State, tk.Result)
	}
	refused := 0
	for _, e := range c.events() {
		if e.Kind == "report_refused" && e.Job == victim.ID && e.Task == "produce" {
			refused++
		}
	}
	if refused < 2 {
		t.Errorf("%d report_refused events for produce, want at least 2", refused)
	}

	// Tenant A's pipeline goes on with its genuine result.
	if err := os.WriteFile(filepath.Join(gate, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	done := c.waitJob(victim.ID, 60*time.Second)
	for _, name := range []string{"produce", "consume"} {
		if tk := taskByName(done, name); tk.State != "succeeded" || compact(tk.Result) != `{"value":"genuine"}` {
			t.Errorf("%s: %s with result %s, want succeeded with the genuine result", name, tk.State, tk.Result)
		}
	}
}

// An agent that is not root runs its tasks as its own user: then the task
// could read the agent's environment and memory through /proc, were the
// agent not marked non-dumpable.
func TestATaskOfTheAgentsOwnUserCannotReadTheAgent(t *testing.T) {
	c := start(t)
	var cred *syscall.Credential
	stateDir := filepath.Join(t.TempDir(), "state")
	uid := -1
	if os.Geteuid() == 0 {
		// Run the agent itself as nobody.
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Skipf("no user nobody to run the agent as: %v", err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		stateDir = filepath.Join(sharedDir(t), "state")
	}
	tokenFile := privateFile(t, c.workerToken+"\n", uid)
	w := exec.Command(bin, "worker", "--server", c.url, "--token-file", tokenFile, "--name", "w1", "--slots", "1",
		"--cpu", "1", "--memory", "1Gi", "--state-dir", stateDir)
	w.Env = append(os.Environ(), "ALLOT_TOKEN="+c.workerToken)
	w.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	w.Stderr = logWriter(t, "w1")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	c.workers = append(c.workers, w)

	j := c.submit(`
id: same-user
tasks:
  - name: look
    run: |
      for f in environ mem; do head -c 4096 /proc/$PPID/$f > /dev/null 2>&1 && echo "read the agent's $f"; done
      tr '\0' ' ' < /proc/$PPID/cmdline
      exit 0
`)
	c.waitJob(j.ID, 30*time.Second)
	var logs api.Logs
	c.getJSON("/v1/jobs/"+j.ID+"/logs", &logs)
	if len(logs.Tasks) != 1 {
		t.Fatalf("logs %+v", logs)
	}
	out := logs.Tasks[0].Output
	if strings.Contains(out, "read the agent's") {
		t.Errorf("a task of the agent's own user read its /proc files:\n%s", out)
	}
	if strings.Contains(out, c.workerToken) {
		t.Errorf("the task found the worker token:\n%s", out)
	}
	if !strings.Contains(out, "--token-file") {
		t.Errorf("the task did not see the agent's command line (the test looks at the wrong process):\n%s", out)
	}
}

func TestTheAgentKeepsItsTokenOutOfItsEnvironmentAndCommandLine(t *testing.T) {
	c := start(t)
	for i, tc := range []struct {
		name    string
		args    func() []string
		env     bool
		warning string
	}{
		{name: "from the environment", env: true},
		{name: "from --token, with a warning", args: func() []string { return []string{"--token", c.workerToken} },
			warning: "--token puts the worker token on the command line"},
		{name: "from --token-file", args: func() []string { return []string{"--token-file", privateFile(t, c.workerToken, -1)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("tok-%d", i)
			args := []string{"worker", "--server", c.url, "--name", name, "--cpu", "1", "--memory", "1Gi", "--state-dir", filepath.Join(t.TempDir(), "s")}
			if tc.args != nil {
				args = append(args, tc.args()...)
			}
			w := exec.Command(bin, args...)
			w.Env = slicesWithout(os.Environ(), "ALLOT_TOKEN=")
			if tc.env {
				w.Env = append(w.Env, "ALLOT_TOKEN="+c.workerToken)
			}
			var stderr syncBuffer
			w.Stderr = &stderr
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				_ = w.Process.Kill()
				_ = w.Wait()
			}()
			waitUntil(t, name+" to register", 15*time.Second, func() bool {
				var ws []api.Worker
				c.getJSON("/v1/workers", &ws)
				for _, x := range ws {
					if x.Name == name {
						return true
					}
				}
				return false
			})
			for _, f := range []string{"environ", "cmdline"} {
				b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", w.Process.Pid, f))
				if err != nil {
					t.Fatalf("reading the agent's %s: %v", f, err)
				}
				if bytes.Contains(b, []byte(c.workerToken)) {
					t.Errorf("the token is in /proc/%d/%s: %q", w.Process.Pid, f, bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
				}
			}
			if tc.warning != "" && !strings.Contains(stderr.String(), tc.warning) {
				t.Errorf("no warning %q; stderr:\n%s", tc.warning, stderr.String())
			}
		})
	}
	t.Run("a token file others may read is refused", func(t *testing.T) {
		path := privateFile(t, c.workerToken, -1)
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		w := exec.Command(bin, "worker", "--server", c.url, "--name", "lax", "--token-file", path, "--state-dir", filepath.Join(t.TempDir(), "s"))
		w.Env = slicesWithout(os.Environ(), "ALLOT_TOKEN=")
		out, err := w.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--token-file "+path+": mode 0644 lets group or others read it") {
			t.Errorf("err %v, output:\n%s", err, out)
		}
	})
}

// TestTasksDieWithAKilledWorkerAndItsRestartKillsWhatTheyLeft: a worker
// killed with SIGKILL takes its tasks along; what they started in the
// background is killed when the worker starts again, before it registers,
// so the retries never run beside them.
func TestTasksDieWithAKilledWorkerAndItsRestartKillsWhatTheyLeft(t *testing.T) {
	c := start(t, "--heartbeat-timeout", "30s")
	marks := sharedDir(t)
	w1 := crashWorker(c, "w1", 2)
	j := c.submit(fmt.Sprintf(`
id: orphans
tasks:
  - name: direct
    run: |
      [ "$ALLOT_ATTEMPT" = 1 ] || exit 0
      echo $$ > %[1]s/direct.pid
      exec sleep 300
  - name: background
    run: |
      [ "$ALLOT_ATTEMPT" = 1 ] || exit 0
      sleep 300 &
      echo $! > %[1]s/background.pid
      wait
`, marks))
	pids := map[string]int{}
	t.Cleanup(func() { // a failing run must not leave them behind
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	waitUntil(t, "both tasks to record their PIDs", 30*time.Second, func() bool {
		for _, name := range []string{"direct", "background"} {
			b, err := os.ReadFile(filepath.Join(marks, name+".pid"))
			if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
				return false
			}
			pids[name], _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return true
	})
	if err := w1.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = w1.Wait()
	waitUntil(t, "the task's own process to die with its agent", 5*time.Second, func() bool { return !alive(pids["direct"]) })
	if !alive(pids["background"]) {
		t.Fatal("the background process died at once; this test no longer tests the restart's cleanup")
	}

	// The same name, so the same state directory. Its registration
	// requeues both attempts (it no longer runs them), and the retries run
	// once it has registered: by then the leftover must be gone.
	crashWorker(c, "w1", 2)
	final := c.waitJob(j.ID, 30*time.Second)
	if final.State != "succeeded" {
		t.Errorf("job %s: %+v", final.State, final.Tasks)
	}
	for _, tk := range final.Tasks {
		if tk.Attempt != 2 {
			t.Errorf("%s ended at attempt %d, want its retry (2)", tk.Name, tk.Attempt)
		}
	}
	if alive(pids["background"]) {
		t.Errorf("the background process the first run left (pid %d) still runs beside the retry", pids["background"])
	}
}

// workerPID is the agent's PID: the process the test started (the agent
// replaces itself in place to shed its token, keeping its PID).
func workerPID(w *exec.Cmd) int { return w.Process.Pid }

// compact is a JSON document without spaces.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// section returns the part of s between two markers.
func section(s, from, to string) string {
	_, after, _ := strings.Cut(s, from)
	before, _, _ := strings.Cut(after, to)
	return before
}

// slicesWithout drops the entries of env that start with prefix.
func slicesWithout(env []string, prefix string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, prefix) {
			out = append(out, kv)
		}
	}
	return out
}
