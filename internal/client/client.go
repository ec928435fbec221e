// Package client is the Go client of Allot's HTTP API: one method per route,
// the wire types of internal/api, and server errors as *Error. The CLI and
// the worker agent use it; anything else written in Go may too.
//
// Timeouts come from the caller's context. The client itself bounds only
// what no caller should wait on: connecting, the TLS handshake, and the
// server's answer headers (ResponseHeaderTimeout, longer than the longest
// lease wait); the lease long poll gets a deadline a little longer than
// the wait it asks for, so that a silent connection cannot hold a worker
// forever. Idle keep-alive connections are closed before the server's own
// idle timeout would close them under a request.
//
// A request answered 503 with the code "overloaded" was not handled (the
// server is at a connection limit), so it is sent again, whatever its
// method, after the server's Retry-After and a growing, jittered delay, a
// few times (WithOverloadRetries) and while the context allows.
//
// A client may know several servers, the replicas of one cluster
// (servers.go): requests go to one of them, and move at once to the leader
// a not_leader answer names, or to the next server, on not_leader or a
// connection error; only a whole round of failures reaches the caller.
// The token goes only to the servers given, never to a URL a server or a
// redirect names (docs/security.md).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/allot-sched/allot/internal/api"
)

// Client calls an Allot server, or the replicas of a cluster of them. It
// is safe for concurrent use.
type Client struct {
	servers servers
	token   string
	hc      *http.Client
	// leaseSlack is added to a lease's wait to make its request deadline.
	leaseSlack time.Duration
	// reconnectMin and reconnectMax bound the delay before FollowEvents
	// reconnects; the server's "retry:" field overrides reconnectMin.
	reconnectMin, reconnectMax time.Duration
	// streamIdle is how long a followed event stream may stay silent
	// before FollowEvents takes the connection for dead and reconnects.
	streamIdle time.Duration
	// serverTimeout is how long each server of several gets to answer a
	// request of the worker protocol before it is left for the next
	// (WithServerTimeout); 0 waits for the caller's deadline.
	serverTimeout time.Duration
	// overloadRetries is how many times a request answered 503
	// overloaded is sent again.
	overloadRetries int
	// pause waits before a request is sent again; tests replace it.
	pause func(ctx context.Context, d time.Duration) error
}

// Transport settings of the default HTTP client.
const (
	// dialTimeout bounds connecting to the server.
	dialTimeout = 10 * time.Second
	// idleConnTimeout closes a pooled keep-alive connection unused this
	// long: less than the server's idle timeout (60 s by default), so
	// the client, not the server, closes it, never under a new request.
	idleConnTimeout = 30 * time.Second
	// responseHeaderTimeout bounds the wait for an answer's headers: a
	// lease long poll waits up to api.MaxLeaseWait before its answer.
	responseHeaderTimeout = api.MaxLeaseWait + 30*time.Second
	// DefaultOverloadRetries is how many times a request answered 503
	// overloaded is sent again.
	DefaultOverloadRetries = 4
	// maxOverloadDelay caps the growing delay between those retries (a
	// longer Retry-After is honoured as it is).
	maxOverloadDelay = 30 * time.Second
)

// newTransport returns the transport of the default HTTP client: the
// standard one with the timeouts above, and a few idle connections per
// server (an agent keeps a lease, a heartbeat and reports going).
func newTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = 10 * time.Second
	tr.ResponseHeaderTimeout = responseHeaderTimeout
	tr.IdleConnTimeout = idleConnTimeout
	tr.MaxIdleConnsPerHost = 4
	return tr
}

// Option configures a Client.
type Option func(*Client)

// WithToken sets the bearer token sent with every request; empty sends none
// (a development server without authentication).
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient replaces the HTTP client, e.g. for TLS settings or a test
// transport. Its Timeout, if any, must exceed the lease waits used, or long
// polls are cut short.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithServerTimeout gives each server of several d to answer a request of
// the worker protocol (registration, heartbeat, report, state; a lease
// gets its wait on top) before the request goes to the next server, and
// passes over for a few seconds a server that let d pass: a frozen
// leader, whose kernel still accepts connections, is left as fast as a
// dead one. The agent sets it; with one server it changes nothing.
func WithServerTimeout(d time.Duration) Option {
	return func(c *Client) { c.serverTimeout = max(d, 0) }
}

// WithOverloadRetries sets how many times a request answered 503
// overloaded is sent again (DefaultOverloadRetries; 0 never).
func WithOverloadRetries(n int) Option { return func(c *Client) { c.overloadRetries = max(n, 0) } }

