// Package pgtest starts a throwaway PostgreSQL server for tests: initdb in
// a temporary directory, pg_ctl on a free loopback port, its unix socket
// in the same directory, fsync and synchronous_commit on as in production
// (the durability tests rely on them). It finds PostgreSQL's binaries on
// PATH or under /usr/lib/postgresql/*/bin. PostgreSQL refuses to run as
// root: as root, the server runs as the unprivileged "postgres" user (made
// by the package) or, without it, "nobody", and the directory is theirs.
//
// A test binary starts one server, at the first test that needs it
// (Need), and its TestMain stops it (Main); each test takes a fresh, empty
// schema of it (URL). Where
// PostgreSQL is not installed the tests skip with a loud message, except
// under CI=true, where a missing PostgreSQL fails the run: scripts/test
// installs it.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a running throwaway PostgreSQL server.
type Cluster struct {
	// URL connects to its database "postgres" as the superuser "allot",
	// over TCP on loopback (trust authentication).
	URL string
	// Port is its loopback TCP port; Socket the directory of its unix
	// socket.
	Port   int
	Socket string

	bin  string // directory of initdb, pg_ctl and postgres
	dir  string // temporary directory: data/, the socket, the log
	cred *syscall.Credential
	n    atomic.Int64 // schemas handed out
}

// ErrNotInstalled means no PostgreSQL binaries were found.
var ErrNotInstalled = errors.New("PostgreSQL is not installed (no initdb and pg_ctl on PATH or under /usr/lib/postgresql/*/bin)")

// findBin returns the directory that holds initdb and pg_ctl: PATH first,
// then the newest /usr/lib/postgresql/VERSION/bin.
func findBin() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", ErrNotInstalled
}

// runAs is the unprivileged user the server runs as when this process is
// root, nil otherwise.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root, and there is no postgres or nobody user to run PostgreSQL as")
}

// Start initialises and starts a server in a new temporary directory.
func Start() (*Cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	reapOrphans(bin, cred)
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, dir: dir, cred: cred, Socket: dir}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	// --no-sync only skips initdb's own flush of the new cluster: the
	// server itself runs with fsync on.
	if out, err := c.run("initdb", "-D", c.data(), "-U", "allot", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c.Port = port
	c.URL = fmt.Sprintf("postgres://allot@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := c.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

// dirPrefix starts the names of the clusters' temporary directories;
// ownerFile, in each, holds the PID of the test process that started it.
const (
	dirPrefix = "allot-pg-"
	ownerFile = "owner.pid"
)

// reapOrphans stops and removes the clusters of test processes that died
// without stopping theirs (a panic, a test timeout, kill -9): a server
// must not outlive its tests for long.
func reapOrphans(bin string, cred *syscall.Credential) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		raw, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue // its owner still runs (or cannot be asked)
		}
		c := &Cluster{bin: bin, dir: dir, cred: cred}
		if _, err := os.Stat(filepath.Join(c.data(), "postmaster.pid")); err == nil {
			_, _ = c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop")
		}
		_ = os.RemoveAll(dir)
	}
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }
func (c *Cluster) log() string  { return filepath.Join(c.dir, "postgres.log") }

// run runs one of PostgreSQL's programs as the server's user.
func (c *Cluster) run(prog string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(c.bin, prog), args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd.CombinedOutput()
}

// start starts the server and waits until it takes connections.
func (c *Cluster) start() error {
	opts := strings.Join([]string{
		"-p", strconv.Itoa(c.Port), "-k", c.dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=on", "-c", "synchronous_commit=on", "-c", "full_page_writes=on",
		"-c", "max_connections=200", "-c", "shared_buffers=128MB",
	}, " ")
	if out, err := c.run("pg_ctl", "-D", c.data(), "-l", c.log(), "-w", "-t", "120", "-o", opts, "start"); err != nil {
		logTail, _ := os.ReadFile(c.log())
		return fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, tail(logTail, 2000))
	}
	return nil
}

// Crash stops the server as a crash would (pg_ctl stop -m immediate: no
// checkpoint, recovery from the write-ahead log at the next start).
func (c *Cluster) Crash() error {
	if out, err := c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop -m immediate: %w\n%s", err, out)
	}
	return nil
}

// Restart starts the server again after Crash, on the same port.
func (c *Cluster) Restart() error { return c.start() }

// Stop stops the server and removes its directory.
func (c *Cluster) Stop() error {
	out, err := c.run("pg_ctl", "-D", c.data(), "-m", "fast", "-w", "stop")
	if err != nil && !strings.Contains(string(out), "Is server running?") {
		err = fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	} else {
		err = nil
	}
	return errors.Join(err, os.RemoveAll(c.dir))
}

// Schema creates a new, empty schema and returns the URL whose
// search_path selects it: a store opened on it sees only its own tables.
func (c *Cluster) Schema(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t%d_%d", os.Getpid(), c.n.Add(1))
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", err
	}
	return c.URL + "&search_path=" + name, nil
}

// Exec runs statements on the cluster's database as the superuser, for
// tests that set a database up by hand.
func (c *Cluster) Exec(ctx context.Context, url string, stmts ...string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%.80s: %w", s, err)
		}
	}
	return nil
}

// The cluster of a test binary, started by the first test that needs it,
// and why it could not be.
var (
	once      sync.Once
	shared    *Cluster
	sharedErr error
)

// Main runs a package's tests and stops the cluster, if one of them
// started it (Need):
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// A test binary whose tests need no PostgreSQL (a subprocess a test
// starts with -test.run) starts none.
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Need returns the test binary's cluster, starting it at the first call.
// Without PostgreSQL it says so loudly, once, and skips the test; under
// CI=true it fails the test instead: scripts/test installs PostgreSQL.
func Need(t testing.TB) *Cluster {
	t.Helper()
	once.Do(func() {
		start := time.Now()
		shared, sharedErr = Start()
		if sharedErr == nil {
			fmt.Fprintf(os.Stderr, "pgtest: PostgreSQL on 127.0.0.1:%d (%s), started in %v\n", shared.Port, shared.bin, time.Since(start).Round(time.Millisecond))
			return
		}
		banner := strings.Repeat("!", 78)
		fmt.Fprintf(os.Stderr, "%s\nNO THROWAWAY POSTGRESQL: %v\n", banner, sharedErr)
		if os.Getenv("CI") == "true" {
			fmt.Fprintf(os.Stderr, "CI=true: the PostgreSQL tests must run here (scripts/test installs PostgreSQL)\n%s\n", banner)
		} else {
			fmt.Fprintf(os.Stderr, "THE POSTGRESQL TESTS ARE SKIPPED: install PostgreSQL (apt-get install postgresql) to run them\n%s\n", banner)
		}
	})
	if shared == nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no throwaway PostgreSQL under CI=true: %v", sharedErr)
		}
		t.Skipf("no throwaway PostgreSQL: %v", sharedErr)
	}
	return shared
}

// URL returns the URL of a new, empty schema of the cluster Main started,
// or skips the test where there is none.
func URL(t testing.TB) string {
	t.Helper()
	c := Need(t)
	u, err := c.Schema(context.Background())
	if err != nil {
		t.Fatalf("creating a schema: %v", err)
	}
	return u
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
