//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/spec"
)

// The slow-client script: a real server in a process of its own, with a
// small open-file limit like a production one that an attacker can reach,
// and clients on the addresses 127.0.0.x (Linux routes all of them to
// loopback; each is one client address) that flood it with idle
// keep-alive connections, send a header one line at a time (slowloris),
// trickle a body, and fill the connection pools. The server must cut the slow ones within its timeouts, hold each
// address to its limit, keep answering a normal client, /healthz and the
// worker protocol, and answer 503 rather than hang once it is full.

// slowServerEnv carries the server process's settings from the test to
// the process it starts (TestSlowClientServerProcess).
const slowServerEnv = "ALLOT_TEST_SLOW_CLIENT_SERVER"

// slowServerSettings are what the server process runs with.
type slowServerSettings struct {
	DataDir   string             `json:"dataDir"`
	FileLimit uint64             `json:"fileLimit"`
	Limits    spec.LimitSettings `json:"limits"`
}

// The limits of the script, short so that it runs in seconds.
var slowLimits = spec.LimitSettings{
	MaxConnections:           40,
	MaxConnectionsPerAddress: 10,
	ReservedConnections:      8,
	IdleTimeout:              spec.Duration(time.Second),
	HeaderTimeout:            spec.Duration(time.Second),
	BodyTimeout:              spec.Duration(time.Second),
	MinBodyRate:              1000,
	WriteTimeout:             spec.Duration(time.Second),
}

// slack is how much later than its timeout a cut may come: the server's
// timers, the scheduler of a loaded test machine.
const slack = 1500 * time.Millisecond

// TestSlowClientServerProcess is the server of TestSlowClientsAreCutAndTheServerStaysAvailable,
// run in a process of its own so that its open-file limit is its own. It
// is skipped in a normal run.
func TestSlowClientServerProcess(t *testing.T) {
	raw := os.Getenv(slowServerEnv)
	if raw == "" {
		t.Skip("the server process of the slow-client test; it runs only when that test starts it")
	}
	var set slowServerSettings
	if err := json.Unmarshal([]byte(raw), &set); err != nil {
		fmt.Fprintln(os.Stderr, "settings:", err)
		os.Exit(2)
	}
	// Both limits: the server raises its soft limit to the hard one.
	lim := syscall.Rlimit{Cur: set.FileLimit, Max: set.FileLimit}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "setrlimit:", err)
		os.Exit(2)
	}
	cfg := spec.ServerConfig{Server: spec.ServerSettings{Listen: "127.0.0.1:0", DataDir: set.DataDir, Limits: set.Limits}}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := startServer(ctx, cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		os.Exit(2)
	}
	fmt.Printf("listening %s\n", srv.URL)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes it
	cancel()
	_ = srv.Wait()
	os.Exit(0)
}

// startSlowServer starts the server process and returns its address
// (host:port). It is killed when the test ends.
func startSlowServer(t *testing.T, fileLimit uint64) (addr string) {
	t.Helper()
	raw, err := json.Marshal(slowServerSettings{DataDir: t.TempDir(), FileLimit: fileLimit, Limits: slowLimits})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSlowClientServerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), slowServerEnv+"="+string(raw))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncLog{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() && stderr.String() != "" {
			t.Logf("server process stderr:\n%s", stderr.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "listening http://"); ok {
				line <- rest
			}
		}
		close(line)
	}()
	select {
	case a, ok := <-line:
		if !ok {
			t.Fatalf("the server process ended without listening:\n%s", stderr.String())
		}
		return a
	case <-time.After(10 * time.Second):
		t.Fatalf("the server process did not start:\n%s", stderr.String())
	}
	return ""
}

// loopbackClient dials the server from one loopback address, as a distinct
// client machine would.
type loopbackClient struct {
	ip     string
	server string
}

func (c loopbackClient) dial() (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(c.ip)}, Timeout: 2 * time.Second}
	return d.Dial("tcp", c.server)
}

// answer is what a request got: the status, the error code of an error
// body, Retry-After, and how long it took.
type answer struct {
	status     int
	code       string
	retryAfter string
	took       time.Duration
	body       string
}

func (a answer) String() string {
	return fmt.Sprintf("%d %s (Retry-After %q) after %s: %.200s", a.status, a.code, a.retryAfter, a.took.Round(time.Millisecond), a.body)
}

// call sends one request on a new connection that closes after it, and
// reads the answer within two seconds; it then waits for the server to
// close the connection, so that the server has let go of it when call
// returns.
func (c loopbackClient) call(method, path, body string) (answer, error) {
	return c.callWithin(2*time.Second, method, path, body)
}