// New returns a client of the server at baseURL, e.g. "http://allot:8080"
// or "https://example.com/allot" (a path prefix is kept), or of the
// replicas of a cluster: several URLs separated by commas
// ("http://a:7070,http://b:7070,http://c:7070"), tried in that order.
func New(baseURL string, opts ...Option) (*Client, error) {
	list, err := parseServers(baseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{
		servers:         servers{bases: list, silent: make([]atomic.Int64, len(list))},
		hc:              &http.Client{Transport: newTransport()},
		leaseSlack:      10 * time.Second,
		reconnectMin:    time.Second,
		reconnectMax:    30 * time.Second,
		streamIdle:      DefaultStreamIdle,
		overloadRetries: DefaultOverloadRetries,
		pause:           pause,
	}
	for _, o := range opts {
		o(c)
	}
	// Redirects are not followed: Go would follow one to another host
	// without the token, or with it to a host nobody configured. A
	// redirect answer is an error, or a move to a configured server.
	hc := *c.hc
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.hc = &hc
	return c, nil
}

// BaseURL returns the URL of the server the client calls now: the one
// that answered last, of those given to New.
func (c *Client) BaseURL() string { return c.servers.current() }

// Servers returns the server URLs given to New, in their order.
func (c *Client) Servers() []string { return slices.Clone(c.servers.bases) }

// request is one API call.
type request struct {
	method      string
	path        string // already escaped
	query       url.Values
	body        []byte
	contentType string
	header      http.Header
	// resendable says the request may be sent again after a connection
	// broke under it, when the server may have handled it: it changes
	// nothing the second time (GET, PUT, the worker protocol), or it is a
	// submission whose jobs all carry IDs (a second one is a duplicate).
	resendable bool
	// tryTimeout, when set, bounds each server's try of the request
	// (WithServerTimeout).
	tryTimeout time.Duration
	// resent is set by send when it sent the request again after such a
	// break: the first may have been handled.
	resent bool
}

// send performs r and returns the answer when its status is 2xx; any other
// status becomes *Error. A not_leader answer or a connection error moves
// to another server (round); an overloaded answer, or a round in which no
// server knew a leader, is retried after a delay (see the package
// documentation). The caller closes the body.
func (c *Client) send(ctx context.Context, r *request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := c.round(ctx, r)
		var e *Error
		if err == nil || attempt >= c.overloadRetries || !errors.As(err, &e) ||
			(e.Code != api.CodeOverloaded && (e.Code != api.CodeNotLeader || len(c.servers.bases) == 1)) {
			return resp, err
		}
		d := overloadDelay(e.RetryAfter, attempt)
		if e.Code == api.CodeNotLeader {
			d = electionDelay(attempt)
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
			return nil, err // no time to wait for: the caller decides
		}
		if c.pause(ctx, d) != nil {
			return nil, err
		}
	}
}

// overloadDelay is the wait before retry attempt+1 of an overloaded
// request: the server's Retry-After, and at least a delay that doubles
// from half a second (capped), drawn from its upper half so that clients
// refused together do not return together.
func overloadDelay(retryAfter time.Duration, attempt int) time.Duration {
	d := min(500*time.Millisecond<<min(attempt, 10), maxOverloadDelay)
	d = d/2 + rand.N(d/2+1)
	return max(d, retryAfter)
}

// electionDelay is the wait before round attempt+1 when no replica of a
// round led (an election under way): shorter than an overloaded server's,
// doubling from 100 ms, drawn from its upper half, since a standby leads
// within the leader timeout and the caller should reach it soon after.
func electionDelay(attempt int) time.Duration {
	d := 100 * time.Millisecond << min(attempt, 4)
	return d/2 + rand.N(d/2+1)
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// sendOnce performs r once, on the server at base.
func (c *Client) sendOnce(ctx context.Context, base string, r *request) (*http.Response, error) {
	u := base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err // a *url.Error: it names the method and URL
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		e := decodeError(resp.StatusCode, b)
		e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		if e.Code == api.CodeNotLeader && e.Leader == "" {
			e.Leader = resp.Header.Get(api.LeaderHeader)
		}
		if loc, err := resp.Location(); err == nil && resp.StatusCode/100 == 3 {
			e.Location = loc.String() // resolved against the request's URL
			e.Message = fmt.Sprintf("the server redirects %s %s to %q; it is not followed (see docs/security.md)", r.method, r.path, e.Location)
		}
		return nil, e
	}
	return resp, nil
}

