package netlimit

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"math/big"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

func TestResolveSizesTheDefaultsFromTheFileLimit(t *testing.T) {
	cases := []struct {
		name      string
		set       Limits
		fileLimit uint64
		want      Limits
		notes     int
	}{
		{"the usual soft limit", Limits{}, 1024, Limits{Max: 896, Reserved: 56, PerAddress: 105}, 0},
		{"a large limit stops at the default maximum", Limits{}, 1 << 20, Limits{Max: DefaultMax, Reserved: 256, PerAddress: 512}, 0},
		{"an unknown limit counts as 1024", Limits{}, 0, Limits{Max: 896, Reserved: 56, PerAddress: 105}, 0},
		{"a tiny limit keeps half for connections", Limits{}, 160, Limits{Max: 80, Reserved: 5, PerAddress: 16}, 0},
		{"what is set is kept", Limits{Max: 100, Reserved: 10, PerAddress: 3}, 1024, Limits{Max: 100, Reserved: 10, PerAddress: 3}, 0},
		{"a maximum over the budget is brought within it", Limits{Max: 5000}, 1024, Limits{Max: 896, Reserved: 56, PerAddress: 105}, 1},
		{"a reserve as large as the maximum is halved", Limits{Max: 10, Reserved: 10}, 1024, Limits{Max: 10, Reserved: 5, PerAddress: 5}, 1},
		{"a small maximum: per address never exceeds the general pool", Limits{Max: 8}, 1024, Limits{Max: 8, Reserved: 1, PerAddress: 7}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, notes := tc.set.Resolve(tc.fileLimit)
			if got != tc.want || len(notes) != tc.notes {
				t.Errorf("Resolve(%d) = %+v, notes %q; want %+v and %d notes", tc.fileLimit, got, notes, tc.want, tc.notes)
			}
			if got.Max > Budget(tc.fileLimit) {
				t.Errorf("Max %d over the budget %d", got.Max, Budget(tc.fileLimit))
			}
		})
	}
}

