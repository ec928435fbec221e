// Package auth decides who may call Allot's API and what they may do.
//
// A caller presents a bearer token. Tokens carry a role: an admin may do
// everything; a submitter may submit to, read and cancel jobs of the queues
// and shares its token lists (as AWS Batch lets an IAM policy limit which
// share identifier a user may submit under); a worker may only register,
// lease, report and heartbeat under the worker names its token lists. The
// decisions are pure functions of a Principal and what is asked, so they are
// tested as tables; the HTTP layer (internal/api/rest) only calls them.
//
// Secrets are generated here, and the store keeps only their SHA-256 digest
// (see Hash).
package auth

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/allot-sched/allot/internal/store"
)

// Role is what a token may do.
type Role string

// The roles.
const (
	// Admin may do everything, including managing tokens, changing queue
	// policies and worker states.
	Admin Role = "admin"
	// Submitter may submit jobs to its queues and shares, read and cancel
	// the jobs it may see (those in its queues and shares), and read the
	// event log, the workers and the queues.
	Submitter Role = "submitter"
	// Worker may only act as a worker agent (register, lease, report,
	// heartbeat) under the worker names its token allows.
	Worker Role = "worker"
)

// Roles lists the roles, for messages and validation.
var Roles = []Role{Admin, Submitter, Worker}

// Any is the queue or share entry that allows every queue or share. A
// worker pattern of "*" (an empty prefix) allows every worker name.
const Any = "*"

// Principal is who makes a request: the role and scope of the token it
// presented.
type Principal struct {
	TokenID string
	Name    string
	Role    Role
	// Queues and Shares limit a submitter; they hold exact names or Any.
	Queues []string
	Shares []string
	// Workers limits a worker: exact names, or prefixes written with a
	// trailing "*".
	Workers []string
	// Limits bound what a submitter's jobs may ask of the scheduler
	// (AllowScheduling); an admin has none.
	Limits store.TokenLimits
}

// Anonymous is the principal of every request when authentication is
// switched off (allot dev, allot server --no-auth): an admin.
var Anonymous = Principal{Name: "anonymous", Role: Admin}

// FromToken is the principal of a stored token.
func FromToken(t store.Token) Principal {
	return Principal{TokenID: t.ID, Name: t.Name, Role: Role(t.Role), Queues: t.Queues, Shares: t.Shares, Workers: t.Workers, Limits: t.Limits}
}

// Action is what a route does, as far as authorisation is concerned.
type Action string

// The actions, one per kind of route.
const (
	ReadJobs       Action = "read jobs"
	SubmitJobs     Action = "submit jobs"
	CancelJobs     Action = "cancel jobs"
	ReadEvents     Action = "read the event log"
	ReadWorkers    Action = "list workers"
	ReadQueues     Action = "list queues"
	WorkerProtocol Action = "act as a worker (register, lease, report, heartbeat)"
	ChangeWorkers  Action = "change worker states"
	ChangePolicies Action = "change queue policies"
	ManageTokens   Action = "manage tokens"
	// ReadEndpoints and ChangeEndpoints cover the endpoints and the
	// throttling settings; ReadDensity the task/worker density series.
	ReadEndpoints   Action = "read endpoints and throttling settings"
	ChangeEndpoints Action = "change endpoints or throttling settings"
	ReadDensity     Action = "read the density series"
	// ReadMetrics is scraping GET /metrics: any token may, so that a
	// Prometheus server can use the least powerful one (a worker token).
	ReadMetrics Action = "read metrics"
)

// allowed lists the roles that may do each action at all; scope checks
// (which queue, share or worker) come on top.
var allowed = map[Action][]Role{
	ReadJobs:        {Admin, Submitter},
	SubmitJobs:      {Admin, Submitter},
	CancelJobs:      {Admin, Submitter},
	ReadEvents:      {Admin, Submitter},
	ReadWorkers:     {Admin, Submitter},
	ReadQueues:      {Admin, Submitter},
	WorkerProtocol:  {Admin, Worker},
	ChangeWorkers:   {Admin},
	ChangePolicies:  {Admin},
	ManageTokens:    {Admin},
	ReadEndpoints:   {Admin, Submitter},
	ChangeEndpoints: {Admin},
	ReadDensity:     {Admin, Submitter},
	ReadMetrics:     {Admin, Submitter, Worker},
}