// do performs r and decodes a JSON answer into out (nil: ignore the body).
func (c *Client) do(ctx context.Context, r request, out any) error {
	resp, err := c.send(ctx, &r)
	if err != nil {
		return err
	}
	return c.decode(resp, &r, out)
}

// decode reads the JSON answer to r into out (nil: ignore the body) and
// closes it.
func (c *Client) decode(resp *http.Response, r *request, out any) error {
	defer resp.Body.Close()
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			var syntax *json.SyntaxError
			if errors.As(err, &syntax) || errors.Is(err, io.EOF) {
				return fmt.Errorf("%s %s: decoding the answer: %w: %w", r.method, r.path, ErrNotAPI, err)
			}
			return fmt.Errorf("%s %s: decoding the answer: %w", r.method, r.path, err)
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody)) // let the connection be reused
	return nil
}

// doJSON sends in as a JSON body (nil: no body).
func (c *Client) doJSON(ctx context.Context, method, path string, in, out any) error {
	r := request{method: method, path: path, resendable: resendable(method, path)}
	if r.resendable && method == http.MethodPost && strings.HasPrefix(path, "/v1/workers") {
		r.tryTimeout = c.serverTimeout
		if lw, ok := in.(api.LeaseRequest); ok && r.tryTimeout > 0 {
			r.tryTimeout += min(time.Duration(lw.Wait), api.MaxLeaseWait)
		}
	}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encoding the request: %w", method, path, err)
		}
		r.body, r.contentType = b, "application/json"
	}
	return c.do(ctx, r, out)
}

// callJSON is doJSON for a call that answers a T.
func callJSON[T any](ctx context.Context, c *Client, method, path string, in any) (T, error) {
	var out T
	err := c.doJSON(ctx, method, path, in, &out)
	return out, err
}

// SubmitJob submits a job spec as written by a user: YAML or JSON. An empty
// contentType is guessed from the first character (a JSON object starts
// with '{').
//
// A spec that names no job ID gets one from the client (WithJobID), so
// that the submission can be sent again when the connection breaks under
// it (a failover): a duplicate answer to that second sending is the job
// the first one stored, and is returned as success.
func (c *Client) SubmitJob(ctx context.Context, body []byte, contentType string) (api.Job, error) {
	return c.SubmitJobWith(ctx, body, contentType, SubmitOptions{})
}

// SubmitOptions are the options of a submission.
type SubmitOptions struct {
	// Strict asks the server to refuse a job that no registered worker
	// can ever run, rather than accept it with a warning.
	Strict bool
}

// SubmitJobWith is SubmitJob with options.
func (c *Client) SubmitJobWith(ctx context.Context, body []byte, contentType string, opts SubmitOptions) (api.Job, error) {
	if contentType == "" {
		contentType = "application/yaml"
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '{' {
			contentType = "application/json"
		}
	}
	body, _, named := WithJobID(body, contentType)
	r := request{method: http.MethodPost, path: "/v1/jobs", body: body, contentType: contentType, resendable: named}
	if opts.Strict {
		r.query = url.Values{"strict": {"1"}}
	}
	resp, err := c.send(ctx, &r)
	if err != nil {
		if d := duplicateOf(err); d != nil && r.resent {
			return c.storedJob(ctx, *d), nil
		}
		return api.Job{}, err
	}
	var j api.Job
	err = c.decode(resp, &r, &j)
	return j, err
}

// duplicateOf returns what a duplicate answer names, or nil.
func duplicateOf(err error) *api.Duplicate {
	var e *Error
	if errors.As(err, &e) && e.Code == api.CodeConflict && e.Duplicate != nil {
		return e.Duplicate
	}
	return nil
}

// storedJob returns the job a duplicate answer names, as the server has
// it; if it cannot be read now, its ID and state.
func (c *Client) storedJob(ctx context.Context, d api.Duplicate) api.Job {
	if j, err := c.Job(ctx, d.ID); err == nil {
		return j
	}
	return api.Job{ID: d.ID, State: d.State}
}

