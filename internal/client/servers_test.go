package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// replica is a test server standing for one replica of a cluster: it
// records what it gets and answers with its handler.
type replica struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string // the Authorization of each request, in order
}

func newReplica(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *replica {
	t.Helper()
	rp := &replica{}
	rp.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		rp.mu.Lock()
		rp.auth = append(rp.auth, r.Header.Get("Authorization"))
		rp.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(rp.Close)
	return rp
}

func (rp *replica) calls() []string {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return append([]string(nil), rp.auth...)
}

// leader answers every request 200 with an empty job list.
func leader(t *testing.T) *replica {
	return newReplica(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jobs":[]}`)
	})
}

// notLeader answers 503 not_leader naming hint ("" names none).
func notLeader(t *testing.T, hint string) *replica {
	return newReplica(t, func(w http.ResponseWriter, r *http.Request) {
		if hint != "" {
			w.Header().Set(api.LeaderHeader, hint)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, `{"error":{"code":"not_leader","message":"not the leader","leader":%q}}`, hint)
	})
}

// downURL returns the URL of a server that is down: nothing listens on
// its port, so connecting is refused.
func downURL(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

// noPause makes a test fail if the client waits before sending again:
// moving to another server is immediate.
func noPause(t *testing.T, c *Client) {
	c.pause = func(context.Context, time.Duration) error {
		t.Error("the client paused before moving on")
		return nil
	}
}

func clientOf(t *testing.T, urls ...string) *Client {
	t.Helper()
	c, err := New(strings.Join(urls, ","), WithToken("sekrit"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestServerListsAreReadCommaSeparated(t *testing.T) {
	c, err := New(" http://a:7070/ , https://B:443/x,http://a:7070")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Servers(), []string{"http://a:7070", "https://B:443/x"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("servers = %v, want %v (trimmed, duplicates dropped)", got, want)
	}
	if c.BaseURL() != "http://a:7070" {
		t.Errorf("BaseURL = %q, want the first", c.BaseURL())
	}
	for _, bad := range []string{"", ",", "http://a:7070,b:7070", "http://a,ftp://b"} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
	s := servers{bases: []string{"http://a:7070", "https://b", "https://b/prefix"}}
	for target, want := range map[string]int{
		"http://A:7070/":                   0,
		"http://a:7070/v1/jobs":            0,
		"https://b:443":                    1,
		"https://b/prefix/v1/jobs":         2,
		"http://b":                         -1, // not the https server
		"http://a:7071":                    -1,
		"https://b.evil.example":           -1,
		"":                                 -1,
		"https://b/prefixed-elsewhere/v1/": 1,
	} {
		if got := s.indexOf(target); got != want {
			t.Errorf("indexOf(%q) = %d, want %d", target, got, want)
		}
	}
}

// A follower's not_leader answer sends the request to the leader it
// names, at once and with the token; a server that is down is passed
// over at once. Later requests go to the leader directly.
func TestTheClientReachesTheLeaderInOneStepWithItsToken(t *testing.T) {
	lead := leader(t)
	follow := notLeader(t, lead.URL+"/")
	down := downURL(t)
	c := clientOf(t, follow.URL, down, lead.URL)
	noPause(t, c)

	if _, err := c.Jobs(context.Background(), JobFilter{}); err != nil {
		t.Fatal(err)
	}
	if got := lead.calls(); len(got) != 1 || got[0] != "Bearer sekrit" {
		t.Errorf("the leader got %q, want one request with the token", got)
	}
	if got := follow.calls(); len(got) != 1 {
		t.Errorf("the follower got %d requests, want 1", len(got))
	}
	if c.BaseURL() != lead.URL {
		t.Errorf("BaseURL = %q, want the leader %q", c.BaseURL(), lead.URL)
	}
	if _, err := c.Jobs(context.Background(), JobFilter{}); err != nil {
		t.Fatal(err)
	}
	if len(follow.calls()) != 1 || len(lead.calls()) != 2 {
		t.Errorf("the second request went to the follower (%d) or not to the leader (%d)", len(follow.calls()), len(lead.calls()))
	}

	// A server that refuses connections is passed over at once.
	c = clientOf(t, down, lead.URL)
	noPause(t, c)
	if _, err := c.Jobs(context.Background(), JobFilter{}); err != nil {
		t.Fatalf("down, then the leader: %v", err)
	}
}

// The token goes only to the servers the client was given: a leader a
// server names outside the list, or a redirect, is not followed.
func TestTheTokenGoesOnlyToTheConfiguredServers(t *testing.T) {
	lead := leader(t)
	stranger := leader(t) // a server nobody configured
	follow := notLeader(t, stranger.URL)
	c := clientOf(t, follow.URL, lead.URL)
	noPause(t, c)
	if _, err := c.Jobs(context.Background(), JobFilter{}); err != nil {
		t.Fatal(err)
	}
	if len(stranger.calls()) != 0 {
		t.Errorf("the client followed a hint outside its list: %q", stranger.calls())
	}
	if len(lead.calls()) != 1 {
		t.Errorf("the leader got %d requests, want 1 (the next server of the list)", len(lead.calls()))
	}

	redirect := func(to string) *replica {
		return newReplica(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, to+r.URL.Path, http.StatusTemporaryRedirect)
		})
	}
	away := redirect(stranger.URL)
	c = clientOf(t, away.URL)
	_, err := c.Jobs(context.Background(), JobFilter{})
	var e *Error
	if !errors.As(err, &e) || e.Location != stranger.URL+"/v1/jobs" {
		t.Errorf("a redirect to another host: err %v, want an error naming the Location", err)
	}
	if len(stranger.calls()) != 0 {
		t.Errorf("the client followed a redirect to another host: %q", stranger.calls())
	}

	// A 307 to a server of the list is a move there, with the token.
	home := redirect(lead.URL)
	c = clientOf(t, home.URL, lead.URL)
	noPause(t, c)
	before := len(lead.calls())
	if _, err := c.Jobs(context.Background(), JobFilter{}); err != nil {
		t.Fatal(err)
	}
	if got := lead.calls(); len(got) != before+1 || got[len(got)-1] != "Bearer sekrit" {
		t.Errorf("the leader got %q after a redirect to it, want one more request with the token", got)
	}
}

// When every server failed in turn the caller gets the error: at once
// when none could be reached (the caller backs off, as with one server),
// after a few pauses when replicas answered but none knew a leader yet.
func TestAWholeRoundOfFailuresReachesTheCaller(t *testing.T) {
	c := clientOf(t, downURL(t), downURL(t))
	noPause(t, c)
	if _, err := c.Jobs(context.Background(), JobFilter{}); err == nil || !Retryable(err) {
		t.Errorf("every server down: err %v, want a retryable connection error", err)
	}

	a, b := notLeader(t, ""), notLeader(t, "")
	c = clientOf(t, a.URL, b.URL)
	pauses := 0
	c.pause = func(context.Context, time.Duration) error { pauses++; return nil }
	_, err := c.Jobs(context.Background(), JobFilter{})
	if !IsNotLeader(err) {
		t.Fatalf("no leader known: err %v, want not_leader", err)
	}
	if pauses != DefaultOverloadRetries {
		t.Errorf("paused %d times, want %d: a round with no leader known is tried again after a delay", pauses, DefaultOverloadRetries)
	}
	if n := len(a.calls()) + len(b.calls()); n != 2*(DefaultOverloadRetries+1) {
		t.Errorf("%d requests, want each server once per round", n)
	}
}

// dropping is a server that takes a request and breaks the connection
// without answering: it may or may not have handled it.
func dropping(t *testing.T, handle func(r *http.Request)) *replica {
	return newReplica(t, func(w http.ResponseWriter, r *http.Request) {
		if handle != nil {
			handle(r)
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	})
}

// A request the server may have handled before the connection broke is
// sent to the next server only when sending it twice changes nothing.
func TestOnlyResendableRequestsAreSentAgainAfterABrokenConnection(t *testing.T) {
	lead := leader(t)
	drop := dropping(t, nil)
	c := clientOf(t, drop.URL, lead.URL)
	noPause(t, c)
	if _, err := c.CreateToken(context.Background(), api.CreateToken{Role: "admin"}); err == nil {
		t.Error("a token request was sent again after the connection broke")
	}
	if len(lead.calls()) != 0 {
		t.Errorf("the next server got %d requests", len(lead.calls()))
	}
	c = clientOf(t, drop.URL, lead.URL)
	noPause(t, c)
	if err := c.Heartbeat(context.Background(), "w1"); err != nil {
		t.Errorf("a heartbeat: %v, want it sent to the next server", err)
	}
	if len(lead.calls()) != 1 {
		t.Errorf("the next server got %d requests, want the heartbeat", len(lead.calls()))
	}
}

func TestResendableRequests(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/v1/jobs", true},
		{"PUT", "/v1/queues/q/policy", true},
		{"POST", "/v1/workers", true},
		{"POST", "/v1/workers/w/lease", true},
		{"POST", "/v1/workers/w/reports", true},
		{"POST", "/v1/workers/w/heartbeat", true},
		{"POST", "/v1/jobs/j/priority", true},
		{"POST", "/v1/jobs/j/cancel", false},
		{"POST", "/v1/tokens", false},
		{"DELETE", "/v1/tokens/t", false},
		{"POST", "/v1/deadletters/j/redrive", false},
	} {
		if got := resendable(tc.method, tc.path); got != tc.want {
			t.Errorf("resendable(%s %s) = %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

// A server that accepts the connection but never answers (a frozen
// process: its kernel still accepts) holds a request to its deadline;
// the next request goes to the next server.
func TestAServerSilentPastTheDeadlineIsLeftForTheNext(t *testing.T) {
	release := make(chan struct{})
	silent := newReplica(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	lead := leader(t)
	c := clientOf(t, silent.URL, lead.URL)
	noPause(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Jobs(ctx, JobFilter{}); err == nil {
		t.Fatal("a silent server answered")
	}
	if c.BaseURL() != lead.URL {
		t.Errorf("BaseURL = %q after a silent server, want the next one", c.BaseURL())
	}
	if _, err := c.Jobs(context.Background(), JobFilter{}); err != nil {
		t.Errorf("the next request: %v", err)
	}

	// A caller that gives up (cancels) does not move the client.
	c = clientOf(t, silent.URL, lead.URL)
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, _ = c.Jobs(ctx, JobFilter{})
	if c.BaseURL() != silent.URL {
		t.Errorf("BaseURL = %q after a cancelled request, want it unchanged", c.BaseURL())
	}
}

// A relative Location is resolved against the request's URL before it is
// compared with the list.
func TestARelativeRedirectIsResolvedBeforeItIsCompared(t *testing.T) {
	srv := newReplica(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/a/") {
			w.Header().Set("Location", "/b/"+strings.TrimPrefix(r.URL.Path, "/a/"))
			w.WriteHeader(http.StatusTemporaryRedirect)
			return
		}
		_, _ = io.WriteString(w, `{"jobs":[]}`)
	})
	c := clientOf(t, srv.URL+"/a", srv.URL+"/b")
	noPause(t, c)
	if _, err := c.Jobs(context.Background(), JobFilter{}); err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != srv.URL+"/b" {
		t.Errorf("BaseURL = %q, want the server the redirect names", c.BaseURL())
	}
}

// Just after the leader dies, followers still name it. The client passes
// over a named leader it already found down in this round, so the one
// server that leads now is reached in the same call; and when no server
// of the round leads, the caller sees not_leader (a failover under way,
// tried again after a short delay), not the dead leader's refusal.
func TestAFollowerNamingADeadLeaderDoesNotEndTheRound(t *testing.T) {
	dead := downURL(t)
	follow := notLeader(t, dead)
	lead := leader(t)
	c := clientOf(t, dead, follow.URL, lead.URL)
	noPause(t, c)
	if _, err := c.Jobs(context.Background(), JobFilter{}); err != nil {
		t.Fatalf("dead leader, a follower naming it, the new leader: %v", err)
	}
	if len(lead.calls()) != 1 {
		t.Errorf("the new leader got %d requests, want 1", len(lead.calls()))
	}

	c = clientOf(t, follow.URL, dead)
	pauses := 0
	c.pause = func(context.Context, time.Duration) error { pauses++; return nil }
	_, err := c.Jobs(context.Background(), JobFilter{})
	if !IsNotLeader(err) {
		t.Fatalf("a follower naming a dead leader: err %v, want not_leader", err)
	}
	if pauses != DefaultOverloadRetries {
		t.Errorf("paused %d times, want %d: a round whose leader is down is tried again after a delay", pauses, DefaultOverloadRetries)
	}
}

// A leader frozen (its kernel accepts, nothing answers) while followers
// still name it: a request of the worker protocol gives it the server
// timeout, goes on to the leader of now in the same call, and is not sent
// back to the frozen one by the followers' hint; while no replica leads,
// the rounds that follow pass it over too.
func TestAFrozenLeaderIsLeftAfterTheServerTimeoutAndPassedOver(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	frozen := newReplica(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	follow := notLeader(t, frozen.URL)
	lead := leader(t)
	newClient := func(urls ...string) *Client {
		c, err := New(strings.Join(urls, ","), WithToken("sekrit"), WithServerTimeout(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := newClient(frozen.URL, follow.URL, lead.URL)
	noPause(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	began := time.Now()
	if err := c.Heartbeat(ctx, "w1"); err != nil {
		t.Fatalf("frozen leader, a follower naming it, the new leader: %v", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("the heartbeat took %v, want about the server timeout", d)
	}
	if c.BaseURL() != lead.URL || len(lead.calls()) != 1 || len(frozen.calls()) != 1 {
		t.Errorf("BaseURL %q, the new leader got %d requests, the frozen one %d; want the new leader, 1, 1",
			c.BaseURL(), len(lead.calls()), len(frozen.calls()))
	}

	// An election under way: only the frozen leader and a follower that
	// names it. Rounds after the first go to the follower alone.
	frozen2 := newReplica(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	follow2 := notLeader(t, frozen2.URL)
	c = newClient(frozen2.URL, follow2.URL)
	pauses := 0
	c.pause = func(context.Context, time.Duration) error { pauses++; return nil }
	err := c.Heartbeat(ctx, "w1")
	if !IsNotLeader(err) {
		t.Fatalf("err %v, want not_leader", err)
	}
	if n := len(frozen2.calls()); n != 1 {
		t.Errorf("the frozen leader got %d requests in %d rounds, want 1", n, pauses+1)
	}
}
