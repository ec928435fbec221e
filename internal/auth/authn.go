package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/allot-sched/allot/internal/store"
)

// ErrUnauthenticated matches every reason a request is not authenticated
// (errors.Is); the API answers all of them with 401.
var ErrUnauthenticated = errors.New("unauthenticated")

// Why a request is not authenticated. Each wraps ErrUnauthenticated.
var (
	ErrMissing   = fmt.Errorf("%w: no bearer token (send the header Authorization: Bearer <token>)", ErrUnauthenticated)
	ErrMalformed = fmt.Errorf("%w: malformed bearer token (want Authorization: Bearer %s…)", ErrUnauthenticated, SecretPrefix)
	ErrUnknown   = fmt.Errorf("%w: unknown token", ErrUnauthenticated)
	ErrRevoked   = fmt.Errorf("%w: the token was revoked", ErrUnauthenticated)
	ErrExpired   = fmt.Errorf("%w: the token expired", ErrUnauthenticated)
	// ErrUnreadable is a token whose stored row could not be read back
	// (store.Token.Unreadable): it authorises nothing until an admin
	// replaces it.
	ErrUnreadable = fmt.Errorf("%w: the token's stored record is damaged; ask an admin for a new token", ErrUnauthenticated)
)

// TokenReader finds a token by the hash of its secret; store.Store is one.
type TokenReader interface {
	TokenByHash(ctx context.Context, hash []byte) (store.Token, error)
}

// DefaultCacheTTL is how long an Authenticator trusts a token it read from
// the store. Revocation through the same server takes effect at once
// (Forget); through another server sharing the store, within this time.
const DefaultCacheTTL = 500 * time.Millisecond

// maxCached bounds the cache; past it, the cache starts again empty.
const maxCached = 10_000

// Authenticator turns an Authorization header into a Principal. It caches
// tokens it found for a short time, so a busy worker fleet does not make a
// store read per request; unknown secrets are not cached, so garbage cannot
// fill the cache. Safe for concurrent use.
type Authenticator struct {
	tokens TokenReader
	clock  func() time.Time // decides expiry; injected by tests
	ttl    time.Duration

	mu    sync.Mutex
	cache map[string]cached // by hash
}

type cached struct {
	tok     store.Token
	fetched time.Time // wall and monotonic: the cache ages in real time
}

// NewAuthenticator authenticates against tokens. clock decides whether a
// token has expired (nil: time.Now); ttl bounds how long a token read from
// the store is trusted (0: DefaultCacheTTL; negative: no cache).
func NewAuthenticator(tokens TokenReader, clock func() time.Time, ttl time.Duration) *Authenticator {
	if clock == nil {
		clock = time.Now
	}
	if ttl == 0 {
		ttl = DefaultCacheTTL
	}
	return &Authenticator{tokens: tokens, clock: clock, ttl: ttl, cache: map[string]cached{}}
}

// Authenticate checks the value of an Authorization header and returns who
// presented it. A refusal wraps ErrUnauthenticated (and one of ErrMissing,
// ErrMalformed, ErrUnknown, ErrRevoked, ErrExpired); any other error is the
// store's.
func (a *Authenticator) Authenticate(ctx context.Context, header string) (Principal, error) {
	secret, err := bearer(header)
	if err != nil {
		return Principal{}, err
	}
	tok, err := a.lookup(ctx, Hash(secret))
	if err != nil {
		return Principal{}, err
	}
	now := a.clock()
	switch {
	case tok.Unreadable != "":
		return Principal{}, fmt.Errorf("%w (%s)", ErrUnreadable, tok.ID)
	case !tok.Revoked.IsZero():
		return Principal{}, fmt.Errorf("%w (%s, at %s)", ErrRevoked, tok.ID, tok.Revoked.Format(time.RFC3339))
	case !tok.Expires.IsZero() && !now.Before(tok.Expires):
		return Principal{}, fmt.Errorf("%w (%s, at %s)", ErrExpired, tok.ID, tok.Expires.Format(time.RFC3339))
	}
	return FromToken(tok), nil
}

// bearer extracts the secret from an Authorization header.
func bearer(header string) (string, error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return "", ErrMissing
	}
	scheme, secret, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", ErrMalformed
	}
	secret = strings.TrimSpace(secret)
	if !WellFormed(secret) {
		return "", ErrMalformed
	}
	return secret, nil
}

func (a *Authenticator) lookup(ctx context.Context, hash []byte) (store.Token, error) {
	key := string(hash)
	if a.ttl > 0 {
		a.mu.Lock()
		c, ok := a.cache[key]
		a.mu.Unlock()
		if ok && time.Since(c.fetched) < a.ttl {
			return c.tok, nil
		}
	}
	tok, err := a.tokens.TokenByHash(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return store.Token{}, ErrUnknown
	}
	if err != nil {
		return store.Token{}, fmt.Errorf("reading the token: %w", err)
	}
	if a.ttl > 0 {
		a.mu.Lock()
		if len(a.cache) >= maxCached {
			clear(a.cache)
		}
		a.cache[key] = cached{tok: tok, fetched: time.Now()}
		a.mu.Unlock()
	}
	return tok, nil
}

// Forget drops every cached token, so a revocation made through this
// server applies to the very next request.
func (a *Authenticator) Forget() {
	a.mu.Lock()
	clear(a.cache)
	a.mu.Unlock()
}

type principalKey struct{}

// NewContext returns ctx carrying p, for the handlers after authentication.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal ctx carries. Without one it returns a
// Principal with no role, which every decision refuses: a handler reached
// without authentication can do nothing.
func FromContext(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}
