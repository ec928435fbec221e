package api

import (
	"time"

	"github.com/allot-sched/allot/internal/spec"
)

// Token is an API token as GET /v1/tokens shows it: never its secret.
type Token struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Role is admin, submitter or worker (see docs/security.md).
	Role string `json:"role"`
	// Queues and Shares limit a submitter ("*": any); Workers limits a
	// worker to these names (a trailing "*" matches a prefix).
	Queues  []string   `json:"queues,omitempty"`
	Shares  []string   `json:"shares,omitempty"`
	Workers []string   `json:"workers,omitempty"`
	Created time.Time  `json:"created"`
	Expires *time.Time `json:"expires,omitempty"`
	Revoked *time.Time `json:"revoked,omitempty"`
}

// CreateToken is the body of POST /v1/tokens.
type CreateToken struct {
	Name    string   `json:"name,omitempty"`
	Role    string   `json:"role"`
	Queues  []string `json:"queues,omitempty"`
	Shares  []string `json:"shares,omitempty"`
	Workers []string `json:"workers,omitempty"`
	// ExpiresIn makes the token expire this long after its creation; zero:
	// it never expires.
	ExpiresIn spec.Duration `json:"expiresIn,omitempty"`
}

// NewToken is the answer of POST /v1/tokens: the token and its secret. The
// server keeps only a hash of the secret, so this is the one time anyone
// sees it.
type NewToken struct {
	Token
	Secret string `json:"secret"`
}
