package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

// SecretPrefix starts every token secret, so a leaked one is easy to
// recognise (secret scanners, logs) and a wrong string is told apart from a
// wrong token.
const SecretPrefix = "allot_"

// secretBytes is the entropy of a secret: 256 random bits.
const secretBytes = 32

// secretLen is the length of a secret: the prefix and 32 bytes in
// unpadded base64url.
var secretLen = len(SecretPrefix) + base64.RawURLEncoding.EncodedLen(secretBytes)

// NewSecret returns a fresh secret: SecretPrefix and 32 random bytes in
// unpadded base64url.
func NewSecret() string {
	var b [secretBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return SecretPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// WellFormed reports whether s has the shape of a secret NewSecret makes.
// A request with anything else is refused without a store lookup.
func WellFormed(s string) bool {
	if len(s) != secretLen || !strings.HasPrefix(s, SecretPrefix) {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(s[len(SecretPrefix):])
	return err == nil && len(b) == secretBytes
}

// Hash is the digest the store keeps instead of a secret. A plain SHA-256
// is the right tool here, unlike for passwords: a secret has 256 random
// bits, so there is nothing to guess and no dictionary to run; a slow,
// salted hash (bcrypt, argon2) would only cost time on every request and
// would not allow the lookup by digest that finds the token.
func Hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// idAlphabet is Crockford's base32 in lower case: no i, l, o or u to misread.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// NewID returns a token ID: "tok-" and 12 random base32 characters. The ID
// is public (lists, logs, revocation) and unrelated to the secret.
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	var s strings.Builder
	s.WriteString("tok-")
	for _, x := range b {
		s.WriteByte(idAlphabet[x%32])
	}
	return s.String()
}

// Limits of a token's description.
const (
	MaxNameLen    = 100 // of the token's name and of each scope entry
	MaxScopeItems = 100 // queues, shares or workers of one token
	// MaxExpiresIn bounds a token's lifetime: ten years, well inside the
	// times the store keeps (until 2262).
	MaxExpiresIn = 10 * 365 * 24 * time.Hour
)

// Spec is what a new token is asked to be.
type Spec struct {
	Name    string
	Role    Role
	Queues  []string
	Shares  []string
	Workers []string
	// Limits bound a submitter's jobs (see Principal.AllowScheduling);
	// other roles have none.
	Limits store.TokenLimits
	// ExpiresIn makes the token expire that long after creation; nil:
	// never. A lifetime of 0 is refused, not taken as never: that is
	// ExpiresIn left out.
	ExpiresIn *time.Duration
}

// Check validates s. Errors name the field: role, queues[1], expiresIn.
// A submitter needs at least one queue and one share (Any allows all),
// a worker at least one worker name or pattern, and an admin none of them.
func (s Spec) Check() error {
	var errs model.FieldErrors
	add := func(path, format string, args ...any) {
		errs = append(errs, &model.FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	if len(s.Name) > MaxNameLen {
		add("name", "longer than %d characters", MaxNameLen)
	} else if strings.IndexFunc(s.Name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		add("name", "contains a control character")
	}
	need := map[Role][]string{Submitter: {"queues", "shares"}, Worker: {"workers"}}
	lists := map[string][]string{"queues": s.Queues, "shares": s.Shares, "workers": s.Workers}
	switch s.Role {
	case Admin, Submitter, Worker:
	case "":
		add("role", "required (one of admin, submitter, worker)")
	default:
		add("role", "unknown role %q (known: admin, submitter, worker)", s.Role)
	}
	for _, field := range []string{"queues", "shares", "workers"} {
		items := lists[field]
		needed := slices.Contains(need[s.Role], field)
		switch {
		case s.Role == "" || !slices.Contains(Roles, s.Role):
		case needed && len(items) == 0 && field == "workers":
			add(field, "a worker token needs at least one worker name, or a prefix ending in * (\"gpu-*\"; \"*\" for any)")
		case needed && len(items) == 0:
			add(field, "a submitter token needs at least one (%q for any)", Any)
		case !needed && len(items) > 0:
			add(field, "a %s token is not limited by %s; leave it out", s.Role, field)
		}
		if len(items) > MaxScopeItems {
			add(field, "more than %d entries", MaxScopeItems)
			continue
		}
		for i, it := range items {
			if msg := checkScopeItem(it, field == "workers"); msg != "" {
				add(fmt.Sprintf("%s[%d]", field, i), "%s", msg)
			}
		}
	}
	checkLimits(s.Role, s.Limits, add)
	switch {
	case s.ExpiresIn == nil:
	case *s.ExpiresIn < 0:
		add("expiresIn", "must not be negative")
	case *s.ExpiresIn == 0:
		add("expiresIn", "must be more than 0 (got 0): leave it out for a token that never expires")
	case *s.ExpiresIn > MaxExpiresIn:
		add("expiresIn", "must be at most %s (ten years)", MaxExpiresIn)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// checkScopeItem checks one entry of a token's lists: patterns (workers,
// and the lists of the limits) are exact names or prefixes ending in "*";
// the other entries (queues, shares) are exact names or Any.
func checkScopeItem(it string, pattern bool) string {
	switch {
	case it == "":
		return "empty"
	case len(it) > MaxNameLen:
		return fmt.Sprintf("longer than %d characters", MaxNameLen)
	case strings.IndexFunc(it, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0:
		return fmt.Sprintf("%q contains a space or control character", it)
	case pattern && strings.Contains(strings.TrimSuffix(it, "*"), "*"):
		return fmt.Sprintf("%q: * may only end a pattern", it)
	case !pattern && it != Any && strings.Contains(it, "*"):
		return fmt.Sprintf("%q: use exact names, or %q alone for any", it, Any)
	}
	return ""
}

// New checks s and makes the token: the record to store (with the hash of
// the secret, never the secret) and the secret to hand out once.
func New(s Spec, now time.Time) (store.Token, string, error) {
	if err := s.Check(); err != nil {
		return store.Token{}, "", err
	}
	secret := NewSecret()
	t := store.Token{ID: NewID(), Hash: Hash(secret), Name: s.Name, Role: string(s.Role),
		Queues: tidy(s.Queues), Shares: tidy(s.Shares), Workers: tidy(s.Workers),
		Limits: tidyLimits(s.Limits), Created: now.UTC()}
	if s.ExpiresIn != nil {
		t.Expires = t.Created.Add(*s.ExpiresIn)
	}
	return t, secret, nil
}

// tidy sorts a scope list and drops repeats, so tokens list the same way
// however they were asked for.
func tidy(items []string) []string {
	if len(items) == 0 {
		return nil
	}
	out := slices.Clone(items)
	slices.Sort(out)
	return slices.Compact(out)
}

// Active reports whether t may be used at now: readable, not revoked, not
// expired.
func Active(t store.Token, now time.Time) bool {
	return t.Unreadable == "" && t.Revoked.IsZero() && (t.Expires.IsZero() || now.Before(t.Expires))
}