// ErrForbidden matches every *Denied (errors.Is).
var ErrForbidden = errors.New("forbidden")

// Denied is an authorisation refusal: the request is understood and the
// caller is known, but its token does not allow it. Field names the part of
// the request that is not allowed (queue, share, name), when one is.
type Denied struct {
	Field   string
	Message string
}

func (d *Denied) Error() string { return d.Message }

// Is makes errors.Is(err, ErrForbidden) hold for a *Denied.
func (d *Denied) Is(target error) bool { return target == ErrForbidden }

// Allow reports whether p's role may do a at all (nil), or why not.
func (p Principal) Allow(a Action) error {
	roles, ok := allowed[a]
	if !ok {
		return &Denied{Message: fmt.Sprintf("unknown action %q", a)}
	}
	if slices.Contains(roles, p.Role) {
		return nil
	}
	if !slices.Contains(Roles, p.Role) {
		return &Denied{Message: fmt.Sprintf("this request's token has no known role (%q), so it may not %s", p.Role, a)}
	}
	return &Denied{Message: fmt.Sprintf("a %s token may not %s", p.Role, a)}
}

// AllowSubmit reports whether p may submit a job to queue with share (the
// job's effective queue and its share, empty when it names none).
func (p Principal) AllowSubmit(queue, share string) error {
	if err := p.Allow(SubmitJobs); err != nil {
		return err
	}
	return p.allowScope(queue, share, true)
}

// AllowFilter reports whether p may list jobs filtered by queue and share
// (empty: not filtered): asking for a queue or share the token does not
// allow is refused rather than silently answered with nothing.
func (p Principal) AllowFilter(queue, share string) error {
	if err := p.Allow(ReadJobs); err != nil {
		return err
	}
	return p.allowScope(queue, share, false)
}

func (p Principal) allowScope(queue, share string, required bool) error {
	if p.Role != Submitter {
		return nil
	}
	if (queue != "" || required) && !matchName(p.Queues, queue) {
		return &Denied{Field: "queue", Message: fmt.Sprintf("queue %q is not allowed for this token (allowed: %s)", queue, list(p.Queues))}
	}
	if share == "" && required && !matchName(p.Shares, share) {
		return &Denied{Field: "share", Message: fmt.Sprintf("a share is required by this token (allowed: %s)", list(p.Shares))}
	}
	if share != "" && !matchName(p.Shares, share) {
		return &Denied{Field: "share", Message: fmt.Sprintf("share %q is not allowed for this token (allowed: %s)", share, list(p.Shares))}
	}
	return nil
}

// Sees reports whether p may read (and cancel, with CancelJobs) a job of
// queue and share: an admin sees every job, a submitter the jobs in its
// queues and shares, a worker none.
func (p Principal) Sees(queue, share string) bool {
	switch p.Role {
	case Admin:
		return true
	case Submitter:
		return matchName(p.Queues, queue) && matchName(p.Shares, share)
	}
	return false
}

// JobScope returns the queues and shares a job listing must be limited to
// for p: nil means any. The answer for an admin is (nil, nil).
func (p Principal) JobScope() (queues, shares []string) {
	if p.Role != Submitter {
		return nil, nil
	}
	if !slices.Contains(p.Queues, Any) {
		queues = slices.Clone(p.Queues)
	}
	if !slices.Contains(p.Shares, Any) {
		shares = slices.Clone(p.Shares)
	}
	return queues, shares
}

// ActAs reports whether p may act as the worker called name: register it,
// lease its tasks, report its results and send its heartbeats.
func (p Principal) ActAs(name string) error {
	if err := p.Allow(WorkerProtocol); err != nil {
		return err
	}
	if p.Role == Admin || matchPattern(p.Workers, name) {
		return nil
	}
	return &Denied{Field: "name", Message: fmt.Sprintf("worker %q is not allowed for this token (allowed: %s)", name, list(p.Workers))}
}

// matchName reports whether name is in allowed, or allowed holds Any.
func matchName(allowed []string, name string) bool {
	return slices.Contains(allowed, Any) || slices.Contains(allowed, name)
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
