package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Backend opens a store of one kind. location is what follows "scheme://"
// in the store's URL: a file path for sqlite, a connection string for a
// server database.
type Backend func(ctx context.Context, location string) (Store, error)

// ErrNotBuiltIn is a store URL whose backend this binary does not have.
var ErrNotBuiltIn = errors.New("store backend not built into this binary")

var (
	backendsMu sync.RWMutex
	backends   = map[string]Backend{}
)

// Register makes a backend available to Open under scheme ("sqlite").
// Backend packages call it from init, so a binary has the backends it
// imports (cmd/allot imports store/sqlite and store/postgres); a second
// registration of a scheme panics.
func Register(scheme string, open Backend) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if _, dup := backends[scheme]; dup {
		panic("store: backend " + scheme + " registered twice")
	}
	backends[scheme] = open
}

// Schemes lists the registered backends, sorted.
func Schemes() []string {
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	out := make([]string, 0, len(backends))
	for s := range backends {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Open opens the store rawURL names: "sqlite:///var/lib/allot/allot.db"
// (or "sqlite://:memory:"), or a plain file path, which means SQLite;
// "postgres://user@host/db?…" for PostgreSQL. Every store is opened
// through here, so a new backend is one Register call away from the
// server. A URL whose backend is not in this binary is ErrNotBuiltIn, with
// a message that says so.
func Open(ctx context.Context, rawURL string) (Store, error) {
	scheme, location, ok := strings.Cut(rawURL, "://")
	if !ok {
		scheme, location = "sqlite", rawURL
	}
	scheme = strings.ToLower(scheme)
	backendsMu.RLock()
	open, found := backends[scheme]
	backendsMu.RUnlock()
	if !found {
		return nil, fmt.Errorf("store %q: %w: unknown scheme %q (known: %s)", redact(rawURL), ErrNotBuiltIn, scheme, strings.Join(Schemes(), ", "))
	}
	return open(ctx, location)
}

// redact drops what may be a password from a URL quoted in an error: the
// part before the last "@" of its authority.
func redact(rawURL string) string {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return rawURL
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if slash := strings.Index(rest, "/"); slash < 0 || at < slash {
			rest = "…@" + rest[at+1:]
		}
	}
	return scheme + "://" + rest
}
