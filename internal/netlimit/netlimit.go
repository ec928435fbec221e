// Package netlimit bounds the connections a server keeps open, so that no
// client can take the file descriptors every other client needs: at most
// Max in all, at most PerAddress from one client address, and Reserved of
// the Max kept for the routes that must keep working under load (health
// checks and the worker protocol; the HTTP layer decides which, with
// Reserved and RefuseReserved).
//
// When a pool is full, an idle keep-alive connection is closed to make
// room, the oldest first, as nginx does: a client that opened it dials
// again when it needs it. So is a connection that has sent nothing for a
// second since it was accepted (a client sends its request at once). Only
// when nothing can be shed is the new connection refused, and a refusal is
// an answer, never a silence: a 503 with the JSON error code "overloaded"
// and Retry-After, written by the listener before the request is read, so
// that the client knows the request was not handled and may send it again.
//
// The listener sits under net/http: wrap the TCP listener with Wrap (TLS
// goes around it), and give the http.Server its ConnState and ConnContext.
package netlimit

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Limits are the bounds a Listener enforces. A zero or negative Max or
// PerAddress means no bound.
type Limits struct {
	// Max bounds the open connections, reserved ones included.
	Max int
	// PerAddress bounds the connections of one client address (an IPv6
	// client by its /64 prefix).
	PerAddress int
	// Reserved are kept out of Max for the routes the HTTP layer lets use
	// them: a connection accepted while the other Max-Reserved are busy
	// goes into the reserve.
	Reserved int
}

// The limits a connection or a request can be refused for, as the
// Observer and the metrics name them.
const (
	// LimitPerAddress: the client's address has PerAddress connections
	// busy.
	LimitPerAddress = "per_address"
	// LimitTotal: Max connections are busy.
	LimitTotal = "total"
	// LimitReserved: a request on a reserved connection asked for a route
	// that may not use the reserve.
	LimitReserved = "reserved"
)

// LimitNames lists the limits, for metrics that show every series from
// the start.
var LimitNames = []string{LimitPerAddress, LimitTotal, LimitReserved}

// RetryAfter is how long a refused client is asked to wait.
const RetryAfter = 2 * time.Second

// CodeOverloaded is the error code of a refusal (api.CodeOverloaded).
const CodeOverloaded = "overloaded"

// maxRefusing bounds the refusals being written at once: each holds a
// descriptor for up to refusalTime. Past it, a connection over the limits
// is closed at once without an answer; the descriptors this takes are part
// of the headroom Budget leaves.
const maxRefusing = 64

// refusalTime bounds one refusal: the TLS handshake, the answer, and the
// short wait that lets the client read the answer before the close (a
// close with unread request bytes resets the connection, and the reset
// can destroy the answer on its way).
const (
	refusalTime = 2 * time.Second
	lingerTime  = 500 * time.Millisecond
)

// Observer is told about connections refused and shed; internal/metrics
// implements it. Its methods must be quick: they are called on the accept
// loop.
type Observer interface {
	// ConnectionRefused counts a connection (or a request on a reserved
	// connection) answered 503 for a limit.
	ConnectionRefused(limit string)
	// ConnectionShed counts an idle connection closed to make room under
	// a limit (LimitPerAddress or LimitTotal).
	ConnectionShed(limit string)
}

// Pool is the pool a connection was admitted to.
type Pool int

// The pools.
const (
	General Pool = iota
	Reserve
)

// Stats are the open connections of each pool.
type Stats struct {
	General, Reserved int
}

// Listener is a net.Listener that enforces Limits.
type Listener struct {
	net.Listener
	lim Limits
	obs Observer
	tls *tls.Config

	mu     sync.Mutex
	open   [2]int      // by Pool
	idle   [2]connList // by Pool: keep-alive connections between requests
	silent [2]connList // by Pool: accepted, nothing read yet
	addrs  map[string]*address
	grace  time.Duration

	refusing chan struct{}
}

// address is what the listener knows of one client address.
type address struct {
	conns map[*Conn]struct{}
}