// callWithin is call with a time limit of its own.
func (c loopbackClient) callWithin(limit time.Duration, method, path, body string) (answer, error) {
	start := time.Now()
	conn, err := c.dial()
	if err != nil {
		return answer{}, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(start.Add(limit))
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n", method, path)
	if body != "" {
		req += fmt.Sprintf("Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	if _, err := io.WriteString(conn, req+"\r\n"+body); err != nil {
		return answer{}, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return answer{took: time.Since(start)}, fmt.Errorf("%s %s from %s: no answer after %s: %w", method, path, c.ip, time.Since(start).Round(time.Millisecond), err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, _ = io.Copy(io.Discard, br) // until the server closes
	a := answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), took: time.Since(start), body: string(b)}
	var eb api.ErrorBody
	if json.Unmarshal(b, &eb) == nil {
		a.code = eb.Error.Code
	}
	return a, nil
}

// open sends a request on a new keep-alive connection and returns the
// connection without reading the answer.
func (c loopbackClient) open(method, path, body string) (net.Conn, error) {
	conn, err := c.dial()
	if err != nil {
		return nil, err
	}
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", method, path)
	if body != "" {
		req += fmt.Sprintf("Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	if _, err := io.WriteString(conn, req+"\r\n"+body); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// closedWithin reports whether the server closes conn (end of stream or a
// reset, after anything it still sends) before the deadline.
func closedWithin(conn net.Conn, deadline time.Time) bool {
	_ = conn.SetReadDeadline(deadline)
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// stillOpen counts the connections the server has not closed by deadline
// (all of them looked at together until then).
func stillOpen(conns []net.Conn, deadline time.Time) int {
	open := 0
	for _, c := range conns {
		if !closedWithin(c, deadline) {
			open++
		}
	}
	return open
}

// readHead reads the status line and headers of an answer on conn.
func readHead(conn net.Conn, within time.Duration) (*http.Response, error) {
	_ = conn.SetReadDeadline(time.Now().Add(within))
	defer conn.SetReadDeadline(time.Time{})
	return http.ReadResponse(bufio.NewReader(conn), nil)
}

func registerBody(name string) string {
	b, _ := json.Marshal(api.Register{Name: name, Resources: spec.Resources{CPU: 1000, Memory: 1024}, Slots: 1})
	return string(b)
}

// slowServer starts a server process for one part of the script, with the
// workers w0 … w11 registered, and returns a way to reach it from a
// loopback address. The connections a part opens with keep are closed
// when it ends.
func slowServer(t *testing.T) (from func(ip string) loopbackClient, keep func(net.Conn)) {
	t.Helper()
	server := startSlowServer(t, slowFileLimit)
	from = func(ip string) loopbackClient { return loopbackClient{ip: ip, server: server} }
	if conn, err := from("127.0.0.2").dial(); err != nil {
		t.Skipf("cannot dial from 127.0.0.2: %v", err)
	} else {
		conn.Close()
	}
	for i := range 12 {
		w := fmt.Sprintf("w%d", i)
		if a, err := from("127.0.0.1").call("POST", "/v1/workers", registerBody(w)); err != nil || a.status != 200 {
			t.Fatalf("registering %s: %v %v", w, a, err)
		}
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	return from, func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		conns = append(conns, c)
	}
}

// slowFileLimit is the server process's open-file limit: a flood of a few
// hundred connections reaches it.
const slowFileLimit = 160

func TestSlowClients(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of real connections")
	}
	t.Run("an idle keep-alive flood past the file limit is shed and cut while others are served", func(t *testing.T) {
		t.Parallel()
		from, keep := slowServer(t)
		// More idle keep-alive connections than the server's open-file
		// limit, from a dozen addresses.
		const floodAddrs, perFloodAddr = 12, 14
		var flood [floodAddrs][]net.Conn
		for i := range floodAddrs {
			c := from(fmt.Sprintf("127.0.0.%d", 2+i))
			for range perFloodAddr {
				conn, err := c.open("GET", "/healthz", "")
				if err != nil {
					t.Fatalf("flood connection from %s: %v", c.ip, err)
				}
				flood[i] = append(flood[i], conn)
				keep(conn)
			}
		}
		floodDeadline := time.Now().Add(time.Second)
		for _, byAddr := range flood {
			for _, conn := range byAddr {
				_ = conn.SetReadDeadline(floodDeadline)
				if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
					resp.Body.Close()
				}
			}
		}
		floodAnswered := time.Now()

		// While the flood is on, a normal client, /healthz and a
		// worker's lease are answered.
		normal := from("127.0.0.1")
		for _, probe := range []struct{ name, method, path, body string }{
			{"a normal client", "GET", "/v1/jobs", ""},
			{"/healthz", "GET", "/healthz", ""},
			{"a worker lease", "POST", "/v1/workers/w0/lease", `{"wait":"0s"}`},
		} {
			if a, err := normal.call(probe.method, probe.path, probe.body); err != nil || a.status != 200 {
				t.Errorf("%s during the idle flood: %v %v", probe.name, a, err)
			}
		}
		// No address holds more than its share.
		// A shed connection's close reaches the client at once on a quiet
		// machine, later when the cores are busy: look until half the idle
		// timeout, well before the idle cut would close them all anyway.
		if open := stillOpen(flood[0], floodAnswered.Add(time.Duration(slowLimits.IdleTimeout)/2)); open > slowLimits.MaxConnectionsPerAddress {
			t.Errorf("127.0.0.2 holds %d connections open, more than the limit of %d per address", open, slowLimits.MaxConnectionsPerAddress)
		}
		// And the flood is gone within the idle timeout.
		idleDeadline := floodAnswered.Add(time.Duration(slowLimits.IdleTimeout) + slack)
		open := 0
		for _, byAddr := range flood {
			for _, conn := range byAddr {
				if !closedWithin(conn, idleDeadline) {
					open++
				}
			}
		}
		if open > 0 {
			t.Errorf("%d idle connections still open %s after the flood (idle timeout %s)", open,
				time.Since(floodAnswered).Round(time.Millisecond), time.Duration(slowLimits.IdleTimeout))
		}
	})

	t.Run("a slow header or body is cut while long polls and event streams outlive every timeout", func(t *testing.T) {
		t.Parallel()
		from, _ := slowServer(t)
		var wg sync.WaitGroup
		report := make(chan string, 8)
		wg.Go(func() { // slowloris: a header line every 100ms, never the end of the headers
			conn, err := from("127.0.0.20").dial()
			if err != nil {
				report <- "slowloris: " + err.Error()
				return
			}
			defer conn.Close()
			start := time.Now()
			closed := make(chan struct{})
			go func() { closedWithin(conn, start.Add(5*time.Second)); close(closed) }()
			_, _ = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
			limit := start.Add(time.Duration(slowLimits.HeaderTimeout) + slack)
			for time.Now().Before(limit) {
				select {
				case <-closed:
					return
				case <-time.After(100 * time.Millisecond):
				}
				_, _ = io.WriteString(conn, "X: y\r\n")
			}
			report <- fmt.Sprintf("a header sent one line every 100ms still held after %s (header timeout %s)",
				time.Since(start).Round(time.Millisecond), time.Duration(slowLimits.HeaderTimeout))
		})
		wg.Go(func() { // a body of 1000 bytes, one byte every 300ms
			conn, err := from("127.0.0.21").dial()
			if err != nil {
				report <- "slow body: " + err.Error()
				return
			}
			defer conn.Close()
			start := time.Now()
			closed := make(chan struct{})
			go func() { closedWithin(conn, start.Add(5*time.Second)); close(closed) }()
			_, _ = io.WriteString(conn, "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
			limit := start.Add(time.Duration(slowLimits.BodyTimeout) + slack)
			for time.Now().Before(limit) {
				select {
				case <-closed:
					return
				case <-time.After(300 * time.Millisecond):
				}
				_, _ = io.WriteString(conn, "{")
			}
			report <- fmt.Sprintf("a body sent one byte every 300ms still held after %s (body timeout %s)",
				time.Since(start).Round(time.Millisecond), time.Duration(slowLimits.BodyTimeout))
		})
		wg.Go(func() { // a lease long poll, with a body, longer than every timeout
			a, err := from("127.0.0.22").callWithin(4*time.Second, "POST", "/v1/workers/w1/lease", `{"wait":"1.8s"}`)
			if err != nil || a.status != 200 || a.took < 1700*time.Millisecond {
				report <- fmt.Sprintf("a lease long poll of 1.8s: %v %v", a, err)
			}
		})
		wg.Go(func() { // an event stream quiet for longer than every timeout, then an event
			conn, err := from("127.0.0.23").open("GET", "/v1/events?follow=1", "")
			if err != nil {
				report <- "event stream: " + err.Error()
				return
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != 200 {
				report <- fmt.Sprintf("event stream: %v %v", resp, err)
				return
			}
			drain(conn, br, time.Now().Add(100*time.Millisecond)) // the registrations so far
			time.Sleep(2 * time.Second)
			if a, err := from("127.0.0.24").call("POST", "/v1/workers", registerBody("late")); err != nil || a.status != 200 {
				report <- fmt.Sprintf("registering a worker for the stream: %v %v", a, err)
				return
			}
			if got := drain(conn, br, time.Now().Add(time.Second)); !strings.Contains(got, `"late"`) {
				report <- fmt.Sprintf("an event stream quiet for 2s got no event after it: %q", got)
			}
		})
		wg.Wait()
		close(report)
		for r := range report {
			t.Error(r)
		}
	})

	t.Run("an address with every connection it may have busy gets 503 for one more", func(t *testing.T) {
		t.Parallel()
		from, keep := slowServer(t)
		greedy := from("127.0.0.30")
		for i := range slowLimits.MaxConnectionsPerAddress {
			conn, err := greedy.open("GET", "/v1/events?follow=1", "")
			if err != nil {
				t.Fatal(err)
			}
			keep(conn)
			if resp, err := readHead(conn, 2*time.Second); err != nil || resp.StatusCode != 200 {
				t.Fatalf("event stream %d from %s: %v %v", i, greedy.ip, resp, err)
			}
		}
		if a, err := greedy.call("GET", "/healthz", ""); err != nil || a.status != 503 || a.code != "overloaded" || a.retryAfter == "" {
			t.Errorf("one more connection from an address at its limit: %v %v, want 503 overloaded with Retry-After", a, err)
		}
		if a, err := from("127.0.0.1").call("GET", "/v1/jobs", ""); err != nil || a.status != 200 {
			t.Errorf("another address while one is at its limit: %v %v", a, err)
		}
	})

	t.Run("a full server keeps its reserve for health and workers, then answers 503 at once", func(t *testing.T) {
		t.Parallel()
		from, keep := slowServer(t)
		normal := from("127.0.0.1")
		// Fill the general pool with event streams: the first one that
		// does not fit is refused, on a reserved connection.
		const tries = 40
		filled := false
		for i := 0; i < tries && !filled; i++ {
			conn, err := from(fmt.Sprintf("127.0.0.%d", 31+i/slowLimits.MaxConnectionsPerAddress)).open("GET", "/v1/events?follow=1", "")
			if err != nil {
				t.Fatal(err)
			}
			keep(conn)
			resp, err := readHead(conn, 2*time.Second)
			switch {
			case err != nil:
				t.Fatalf("event stream %d while filling the pool: %v", i, err)
			case resp.StatusCode == 503:
				filled = true
				closedWithin(conn, time.Now().Add(2*time.Second))
			case resp.StatusCode != 200:
				t.Fatalf("event stream %d while filling the pool: %s", i, resp.Status)
			}
		}
		if !filled {
			t.Errorf("%d event streams open and none refused; the limit is %d connections", tries, slowLimits.MaxConnections)
		}
		// The reserve serves /healthz and the worker protocol, and
		// nothing else.
		if a, err := normal.call("GET", "/v1/jobs", ""); err != nil || a.status != 503 || a.code != "overloaded" || a.retryAfter == "" {
			t.Errorf("a normal client once the general pool is full: %v %v, want 503 overloaded with Retry-After", a, err)
		}
		if a, err := normal.call("GET", "/healthz", ""); err != nil || a.status != 200 {
			t.Errorf("/healthz once the general pool is full: %v %v", a, err)
		}
		if a, err := normal.call("POST", "/v1/workers/w0/lease", `{"wait":"0s"}`); err != nil || a.status != 200 {
			t.Errorf("a worker lease once the general pool is full: %v %v", a, err)
		}
		// Fill the reserve with long polls: past the total limit, even
		// /healthz gets a 503 at once rather than a connection that
		// hangs.
		full := false
		for i := 0; i < slowLimits.ReservedConnections+2 && !full; i++ {
			conn, err := from("127.0.0.40").open("POST", fmt.Sprintf("/v1/workers/w%d/lease", 2+i), `{"wait":"20s"}`)
			if err != nil {
				t.Fatal(err)
			}
			keep(conn)
			a, err := normal.call("GET", "/healthz", "")
			switch {
			case err != nil:
				t.Errorf("/healthz with %d long polls in the reserve: %v (it hangs)", i+1, err)
				full = true
			case a.status == 503:
				full = true
				if a.code != "overloaded" || a.retryAfter == "" || a.took > time.Second {
					t.Errorf("/healthz past the total limit: %v, want 503 overloaded with Retry-After, at once", a)
				}
			case a.status != 200:
				t.Errorf("/healthz with %d long polls in the reserve: %v", i+1, a)
			}
		}
		if !full {
			t.Errorf("%d long polls in a reserve of %d, and /healthz still served: the total limit does not hold",
				slowLimits.ReservedConnections+2, slowLimits.ReservedConnections)
		}
	})
}

// drain reads what an event stream sends until the deadline.
func drain(conn net.Conn, br *bufio.Reader, deadline time.Time) string {
	_ = conn.SetReadDeadline(deadline)
	defer conn.SetReadDeadline(time.Time{})
	var b bytes.Buffer
	for {
		line, err := br.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			return b.String()
		}
	}
}
