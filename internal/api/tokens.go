package api

import (
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// Token is an API token as GET /v1/tokens shows it: never its secret.
type Token struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Role is admin, submitter or worker (see docs/security.md).
	Role string `json:"role"`
	// Queues and Shares limit a submitter ("*": any); Workers limits a
	// worker to these names (a trailing "*" matches a prefix).
	Queues  []string `json:"queues,omitempty"`
	Shares  []string `json:"shares,omitempty"`
	Workers []string `json:"workers,omitempty"`
	// MaxPriority, Urgent, Requestors, SLAGroups and Users are a
	// submitter's limits (docs/security.md); MaxPriority is shown for every
	// submitter token, the others when set.
	MaxPriority *int       `json:"maxPriority,omitempty"`
	Urgent      bool       `json:"urgent,omitempty"`
	Requestors  []string   `json:"requestors,omitempty"`
	SLAGroups   []string   `json:"slaGroups,omitempty"`
	Users       []string   `json:"users,omitempty"`
	Created     time.Time  `json:"created"`
	Expires     *time.Time `json:"expires,omitempty"`
	Revoked     *time.Time `json:"revoked,omitempty"`
	// Unreadable says why the token's stored record could not be read
	// back; such a token authorises nothing. Revoke it and make another.
	Unreadable string `json:"unreadable,omitempty"`
}

// CreateToken is the body of POST /v1/tokens.
type CreateToken struct {
	Name    string   `json:"name,omitempty"`
	Role    string   `json:"role"`
	Queues  []string `json:"queues,omitempty"`
	Shares  []string `json:"shares,omitempty"`
	Workers []string `json:"workers,omitempty"`
	// MaxPriority is the highest priority the token's jobs may have
	// (default 0); Urgent lets them be urgent (default: not). Requestors,
	// SLAGroups and Users list the names its jobs may use, exact or
	// prefixes ending in "*" (default: no SLA group, no user, and no
	// requestor but the token's name). Submitter tokens only.
	MaxPriority int      `json:"maxPriority,omitempty"`
	Urgent      bool     `json:"urgent,omitempty"`
	Requestors  []string `json:"requestors,omitempty"`
	SLAGroups   []string `json:"slaGroups,omitempty"`
	Users       []string `json:"users,omitempty"`
	// ExpiresIn makes the token expire this long after its creation; nil
	// (left out): it never expires. A written value counts: 0 is refused.
	ExpiresIn *model.Duration `json:"expiresIn,omitempty"`
}

// NewToken is the answer of POST /v1/tokens: the token and its secret. The
// server keeps only a hash of the secret, so this is the one time anyone
// sees it.
type NewToken struct {
	Token
	Secret string `json:"secret"`
}