// Options are the optional parts of a Listener.
type Options struct {
	// Observer, when set, counts refusals and sheds.
	Observer Observer
	// TLS is the configuration of a TLS listener wrapped around this one:
	// refusals are written through it.
	TLS *tls.Config
	// SilentGrace is how long a new connection may send nothing before it
	// may be shed; 0 means DefaultSilentGrace.
	SilentGrace time.Duration
}

// DefaultSilentGrace is how long a new connection may send nothing before
// it may be shed: clients send their request (or TLS hello) at once, and a
// connection accepted a moment ago is no idle one.
const DefaultSilentGrace = time.Second

// Wrap returns a Listener that enforces lim on the connections of inner.
func Wrap(inner net.Listener, lim Limits, opt Options) *Listener {
	if opt.SilentGrace <= 0 {
		opt.SilentGrace = DefaultSilentGrace
	}
	return &Listener{Listener: inner, lim: lim, obs: opt.Observer, tls: opt.TLS, grace: opt.SilentGrace,
		addrs: map[string]*address{}, refusing: make(chan struct{}, maxRefusing)}
}

// Limits returns the limits the listener enforces.
func (l *Listener) Limits() Limits { return l.lim }

// Stats returns the open connections of each pool.
func (l *Listener) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{General: l.open[General], Reserved: l.open[Reserve]}
}

// Accept returns the next connection within the limits. Connections over
// them are answered 503 and closed on the way, and never returned.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		raw, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c, shed, limit := l.admit(raw)
		for _, v := range shed {
			_ = v.Conn.Close()
		}
		if c != nil {
			return c, nil
		}
		l.refuse(raw, limit)
	}
}

// admit decides on a new connection: a Conn in a pool, with the idle
// connections shed to make room (the caller closes them), or the limit
// that refuses it.
func (l *Listener) admit(raw net.Conn) (c *Conn, shed []*Conn, refused string) {
	key := AddressKey(raw.RemoteAddr())
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.addrs[key]
	if l.lim.PerAddress > 0 && a != nil && len(a.conns) >= l.lim.PerAddress {
		v := l.sheddableLocked(a.all(), now)
		if v == nil {
			l.observeRefused(LimitPerAddress)
			return nil, nil, LimitPerAddress
		}
		l.releaseLocked(v)
		shed = append(shed, v)
		l.observeShed(LimitPerAddress)
	}
	pool, ok := l.poolLocked(&shed, now)
	if !ok {
		l.observeRefused(LimitTotal)
		return nil, shed, LimitTotal
	}
	// Look again: shedding the address's last connection forgot it.
	a = l.addrs[key]
	if a == nil {
		a = &address{conns: map[*Conn]struct{}{}}
		l.addrs[key] = a
	}
	c = &Conn{Conn: raw, l: l, key: key, pool: pool}
	a.conns[c] = struct{}{}
	l.open[pool]++
	l.silent[pool].pushBack(c, now)
	return c, shed, ""
}

// poolLocked picks the pool of a new connection: the general pool while
// it has room, or room made by shedding its oldest idle connection; else
// the reserve, the same way. It reports false when both are full of busy
// connections.
func (l *Listener) poolLocked(shed *[]*Conn, now time.Time) (Pool, bool) {
	if l.lim.Max <= 0 {
		return General, true
	}
	reserved := min(max(l.lim.Reserved, 0), l.lim.Max)
	room := [2]int{General: l.lim.Max - reserved, Reserve: reserved}
	for _, p := range []Pool{General, Reserve} {
		if l.open[p] < room[p] {
			return p, true
		}
		if v := l.sheddableLocked([]*Conn{l.idle[p].head, l.silent[p].head}, now); v != nil {
			l.releaseLocked(v)
			*shed = append(*shed, v)
			l.observeShed(LimitTotal)
			return p, true
		}
	}
	return 0, false
}

