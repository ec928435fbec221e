package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// Several servers: the replicas of a cluster on one store, of which one
// leads (docs/ha.md). The client keeps the list it was given and the one
// it calls now. A request that meets a replica that does not lead
// (not_leader) or a connection error moves at once to the leader the
// answer names, or else to the next server, and is sent there; only when
// every server failed in turn (a round) does the caller see the error,
// and back off as it would with one server.
//
// The token goes only to the servers of the list: a leader a server names
// is followed only when it is one of them (compared by scheme, host, port
// and path), and redirects are never followed. A server of the list is
// trusted with the token anyway; a URL it names may not be (a wrong
// advertised address, an http URL where the list says https), and the
// client has no way to tell, so it does not ask (docs/security.md).

// servers is the list of server URLs and the one requests go to.
type servers struct {
	bases []string // scheme://host[/prefix], without a trailing slash
	cur   atomic.Int64
	// silent holds, per server, when it last let a request's deadline
	// pass without answering (Unix nanoseconds; 0: it answers).
	silent []atomic.Int64
}

// current returns the URL requests go to now.
func (s *servers) current() string { return s.bases[s.cur.Load()] }

// parseServers reads a comma-separated list of server URLs.
func parseServers(list string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, raw := range strings.Split(list, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		if !strings.Contains(raw, "://") {
			// "127.0.0.1:7070" or "localhost:7070": url.Parse reads the
			// first as an error and the second as scheme "localhost".
			return nil, fmt.Errorf("server URL %q has no scheme: write %q (or https:// for a TLS server)", raw, "http://"+raw)
		}
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("server URL %q: %w", raw, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("server URL %q: want http://HOST[:PORT] or https://HOST[:PORT]", raw)
		}
		u.RawQuery, u.Fragment = "", ""
		base := strings.TrimRight(u.String(), "/")
		if key := serverKey(base); !seen[key] {
			seen[key] = true
			out = append(out, base)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("server URL %q: want http://HOST[:PORT] or https://HOST[:PORT], several separated by commas", list)
	}
	return out, nil
}

// serverKey is the form of a URL two spellings of one server share:
// scheme and host in lower case, the scheme's default port made explicit,
// no trailing slash.
func serverKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(host, port) + strings.TrimRight(u.EscapedPath(), "/")
}

// indexOf returns the index of the server of the list that target names:
// target is a server's URL (a leader hint) or a URL under it (a redirect's
// Location, path included); -1 when no server of the list matches.
func (s *servers) indexOf(target string) int {
	if target == "" {
		return -1
	}
	key := serverKey(target)
	best, bestLen := -1, -1
	for i, b := range s.bases {
		k := serverKey(b)
		if (key == k || strings.HasPrefix(key, k+"/")) && len(k) > bestLen {
			best, bestLen = i, len(k)
		}
	}
	return best
}

// silentFor is how long a server that let a request's deadline pass
// without answering (frozen: its kernel still accepts connections) is
// passed over: followers go on naming a frozen leader until a standby
// takes its place (the leader timeout), and each request sent there
// would wait out its deadline again.
const silentFor = 5 * time.Second

// markSilent notes that server i let a deadline pass without answering.
func (s *servers) markSilent(i int64) { s.silent[i].Store(time.Now().UnixNano()) }

// isSilent reports whether server i let a deadline pass without answering
// in the last silentFor.
func (s *servers) isSilent(i int) bool {
	at := s.silent[i].Load()
	return at != 0 && time.Since(time.Unix(0, at)) < silentFor
}

// pick returns the server a request that failed on server i goes to
// next in this round: the leader an answer named (hint, -1 if none) when
// it was not tried yet, else the next server of the list not tried yet;
// a server found silent lately is passed over. -1 when none is left.
func (s *servers) pick(i int64, hint int, tried []bool) int {
	n := len(s.bases)
	if hint >= 0 && int64(hint) != i && !tried[hint] && !s.isSilent(hint) {
		return hint
	}
	for k := 1; k < n; k++ {
		j := (int(i) + k) % n
		if !tried[j] && !s.isSilent(j) {
			return j
		}
	}
	return -1
}