func TestAddressKeyGroupsAnIPv6ClientByItsPrefix(t *testing.T) {
	cases := []struct{ addr, want string }{
		{"192.0.2.7:5000", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:5000", "192.0.2.7"},
		{"[2001:db8:1:2:aaaa::1]:5000", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:bbbb::9]:6000", "2001:db8:1:2::/64"},
		{"[2001:db8:1:3::1]:5000", "2001:db8:1:3::/64"},
	}
	for _, tc := range cases {
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := AddressKey(a); got != tc.want {
			t.Errorf("AddressKey(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

// counts is an Observer for tests.
type counts struct {
	mu      sync.Mutex
	refused map[string]int
	shed    map[string]int
}

func newCounts() *counts { return &counts{refused: map[string]int{}, shed: map[string]int{}} }

func (c *counts) ConnectionRefused(limit string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refused[limit]++
}

func (c *counts) ConnectionShed(limit string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shed[limit]++
}

func (c *counts) get(m map[string]int, limit string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return m[limit]
}

// harness is an HTTP server behind a Listener: GET /hold answers once the
// test ends (a busy connection); GET /pool names the connection's pool.
// Its helpers wait for the server to have taken in what the test sent, so
// that the test does not depend on timing.
type harness struct {
	t       *testing.T
	ln      *Listener
	addr    string
	release chan struct{}
	entered chan struct{} // a /hold request reached its handler
	obs     *counts
	tlsConf *tls.Config
}

// testGrace is the harness's SilentGrace: short, so that a test can let a
// silent connection become one that may be shed.
const testGrace = 20 * time.Millisecond

func newHarness(t *testing.T, lim Limits, tlsConf *tls.Config) *harness {
	t.Helper()
	return newHarnessWith(t, lim, Options{TLS: tlsConf, SilentGrace: testGrace})
}

func newHarnessWith(t *testing.T, lim Limits, opt Options) *harness {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, release: make(chan struct{}), entered: make(chan struct{}, 100), obs: newCounts(), tlsConf: opt.TLS}
	opt.Observer = h.obs
	h.ln = Wrap(inner, lim, opt)
	h.addr = inner.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hold", func(w http.ResponseWriter, r *http.Request) {
		h.entered <- struct{}{}
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("GET /pool", func(w http.ResponseWriter, r *http.Request) {
		if Reserved(r.Context()) {
			_, _ = io.WriteString(w, "reserve")
			return
		}
		_, _ = io.WriteString(w, "general")
	})
	hs := &http.Server{Handler: mux, ConnState: h.ln.ConnState, ConnContext: ConnContext, ReadHeaderTimeout: 5 * time.Second}
	var ln net.Listener = h.ln
	if opt.TLS != nil {
		ln = tls.NewListener(ln, opt.TLS)
	}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		close(h.release)
		_ = hs.Close()
	})
	return h
}

// dial opens a connection that sends nothing yet.
func (h *harness) dial() net.Conn {
	h.t.Helper()
	c, err := net.DialTimeout("tcp", h.addr, 2*time.Second)
	if err != nil {
		h.t.Fatal(err)
	}
	if h.tlsConf != nil {
		c = tls.Client(c, &tls.Config{InsecureSkipVerify: true})
	}
	h.t.Cleanup(func() { c.Close() })
	return c
}

// busy opens a connection with a request the server holds.
func (h *harness) busy() net.Conn {
	h.t.Helper()
	c := h.dial()
	h.hold(c)
	return c
}

// hold sends a request the server holds on c, and waits until it does.
func (h *harness) hold(c net.Conn) {
	h.t.Helper()
	if _, err := io.WriteString(c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		h.t.Fatal(err)
	}
	select {
	case <-h.entered:
	case <-time.After(5 * time.Second):
		h.t.Fatal("the held request never reached its handler")
	}
}

// idle asks for c's pool on it and waits until the server counts it idle
// between requests; it returns the pool.
func (h *harness) idle(c net.Conn) string {
	h.t.Helper()
	before := h.idleCount()
	_, body := h.get(c, "/pool")
	h.waitFor("the connection to become idle", func() bool { return h.idleCount() > before })
	return body
}

// idleCount is how many connections wait between requests.
func (h *harness) idleCount() int {
	h.ln.mu.Lock()
	defer h.ln.mu.Unlock()
	n := 0
	for p := range h.ln.idle {
		for c := h.ln.idle[p].head; c != nil; c = c.next {
			n++
		}
	}
	return n
}

// open is how many connections the listener counts.
func (h *harness) open() int {
	s := h.ln.Stats()
	return s.General + s.Reserved
}

// waitFor waits until cond holds.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("waited 5s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// get sends a request on c and reads the answer.
func (h *harness) get(c net.Conn, path string) (*http.Response, string) {
	h.t.Helper()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		h.t.Fatalf("GET %s: %v", path, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		h.t.Fatalf("GET %s: %v", path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// closed reports whether the server closed c (within a short wait).
func closed(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	defer c.SetReadDeadline(time.Time{})
	_, err := c.Read(make([]byte, 1))
	ne, ok := err.(net.Error)
	return err != nil && !(ok && ne.Timeout())
}

// wantOverloaded checks that c was answered 503 overloaded with
// Retry-After, and closed.
func wantOverloaded(t *testing.T, c net.Conn, limit string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	_, _ = io.WriteString(c, "GET /pool HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%s: no answer: %v", limit, err)
	}
	var body struct {
		Error struct{ Code, Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%s: body: %v", limit, err)
	}
	if resp.StatusCode != 503 || body.Error.Code != CodeOverloaded || resp.Header.Get("Retry-After") != "2" || !resp.Close {
		t.Errorf("%s: %s %+v Retry-After %q close %v; want 503 overloaded, Retry-After 2, close", limit, resp.Status, body.Error,
			resp.Header.Get("Retry-After"), resp.Close)
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Errorf("%s: the refused connection ended with %v, want a clean close", limit, err)
	}
}

func TestPerAddressLimitShedsIdleConnectionsFirstThenRefuses(t *testing.T) {
	h := newHarness(t, Limits{Max: 100, PerAddress: 3, Reserved: 1}, nil)
	quiet := h.dial() // sends nothing for longer than the grace: the oldest that may be shed
	h.waitFor("the first connection", func() bool { return h.open() == 1 })
	time.Sleep(2 * testGrace)
	kept := h.dial()
	if pool := h.idle(kept); pool != "general" {
		t.Fatalf("pool %q", pool)
	}
	busy := h.busy()
	newer := h.dial() // the address is full: the quiet one goes
	h.waitFor("a connection shed", func() bool { return h.obs.get(h.obs.shed, LimitPerAddress) == 1 })
	if !closed(quiet) {
		t.Error("the oldest idle connection was not shed for a new one from its address")
	}
	if closed(kept) || closed(busy) {
		t.Error("a newer or busy connection was shed")
	}
	if _, body := h.get(newer, "/pool"); body != "general" {
		t.Errorf("the new connection: %q", body)
	}
	// Every connection of the address busy: the next is refused.
	h.hold(kept)
	h.hold(newer)
	wantOverloaded(t, h.dial(), LimitPerAddress)
	if got := h.obs.get(h.obs.refused, LimitPerAddress); got != 1 {
		t.Errorf("refused per address: %d, want 1", got)
	}
}

func TestTotalLimitShedsIdleThenUsesTheReserveThenRefuses(t *testing.T) {
	h := newHarness(t, Limits{Max: 4, PerAddress: 100, Reserved: 2}, nil)
	idle := h.dial()
	if pool := h.idle(idle); pool != "general" {
		t.Fatalf("pool %q", pool)
	}
	h.busy()
	// The general pool (2) is full, one of them idle: it is shed, and the
	// new connection is general.
	c := h.dial()
	h.waitFor("a connection shed", func() bool { return h.obs.get(h.obs.shed, LimitTotal) == 1 })
	if !closed(idle) {
		t.Error("the idle keep-alive connection was not shed")
	}
	if _, body := h.get(c, "/pool"); body != "general" {
		t.Errorf("the connection that replaced the idle one: %q, want general", body)
	}
	h.hold(c)
	// Both general connections busy: the next two go to the reserve.
	for range 2 {
		r := h.dial()
		if _, body := h.get(r, "/pool"); body != "reserve" {
			t.Errorf("with the general pool busy: %q, want reserve", body)
		}
		h.hold(r)
	}
	if s := h.ln.Stats(); s != (Stats{General: 2, Reserved: 2}) {
		t.Errorf("stats %+v", s)
	}
	// Everything busy: refused at once, with an answer.
	start := time.Now()
	wantOverloaded(t, h.dial(), LimitTotal)
	if took := time.Since(start); took > time.Second {
		t.Errorf("the refusal took %s", took)
	}
	if got := h.obs.get(h.obs.refused, LimitTotal); got != 1 {
		t.Errorf("refused total: %d", got)
	}
	if got := h.obs.get(h.obs.shed, LimitTotal); got != 1 {
		t.Errorf("shed total: %d", got)
	}
}

func TestANewConnectionIsNotShedBeforeItHadTimeToSpeak(t *testing.T) {
	h := newHarnessWith(t, Limits{Max: 2, PerAddress: 10, Reserved: 1}, Options{SilentGrace: time.Minute})
	h.busy()
	fresh := h.dial() // in the reserve, silent for less than the grace
	h.waitFor("the new connection", func() bool { return h.open() == 2 })
	wantOverloaded(t, h.dial(), LimitTotal)
	if resp, body := h.get(fresh, "/pool"); resp.StatusCode != 200 || body != "reserve" {
		t.Errorf("the new connection after another was refused: %s %q", resp.Status, body)
	}
	if got := h.obs.get(h.obs.shed, LimitTotal); got != 0 {
		t.Errorf("shed: %d, want 0", got)
	}
}

func TestClosedConnectionsLeaveTheCounts(t *testing.T) {
	h := newHarness(t, Limits{Max: 10, PerAddress: 10, Reserved: 2}, nil)
	var cs []net.Conn
	for range 5 {
		c := h.dial()
		h.get(c, "/pool")
		cs = append(cs, c)
	}
	if s := h.ln.Stats(); s.General != 5 {
		t.Fatalf("stats %+v, want 5 general", s)
	}
	for _, c := range cs {
		c.Close()
	}
	h.waitFor("every connection to leave the counts", func() bool { return h.ln.Stats() == (Stats{}) })
}

func TestRefusalOverTLSIsReadable(t *testing.T) {
	h := newHarness(t, Limits{Max: 2, PerAddress: 1, Reserved: 1}, selfSigned(t))
	h.busy()
	wantOverloaded(t, h.dial(), LimitPerAddress)
}

func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}

func TestALimitOfOnePerAddressHoldsAfterShedding(t *testing.T) {
	h := newHarness(t, Limits{Max: 10, PerAddress: 1, Reserved: 1}, nil)
	first := h.dial()
	h.idle(first)
	second := h.busy() // sheds the first
	if !closed(first) || closed(second) {
		t.Fatalf("first closed %v, second closed %v: want the idle first one shed for the second", closed(first), closed(second))
	}
	wantOverloaded(t, h.dial(), LimitPerAddress) // the second is busy: no room for a third
	if s := h.ln.Stats(); s.General != 1 {
		t.Errorf("stats %+v, want the one busy connection", s)
	}
}

func TestAConnectionShedForTheTotalLimitByItsOwnAddressKeepsTheCount(t *testing.T) {
	h := newHarness(t, Limits{Max: 2, PerAddress: 2, Reserved: 1}, nil)
	first := h.dial()
	h.idle(first) // the general pool's one connection, idle
	h.busy()      // sheds the first (general full), from the same address
	if !closed(first) {
		t.Fatal("the idle connection was not shed")
	}
	h.busy() // the reserve
	// Two busy connections from the address: a third is refused for the
	// address, never admitted.
	wantOverloaded(t, h.dial(), LimitPerAddress)
}

// A probe or a worker sends its whole request at once. A connection in
// the reserve that has sent part of a request and nothing more for the
// grace (a slowloris client) must not keep the reserve from them: it may
// be shed like a silent one. In the general pool it stays (the per-address
// limit bounds those).
func TestAReservedConnectionStuckInItsHeadersMayBeShed(t *testing.T) {
	h := newHarness(t, Limits{Max: 2, PerAddress: 10, Reserved: 1}, nil)
	h.busy()
	slow := h.dial() // in the reserve
	if _, err := io.WriteString(slow, "GET /pool HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the slow connection", func() bool { return h.open() == 2 })
	time.Sleep(2 * testGrace)
	probe := h.dial()
	h.waitFor("a connection shed", func() bool { return h.obs.get(h.obs.shed, LimitTotal) == 1 })
	if !closed(slow) {
		t.Error("the reserved connection stuck in its headers was not shed")
	}
	if resp, body := h.get(probe, "/pool"); resp.StatusCode != 200 || body != "reserve" {
		t.Errorf("the probe: %s %q, want 200 from the reserve", resp.Status, body)
	}
}

// A reserved connection that sent its whole request is busy, however long
// its handler takes (a worker's lease long poll): it is never shed.
func TestAReservedConnectionWithItsRequestInIsNotShed(t *testing.T) {
	h := newHarness(t, Limits{Max: 2, PerAddress: 10, Reserved: 1}, nil)
	h.busy()
	held := h.busy() // in the reserve, its request in the handler
	time.Sleep(2 * testGrace)
	wantOverloaded(t, h.dial(), LimitTotal)
	if closed(held) {
		t.Error("a reserved connection whose request is being handled was shed")
	}
}