// releaseLocked takes c out of the counts, once.
func (l *Listener) releaseLocked(c *Conn) {
	if c.released {
		return
	}
	c.released = true
	c.leaveListLocked()
	l.open[c.pool]--
	if a := l.addrs[c.key]; a != nil {
		delete(a.conns, c)
		if len(a.conns) == 0 {
			delete(l.addrs, c.key)
		}
	}
}

func (l *Listener) observeRefused(limit string) {
	if l.obs != nil {
		l.obs.ConnectionRefused(limit)
	}
}

func (l *Listener) observeShed(limit string) {
	if l.obs != nil {
		l.obs.ConnectionShed(limit)
	}
}

// ConnState tells the listener when a connection waits between requests
// (it may be shed) and when it has a request again. Set it as the
// http.Server's ConnState.
func (l *Listener) ConnState(nc net.Conn, state http.ConnState) {
	c := unwrap(nc)
	if c == nil || c.l != l {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateIdle:
		if !c.released {
			l.idle[c.pool].pushBack(c, time.Now())
		}
	case http.StateActive, http.StateHijacked:
		c.leaveListLocked()
	case http.StateClosed:
		l.releaseLocked(c)
	}
}

// Conn is a connection a Listener admitted. It leaves the counts when it
// is closed, or when the listener sheds it.
type Conn struct {
	net.Conn
	l    *Listener
	key  string
	pool Pool
	// waiting is set while the connection is in one of its pool's lists
	// of connections that may be shed: it has read nothing since it was
	// accepted or answered its last request. Read checks it without the
	// lock; the lists change under it.
	waiting atomic.Bool

	// Guarded by l.mu.
	released   bool
	in         *connList // the list it is in, or nil
	since      time.Time // when it entered it
	prev, next *Conn
}

// leaveListLocked takes c out of the list it is in, if any.
func (c *Conn) leaveListLocked() {
	if c.in != nil {
		c.in.remove(c)
	}
}

// Read reads from the connection; the first bytes of a request make an
// idle connection busy, so that it is not shed.
//
// In the reserve, only a whole request does (ConnState's StateActive, once
// its headers are read): probes and workers send theirs at once, so a
// reserved connection that sent part of one is counted as silent from
// then, and may be shed after the grace, so that slow clients cannot hold
// the reserve for the header timeout.
func (c *Conn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && c.waiting.Load() {
		c.l.mu.Lock()
		switch {
		case c.pool != Reserve:
			c.leaveListLocked()
		case c.in == &c.l.idle[Reserve]:
			c.l.silent[Reserve].pushBack(c, time.Now())
		}
		c.l.mu.Unlock()
	}
	return n, err
}

