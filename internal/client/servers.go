package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

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

// round sends r to the current server and, while the answer says another
// server should take it, to the next ones: each server at most once in
// turn. It returns the first answer that is not such a move, or else the
// error of the round: not_leader when a server of it answered so (a
// failover under way: the caller tries again after a short delay), the
// last error otherwise.
func (c *Client) round(ctx context.Context, r *request) (*http.Response, error) {
	n := len(c.servers.bases)
	tried := make([]bool, n)
	var notLeader error
	for count := 1; ; count++ {
		i := c.servers.cur.Load()
		tried[i] = true
		resp, err := c.sendOnce(ctx, c.servers.bases[i], r)
		next, ok := c.elsewhere(ctx, i, r, err, tried)
		if !ok {
			return resp, err
		}
		if IsNotLeader(err) {
			notLeader = err
		}
		// Move on, unless another request moved the client meanwhile: then
		// its choice stands.
		c.servers.cur.CompareAndSwap(i, int64(next))
		if count >= n {
			if notLeader != nil {
				return nil, notLeader
			}
			return resp, err
		}
	}
}

// elsewhere decides whether a request that failed with err on server i
// goes to another server at once, and which: the leader a not_leader
// answer or a redirect names when it is in the list and was not tried in
// this round (followers go on naming a leader that just died until the
// next one takes over), else the next one. A connection that could not
// be made leaves the request unsent; one that broke after it was sent
// moves on only when r is resendable, and marks it resent.
func (c *Client) elsewhere(ctx context.Context, i int64, r *request, err error, tried []bool) (int, bool) {
	n := len(c.servers.bases)
	if err == nil || n == 1 {
		return 0, false
	}
	next := int((i + 1) % int64(n))
	for j := next; tried[j] && j != int(i); j = (j + 1) % n {
		next = (j + 1) % n
	}
	var answered *Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.As(err, &answered) {
		// The server took the whole deadline without answering: it may be
		// frozen, and its kernel still accepts connections. No time is
		// left to send this request elsewhere, but the next one goes to
		// the next server.
		c.servers.cur.CompareAndSwap(i, int64(next))
		return 0, false
	}
	if ctx.Err() != nil {
		return 0, false
	}
	var e *Error
	switch {
	case errors.As(err, &e) && e.Code == api.CodeNotLeader:
		if h := c.servers.indexOf(e.Leader); h >= 0 && int64(h) != i && !tried[h] {
			next = h
		}
		return next, true
	case errors.As(err, &e) && e.Location != "" && (e.Status == http.StatusTemporaryRedirect || e.Status == http.StatusPermanentRedirect):
		// A 307 or 308 keeps the method and body: it is a hint like
		// not_leader's, followed only to a server of the list.
		h := c.servers.indexOf(e.Location)
		return h, h >= 0 && int64(h) != i
	case errors.As(err, &e):
		return 0, false // an answer: the server handled it
	case notSent(err):
		return next, true
	case r.resendable:
		r.resent = true
		return next, true
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
			for _, s := range []string{"/lease", "/reports", "/heartbeat", "/state", "/elastic"} {
				if strings.HasSuffix(path, s) {
					return true
				}
			}
		}
		return strings.HasPrefix(path, "/v1/jobs/") && strings.HasSuffix(path, "/priority")
	}
	return false
}