// SubmitJobs submits many job specs in one call (POST /v1/jobs/bulk):
// body is a YAML stream (contentType "application/yaml", documents
// separated by ---) or NDJSON ("application/x-ndjson"). The answer has one
// result per document, in order; a refused job is a result, not an error.
// At most api.MaxBulkJobs documents go in one call.
//
// As SubmitJob, it gives every document that names no job ID one
// (bulkIDs), so that the call can be sent again when the connection
// breaks under it; a document then answered as a duplicate of what the
// first call stored is a result of that job (created or dead-lettered).
// Lines in the answer's errors are lines of body as given.
func (c *Client) SubmitJobs(ctx context.Context, body []byte, contentType string) (api.BulkResults, error) {
	sent, moves, named := bulkIDs(body, contentType)
	r := request{method: http.MethodPost, path: "/v1/jobs/bulk", body: sent, contentType: contentType, resendable: named}
	resp, err := c.send(ctx, &r)
	if err != nil {
		return api.BulkResults{}, err
	}
	var out api.BulkResults
	if err := c.decode(resp, &r, &out); err != nil {
		return out, err
	}
	for i := range out.Results {
		res := &out.Results[i]
		if res.Error == nil {
			continue
		}
		if d := res.Error.Duplicate; d != nil && r.resent {
			res.ID, res.Status, res.Error = d.ID, api.BulkCreated, nil
			if d.State == api.AdmissionDeadLettered {
				res.Status = api.BulkDeadLettered
			}
			continue
		}
		if res.Index >= 0 && res.Index < len(moves) {
			res.Error.ShiftLines(-moves[res.Index])
		}
	}
	return out, nil
}

// Job returns a job with its tasks and the reasons they wait.
func (c *Client) Job(ctx context.Context, id string) (api.Job, error) {
	var j api.Job
	err := c.doJSON(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id), nil, &j)
	return j, err
}

// JobFilter selects jobs for Jobs; zero fields do not filter.
type JobFilter struct {
	State string
	Queue string
	Share string
	// After is the cursor of the page to read (JobList.Next of the last).
	After int64
	Limit int
	// Sort is "submitted" (oldest first, the API's default) or
	// "-submitted" (newest first); After then pages in that order.
	Sort string
	// Mine keeps the jobs the caller's token submitted.
	Mine bool
}

func (f JobFilter) query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("state", f.State)
	set("queue", f.Queue)
	set("share", f.Share)
	set("sort", f.Sort)
	if f.Mine {
		q.Set("mine", "true")
	}
	if f.After > 0 {
		q.Set("after", strconv.FormatInt(f.After, 10))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	return q
}

// Jobs lists one page of jobs.
func (c *Client) Jobs(ctx context.Context, f JobFilter) (api.JobList, error) {
	var l api.JobList
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/jobs", query: f.query()}, &l)
	return l, err
}

// Cancel cancels a job: waiting tasks end, running ones are stopped.
func (c *Client) Cancel(ctx context.Context, id string) (api.Job, error) {
	var j api.Job
	err := c.doJSON(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(id)+"/cancel", nil, &j)
	return j, err
}

// Logs returns the output of a job's tasks' current attempts.
func (c *Client) Logs(ctx context.Context, id string) (api.Logs, error) {
	return c.LogsOf(ctx, id, api.LogQuery{})
}

// LogsOf returns the output q selects: one task, one attempt, from a byte
// offset on.
func (c *Client) LogsOf(ctx context.Context, id string, q api.LogQuery) (api.Logs, error) {
	v := url.Values{}
	if q.Task != "" {
		v.Set("task", q.Task)
	}
	if q.Attempt > 0 {
		v.Set("attempt", strconv.Itoa(q.Attempt))
	}
	if q.Offset > 0 {
		v.Set("offset", strconv.FormatInt(q.Offset, 10))
	}
	var l api.Logs
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/jobs/" + url.PathEscape(id) + "/logs", query: v}, &l)
	return l, err
}

// Usage returns what each share and submitter used in [since, until);
// zero times take the server's defaults (the last seven days).
func (c *Client) Usage(ctx context.Context, since, until time.Time) (api.Usage, error) {
	v := url.Values{}
	if !since.IsZero() {
		v.Set("since", since.UTC().Format(time.RFC3339Nano))
	}
	if !until.IsZero() {
		v.Set("until", until.UTC().Format(time.RFC3339Nano))
	}
	var u api.Usage
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/usage", query: v}, &u)
	return u, err
}

func eventQuery(after int64, job string) url.Values {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	if job != "" {
		q.Set("job", job)
	}
	return q
}

// EventQuery selects events of the log: GET /v1/events's parameters.
type EventQuery struct {
	After int64     // only events after this ID
	Job   string    // only events of this job
	Limit int       // at most this many (0: the server's default)
	Since time.Time // only events at or after this time
	Tail  bool      // the last Limit that match rather than the first
}

