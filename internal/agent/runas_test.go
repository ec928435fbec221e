//go:build unix

package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/api"
)

// fakeUsers is a user database for the policy's decisions.
var fakeUsers = map[string]*taskUser{
	"root":    {Name: "root", UID: 0, GID: 0, Home: "/root"},
	"nobody":  {Name: "nobody", UID: 65534, GID: 65534, Home: "/nonexistent"},
	"svc-etl": {Name: "svc-etl", UID: 1500, GID: 1500, Groups: []uint32{1500, 44}, Home: "/home/svc-etl"},
	"alice":   {Name: "alice", UID: 1000, GID: 1000, Home: "/home/alice"},
}

func fakeLookup(name string) (*taskUser, error) {
	if u, ok := fakeUsers[name]; ok {
		return u, nil
	}
	return nil, fmt.Errorf("no user %q on this machine", name)
}

func TestTheUserATaskRunsAs(t *testing.T) {
	tests := []struct {
		name   string
		euid   int
		runAs  string
		allow  []string
		job    string // the job's user field
		want   string // the user it runs as; "" = the agent's own
		errHas string
	}{
		{name: "a root agent runs a job without a user as its run-as user", euid: 0, runAs: "nobody", want: "nobody"},
		{name: "a root agent told to run as root does", euid: 0, runAs: "root", want: "root"},
		{name: "a job's user that a pattern allows", euid: 0, runAs: "nobody", allow: []string{"svc-*"}, job: "svc-etl", want: "svc-etl"},
		{name: "a job's user that no pattern allows fails", euid: 0, runAs: "nobody", allow: []string{"svc-*"}, job: "alice",
			errHas: `user "alice" is not allowed on this worker (allowed: svc-*)`},
		{name: "a job's user on a worker that allows none fails", euid: 0, runAs: "nobody", job: "svc-etl",
			errHas: `user "svc-etl" is not allowed on this worker (allowed: none)`},
		{name: "root is not allowed by a wildcard", euid: 0, runAs: "nobody", allow: []string{"*"}, job: "root",
			errHas: `user "root" is not allowed`},
		{name: "root is allowed when named", euid: 0, runAs: "nobody", allow: []string{"root"}, job: "root", want: "root"},
		{name: "an allowed user the machine does not have fails", euid: 0, runAs: "nobody", allow: []string{"*"}, job: "bob",
			errHas: `no user "bob"`},
		{name: "an agent that is not root runs tasks as itself", euid: 1000, want: ""},
		{name: "an agent that is not root runs a job naming its own user", euid: 1000, job: "alice", want: ""},
		{name: "an agent that is not root cannot switch to another user", euid: 1000, allow: []string{"*"}, job: "svc-etl",
			errHas: `this worker runs as "alice" (uid 1000), not as root, and cannot run tasks as "svc-etl"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &userPolicy{euid: tt.euid, self: "alice", runAs: tt.runAs, allow: tt.allow, lookup: fakeLookup}
			if tt.euid == 0 {
				p.self = "root"
			}
			u, err := p.userFor(api.Assignment{User: tt.job})
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if u != nil {
				got = u.Name
			}
			if got != tt.want {
				t.Errorf("runs as %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRunAsAndAllowUserAreCheckedAtStart(t *testing.T) {
	for _, tt := range []struct {
		name   string
		euid   int
		runAs  string
		allow  []string
		errHas string
	}{
		{"an unknown run-as user", 0, "bob", nil, `run-as: no user "bob"`},
		{"a bad pattern", 0, "nobody", []string{"svc-["}, `allow-user: "svc-[": syntax error in pattern`},
		{"run-as another user without root", 1000, "nobody", nil, `run-as: the agent runs as "alice" (uid 1000); only root can run tasks as another user`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newUserPolicyWith(tt.euid, "alice", tt.runAs, tt.allow, fakeLookup)
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("err = %v, want one containing %q", err, tt.errHas)
			}
		})
	}
}

// requireRoot skips a test that switches users when the tests do not run
// as root (as they do in CI).
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running tasks as another user needs root: this run-as test is skipped")
	}
}

func TestARootAgentRunsTasksAsItsRunAsUserWhoseDirectoryAndResultFileWork(t *testing.T) {
	requireRoot(t)
	fs, url := newFakeServer(t)
	cfg := testConfig(url)
	cfg.RunAs = "nobody"
	cfg.AllowUsers = []string{"daemon"}
	start(t, cfg)
	script := `id -u; id -g; echo "$HOME|$USER"; echo data > file-in-the-working-dir && cat file-in-the-working-dir; echo '{"ok": true}' > "$ALLOT_RESULT_FILE"`
	plain := assign("j", "plain", 1, script, nil)
	named := assign("j", "named", 1, script, nil)
	named.User = "daemon"
	refused := assign("j", "refused", 1, script, nil)
	refused.User = "bin"
	fs.give(api.Lease{Assignments: []api.Assignment{plain, named, refused}})
	waitFor(t, "three reports", func() bool {
		_, a := fs.report(plain.Attempt)
		_, b := fs.report(named.Attempt)
		_, c := fs.report(refused.Attempt)
		return a && b && c
	})
	for _, tc := range []struct {
		as   api.Assignment
		user string
	}{{plain, "nobody"}, {named, "daemon"}} {
		rep, _ := fs.report(tc.as.Attempt)
		u := mustLookup(t, tc.user)
		want := fmt.Sprintf("%d\n%d\n%s|%s\ndata\n", u.UID, u.GID, u.Home, u.Name)
		if rep.ExitCode != 0 || rep.Output != want || string(rep.Result) != `{"ok":true}` {
			t.Errorf("%s: exit %d, output %q, result %s (error %q); want it run as %s: %q with its result",
				tc.as.Task, rep.ExitCode, rep.Output, rep.Result, rep.Error, tc.user, want)
		}
	}
	rep, _ := fs.report(refused.Attempt)
	if rep.ExitCode != -1 || !strings.Contains(rep.Error, `user "bin" is not allowed on this worker (allowed: daemon)`) || rep.Output != "" {
		t.Errorf("a job naming a user the worker does not allow: %+v, want it failed unrun with a reason", rep)
	}
}

// A task running as another user cannot make the agent read a file it
// could not read itself through its result file.
func TestAResultFileThatIsALinkOrAPipeIsRefused(t *testing.T) {
	requireRoot(t)
	secret := filepath.Join(t.TempDir(), "root-only.json")
	if err := os.WriteFile(secret, []byte(`{"secret": "of root"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := newUserPolicy("nobody", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := testRunner(DefaultOutputTailBytes)
	r.users = p
	for name, run := range map[string]string{
		"a symbolic link": `ln -s ` + secret + ` "$ALLOT_RESULT_FILE"`,
		"a named pipe":    `mkfifo "$ALLOT_RESULT_FILE"`,
	} {
		t.Run(name, func(t *testing.T) {
			rep := runNow(r, newAttempt(api.Assignment{Attempt: api.Attempt{Job: "j", Task: "t", Attempt: 1}, Run: run}))
			if len(rep.Result) != 0 || !strings.Contains(rep.Error, "invalid result") {
				t.Errorf("result %s, error %q; want no result and an invalid result error", rep.Result, rep.Error)
			}
		})
	}
}

// A task owns its attempt's directory, so it may rename it and leave a
// link in its place; the agent must still read the result from the
// directory it made, not from wherever the link leads.
func TestAResultDirectorySwappedForALinkIsNotFollowed(t *testing.T) {
	requireRoot(t)
	secretDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(secretDir, "result.json"), []byte(`{"secret": "of root"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// A parent every user may write in, without the sticky bit (whose
	// link protection some kernels turn off): the task can rename its
	// directory there.
	parent, err := os.MkdirTemp("", "allot-swap-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", parent)
	p, err := newUserPolicy("nobody", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := testRunner(DefaultOutputTailBytes)
	r.users = p
	run := `d=$(dirname "$ALLOT_RESULT_FILE"); echo '{"own": true}' > "$ALLOT_RESULT_FILE"; mv "$d" "$d.moved" && ln -s ` + secretDir + ` "$d"`
	rep := runNow(r, newAttempt(api.Assignment{Attempt: api.Attempt{Job: "j", Task: "t", Attempt: 1}, Run: run}))
	if strings.Contains(string(rep.Result), "secret") {
		t.Errorf("result %s: the agent followed the link that replaced the attempt's directory", rep.Result)
	}
	if string(rep.Result) != `{"own":true}` {
		t.Errorf("result %s (error %q), want the task's own result from the directory it was given", rep.Result, rep.Error)
	}
}

func mustLookup(t *testing.T, name string) *taskUser {
	t.Helper()
	u, err := lookupUser(name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Where the kernel lets any user hard-link a file it cannot read
// (fs.protected_hardlinks = 0), a task could leave a hard link to a
// root-only file as its result: a result file that is not its user's own is
// refused.
func TestAResultFileNotOwnedByTheTasksUserIsRefused(t *testing.T) {
	requireRoot(t)
	d := t.TempDir()
	secret := filepath.Join(t.TempDir(), "root-only.json")
	if err := os.WriteFile(secret, []byte(`{"secret": "of root"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(d, "result.json")); err != nil {
		t.Skipf("cannot hard-link here: %v", err)
	}
	dir, err := os.OpenRoot(d)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	nobody, err := lookupUser("nobody")
	if err != nil {
		t.Fatal(err)
	}
	got, err := readResult(dir, "result.json", nobody)
	if len(got) != 0 || err == nil || !strings.Contains(err.Error(), "invalid result") {
		t.Errorf("readResult = %s, %v; want the root-owned file refused", got, err)
	}
	if got, err := readResult(dir, "result.json", nil); err != nil || len(got) == 0 {
		t.Errorf("readResult as the agent's own user = %s, %v; want the result", got, err)
	}
}