// round sends r to the current server and, while the answer says another
// server should take it, to the next ones: each server at most once in
// turn, passing over those found silent lately. It returns the first
// answer that is not such a move, or else the error of the round:
// not_leader when a server of it answered so (a failover under way: the
// caller tries again after a short delay), the last error otherwise.
//
// A request with a try timeout (the worker protocol, WithServerTimeout)
// gives each server that long to answer: one that does not is marked
// silent and the request goes to the next, as after a broken connection.
func (c *Client) round(ctx context.Context, r *request) (*http.Response, error) {
	n := len(c.servers.bases)
	tried := make([]bool, n)
	if i := c.servers.cur.Load(); n > 1 && c.servers.isSilent(int(i)) {
		if j := c.servers.pick(i, -1, tried); j >= 0 {
			c.servers.cur.CompareAndSwap(i, int64(j))
		}
	}
	var notLeader error
	for {
		i := c.servers.cur.Load()
		tried[i] = true
		resp, err, silent := c.try(ctx, c.servers.bases[i], r)
		if silent {
			c.servers.markSilent(i)
		} else if resp != nil || isAnswer(err) {
			c.servers.silent[i].Store(0)
		}
		next, ok := c.elsewhere(ctx, i, r, err, tried)
		if !ok {
			return resp, err
		}
		if IsNotLeader(err) {
			notLeader = err
		}
		if next < 0 {
			// Every server was tried or is silent: later requests start
			// at the one after this.
			c.servers.cur.CompareAndSwap(i, (i+1)%int64(n))
			if notLeader != nil {
				return nil, notLeader
			}
			return resp, err
		}
		// Move on, unless another request moved the client meanwhile: then
		// its choice stands.
		c.servers.cur.CompareAndSwap(i, int64(next))
	}
}

// try sends r once to the server at base, within r's try timeout when it
// has one and the client knows several servers; silent reports that the
// server let that timeout pass without answering.
func (c *Client) try(ctx context.Context, base string, r *request) (*http.Response, error, bool) {
	if r.tryTimeout <= 0 || len(c.servers.bases) == 1 {
		resp, err := c.sendOnce(ctx, base, r)
		return resp, err, false
	}
	tctx, cancel := context.WithTimeout(ctx, r.tryTimeout)
	resp, err := c.sendOnce(tctx, base, r)
	if err != nil {
		cancel()
		silent := ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) && !isAnswer(err)
		return nil, err, silent
	}
	// The body is read after the round: the try's context ends with it.
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil, false
}

// cancelOnClose ends a try's context when its answer's body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// isAnswer reports whether err is an answer of the server (an *Error),
// as opposed to a transport failure.
func isAnswer(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// elsewhere decides whether a request that failed with err on server i
// goes to another server at once, and which (pick; -1 ends the round): the
// leader a not_leader answer or a redirect names when it is in the list
// and was not tried in this round (followers go on naming a leader that
// just died until the next one takes over), else the next one. A
// connection that could not be made leaves the request unsent; one that
// broke after it was sent, or a server silent past the try timeout,
// moves on only when r is resendable, and marks it resent.
func (c *Client) elsewhere(ctx context.Context, i int64, r *request, err error, tried []bool) (int, bool) {
	n := len(c.servers.bases)
	if err == nil || n == 1 {
		return 0, false
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && !isAnswer(err) {
		// The server took the whole deadline without answering: it may be
		// frozen, and its kernel still accepts connections. No time is
		// left to send this request elsewhere, but the next one goes to
		// the next server.
		c.servers.markSilent(i)
		if next := c.servers.pick(i, -1, make([]bool, n)); next >= 0 {
			c.servers.cur.CompareAndSwap(i, int64(next))
		}
		return 0, false
	}
	if ctx.Err() != nil {
		return 0, false
	}
	var e *Error
	switch {
	case errors.As(err, &e) && e.Code == api.CodeNotLeader:
		return c.servers.pick(i, c.servers.indexOf(e.Leader), tried), true
	case errors.As(err, &e) && e.Location != "" && (e.Status == http.StatusTemporaryRedirect || e.Status == http.StatusPermanentRedirect):
		// A 307 or 308 keeps the method and body: it is a hint like
		// not_leader's, followed only to a server of the list.
		h := c.servers.indexOf(e.Location)
		return h, h >= 0 && int64(h) != i
	case errors.As(err, &e):
		return 0, false // an answer: the server handled it
	case notSent(err):
		return c.servers.pick(i, -1, tried), true
	case r.resendable:
		r.resent = true
		return c.servers.pick(i, -1, tried), true
	}
	return 0, false
}

// notSent reports whether a transport error happened before the request
// could reach the server: no connection was made (refused, unreachable,
// a name that does not resolve, a dial timeout).
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// resendable reports whether a request changes nothing more when the
// server gets it twice: reads, replacements (PUT), and the worker
// protocol (the server takes a registration, lease confirmation, report,
// heartbeat or state again as the same).
func resendable(method, path string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut:
		return true
	case http.MethodPost:
		if path == "/v1/workers" {
			return true
		}
		if strings.HasPrefix(path, "/v1/workers/") {
			for _, s := range []string{"/lease", "/reports", "/output", "/heartbeat", "/state", "/elastic"} {
				if strings.HasSuffix(path, s) {
					return true
				}
			}
		}
		return strings.HasPrefix(path, "/v1/jobs/") && strings.HasSuffix(path, "/priority")
	}
	return false
}