// Close closes the connection. It leaves the counts first, so that a
// client that sees the connection end can count on its slot being free.
func (c *Conn) Close() error {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// CloseWrite half-closes a TCP connection; net/http uses it to let a client
// read a last answer before the close.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// unwrap finds the Conn under a connection net/http holds: itself, or
// the Conn under a TLS connection.
func unwrap(nc net.Conn) *Conn {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	c, _ := nc.(*Conn)
	return c
}

type connKey struct{}

// ConnContext puts the request's connection in its context, for Reserved
// and RefuseReserved. Set it as the http.Server's ConnContext.
func ConnContext(ctx context.Context, nc net.Conn) context.Context {
	if c := unwrap(nc); c != nil {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// Reserved reports whether the request of ctx came on a reserved
// connection: the HTTP layer serves only the reserve's routes on it.
func Reserved(ctx context.Context) bool {
	c, ok := ctx.Value(connKey{}).(*Conn)
	return ok && c.pool == Reserve
}

// RefuseReserved counts a request refused on a reserved connection.
func RefuseReserved(ctx context.Context) {
	if c, ok := ctx.Value(connKey{}).(*Conn); ok {
		c.l.observeRefused(LimitReserved)
	}
}

// AddressKey is the client address a connection counts against: its IP,
// or for IPv6 its /64 prefix (one machine's usual allocation, so that an
// attacker with a /64 is one client).
func AddressKey(a net.Addr) string {
	var ip net.IP
	switch v := a.(type) {
	case *net.TCPAddr:
		ip = v.IP
	default:
		host, _, err := net.SplitHostPort(a.String())
		if err != nil {
			return a.String()
		}
		ip = net.ParseIP(host)
		if ip == nil {
			return host
		}
	}
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// refuse answers a connection over the limits and closes it, in the
// background, unless too many refusals are being written already.
func (l *Listener) refuse(raw net.Conn, limit string) {
	select {
	case l.refusing <- struct{}{}:
		go func() {
			defer func() { <-l.refusing }()
			l.answerOverloaded(raw, limit)
		}()
	default:
		_ = raw.Close()
	}
}

// answerOverloaded writes the 503 of a refused connection, lets the client
// read it, and closes the connection.
func (l *Listener) answerOverloaded(raw net.Conn, limit string) {
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(refusalTime))
	var w net.Conn = raw
	if l.tls != nil {
		tc := tls.Server(raw, l.tls)
		if err := tc.Handshake(); err != nil {
			return
		}
		w = tc
	}
	if _, err := w.Write(OverloadedResponse(l.refusalMessage(limit))); err != nil {
		return
	}
	if tc, ok := w.(*tls.Conn); ok {
		_ = tc.CloseWrite()
	}
	if cw, ok := raw.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = raw.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, io.LimitReader(raw, 64<<10))
}

// refusalMessage says which limit refused a connection.
func (l *Listener) refusalMessage(limit string) string {
	if limit == LimitPerAddress {
		return fmt.Sprintf("too many connections from your address (at most %d); close idle ones or retry later", l.lim.PerAddress)
	}
	return fmt.Sprintf("the server has all the connections it may keep (%d); retry later", l.lim.Max)
}

// OverloadedResponse is the whole HTTP answer to a refused connection: a
// 503 with the JSON error body of the API, Retry-After, and a close.
func OverloadedResponse(message string) []byte {
	body := OverloadedBody(message)
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: %s\r\n"+
		"Connection: close\r\nContent-Length: %d\r\n\r\n%s", RetryAfterHeader(), len(body), body)
}

// OverloadedBody is the JSON error body of a refusal.
func OverloadedBody(message string) []byte {
	return fmt.Appendf(nil, `{"error":{"code":%q,"message":%q}}`+"\n", CodeOverloaded, message)
}

// RetryAfterHeader is the Retry-After value of a refusal, in seconds.
func RetryAfterHeader() string { return strconv.Itoa(int(RetryAfter / time.Second)) }

// sheddableLocked returns, of cs, the connection waiting the longest that
// may be shed: idle between requests, or silent since it was accepted for
// at least the grace. Nil entries are skipped; nil if none may be shed.
func (l *Listener) sheddableLocked(cs []*Conn, now time.Time) *Conn {
	var oldest *Conn
	for _, c := range cs {
		switch {
		case c == nil || c.in == nil:
		case c.in == &l.silent[c.pool] && now.Sub(c.since) < l.grace:
		case oldest == nil || c.since.Before(oldest.since):
			oldest = c
		}
	}
	return oldest
}

// connList is a list of connections that may be shed, oldest first. Its
// methods are called under the listener's lock.
type connList struct {
	head, tail *Conn
}

func (q *connList) pushBack(c *Conn, now time.Time) {
	c.leaveListLocked()
	c.since = now
	c.prev, c.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = c
	} else {
		q.head = c
	}
	q.tail = c
	c.in = q
	c.waiting.Store(true)
}

func (q *connList) remove(c *Conn) {
	if c.in != q {
		return
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		q.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		q.tail = c.prev
	}
	c.prev, c.next, c.in = nil, nil, nil
	c.waiting.Store(false)
}

// all lists the address's connections.
func (a *address) all() []*Conn {
	cs := make([]*Conn, 0, len(a.conns))
	for c := range a.conns {
		cs = append(cs, c)
	}
	return cs
}