// EventLog returns the events q selects, oldest first.
func (c *Client) EventLog(ctx context.Context, q EventQuery) ([]api.Event, error) {
	v := eventQuery(q.After, q.Job)
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if q.Tail {
		v.Set("tail", "1")
	}
	var evs []api.Event
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/events", query: v}, &evs)
	return evs, err
}

// Events returns the events after the one with ID after, of one job when
// job is not empty, at most limit of them (0: the server's default).
func (c *Client) Events(ctx context.Context, after int64, job string, limit int) ([]api.Event, error) {
	q := eventQuery(after, job)
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var evs []api.Event
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/events", query: q}, &evs)
	return evs, err
}

// Workers lists the registered workers.
func (c *Client) Workers(ctx context.Context) ([]api.Worker, error) {
	var ws []api.Worker
	err := c.doJSON(ctx, http.MethodGet, "/v1/workers", nil, &ws)
	return ws, err
}

// Register registers a worker, or registers it again with the attempts it
// still runs.
func (c *Client) Register(ctx context.Context, reg api.Register) (api.Worker, error) {
	var w api.Worker
	err := c.doJSON(ctx, http.MethodPost, "/v1/workers", reg, &w)
	return w, err
}

// ErrLeaseTimeout is returned when the server holds a lease request well
// past the wait asked for: the connection is likely dead, and the agent
// should poll again.
var ErrLeaseTimeout = errors.New("the server did not answer the lease request in time")

// Lease asks for the worker's next assignments and stop orders, letting the
// server hold the request up to req.Wait (capped at api.MaxLeaseWait) when
// it has nothing yet. The request's own deadline is the wait plus a margin,
// independent of (but never beyond) ctx.
func (c *Client) Lease(ctx context.Context, worker string, req api.LeaseRequest) (api.Lease, error) {
	wait := min(time.Duration(req.Wait), api.MaxLeaseWait)
	rctx, cancel := context.WithTimeout(ctx, wait+c.leaseSlack)
	defer cancel()
	var l api.Lease
	err := c.doJSON(rctx, http.MethodPost, "/v1/workers/"+url.PathEscape(worker)+"/lease", req, &l)
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		return api.Lease{}, fmt.Errorf("lease of %q after %s: %w", worker, wait+c.leaseSlack, ErrLeaseTimeout)
	}
	return l, err
}

// Report delivers the results of finished attempts in one request. The
// server acknowledges reports it already has, so resending is safe.
func (c *Client) Report(ctx context.Context, worker string, r api.Reports) error {
	return c.doJSON(ctx, http.MethodPost, "/v1/workers/"+url.PathEscape(worker)+"/reports", r, nil)
}

// Output sends pieces of the output of the worker's running attempts.
func (c *Client) Output(ctx context.Context, worker string, o api.OutputChunks) error {
	return c.doJSON(ctx, http.MethodPost, "/v1/workers/"+url.PathEscape(worker)+"/output", o, nil)
}

// Heartbeat tells the server the worker is alive. A not_found answer
// (IsNotFound) means the server forgot the worker: register again.
func (c *Client) Heartbeat(ctx context.Context, worker string) error {
	return c.doJSON(ctx, http.MethodPost, "/v1/workers/"+url.PathEscape(worker)+"/heartbeat", nil, nil)
}

// Queues lists the queues with their policies.
func (c *Client) Queues(ctx context.Context) ([]api.Queue, error) {
	var qs []api.Queue
	err := c.doJSON(ctx, http.MethodGet, "/v1/queues", nil, &qs)
	return qs, err
}

// SetPolicy replaces a queue's policy at run time. policy is the policy
// configuration as the server's config file writes it (e.g. a
// policy.Config, or a json.RawMessage sent as is).
func (c *Client) SetPolicy(ctx context.Context, queue string, policy any) (api.Queue, error) {
	var q api.Queue
	err := c.doJSON(ctx, http.MethodPut, "/v1/queues/"+url.PathEscape(queue)+"/policy", policy, &q)
	return q, err
}

// Health checks /healthz: the server process answers.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, request{method: http.MethodGet, path: "/healthz"}, nil)
}

// Ready checks /readyz: the server can take work (store open, leader known).
func (c *Client) Ready(ctx context.Context) error {
	return c.do(ctx, request{method: http.MethodGet, path: "/readyz"}, nil)
}
