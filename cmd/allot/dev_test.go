package main

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/client"
)

// runningDev is an allot dev started in the test's process.
type runningDev struct {
	url, dataDir string
	out, errs    *syncBuffer
	stop         context.CancelFunc
	done         chan error
}

// startDev starts allot dev with args on a port of its own and a data
// directory of the test's, and waits until it says where it runs.
func startDev(t *testing.T, args ...string) *runningDev {
	t.Helper()
	d := &runningDev{dataDir: filepath.Join(t.TempDir(), "data"), out: &syncBuffer{}, errs: &syncBuffer{}, done: make(chan error, 1)}
	ctx, stop := context.WithCancel(context.Background())
	d.stop = stop
	cmd := newDevCmd()
	cmd.SetOut(d.out)
	cmd.SetErr(d.errs)
	cmd.SetArgs(append([]string{"--listen", "127.0.0.1:0", "--data-dir", d.dataDir, "--workers", "1"}, args...))
	go func() { d.done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() { d.shutdown(t) })
	running := regexp.MustCompile(`Allot is running at (\S+) `)
	for d.url == "" {
		select {
		case err := <-d.done:
			d.done <- err
			t.Fatalf("allot dev stopped: %v\n%s", err, d.errs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if m := running.FindStringSubmatch(d.out.String()); m != nil {
			d.url = m[1]
		}
	}
	return d
}

// shutdown stops dev as Ctrl-C does and returns what it logged.
func (d *runningDev) shutdown(t *testing.T) string {
	t.Helper()
	d.stop()
	if err := <-d.done; err != nil {
		t.Errorf("allot dev: %v", err)
	}
	d.done <- nil // a second shutdown finds it stopped
	return d.errs.String()
}

// adminToken is the secret dev --auth wrote to its data directory.
func (d *runningDev) adminToken(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.dataDir, auth.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// Started as root, dev's local workers run tasks as nobody, as allot
// worker does: a submitter of dev --auth must not run commands as root,
// nor read the admin token in the data directory.
func TestDevRunsTasksAsNobodyWhenRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only a root agent switches users")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody on this machine")
	}
	d := startDev(t, "--auth")
	if !strings.Contains(d.out.String(), "running tasks as nobody") {
		t.Errorf("dev does not say its tasks run as nobody:\n%s", d.out.String())
	}
	admin := d.adminToken(t)
	c, err := client.New(d.url, client.WithToken(admin))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eve, err := c.CreateToken(ctx, api.CreateToken{Name: "eve", Role: string(auth.Submitter), Queues: []string{"default"}, Shares: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(d.dataDir, auth.AdminTokenFile)
	_, _ = runCLI(t, d.url, "submit", "--token", eve.Secret, "--wrap", "id -u; cat "+tokenFile, "--id", "esc", "--wait")
	out, err := runCLI(t, d.url, "logs", "esc", "--token", eve.Secret)
	if err != nil {
		t.Fatalf("logs: %v", err)
	}
	if uid := regexp.MustCompile(`(?m)^\d+$`).FindString(out); uid != nobody.Uid {
		t.Errorf("the task ran as uid %q, want nobody's (%s); output:\n%s", uid, nobody.Uid, out)
	}
	if strings.Contains(out, admin) {
		t.Errorf("the task read the admin token:\n%s", out)
	}
}

// Ctrl-C stops dev's workers while the server still answers, so that each
// tells it that it stopped, rather than warning that it could not.
func TestDevStopsItsWorkersBeforeItsServer(t *testing.T) {
	d := startDev(t, "--workers", "2")
	c, err := client.New(d.url)
	if err != nil {
		t.Fatal(err)
	}
	for ctx := context.Background(); ; {
		ws, err := c.Workers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) == 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if logged := d.shutdown(t); strings.Contains(logged, "could not tell the server") {
		t.Errorf("a worker could not deregister at Ctrl-C:\n%s", logged)
	}
}
