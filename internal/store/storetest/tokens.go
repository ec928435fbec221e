package storetest

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/store"
)

// newToken builds a token whose hash is derived from id, so two tokens
// differ in both keys unless a test says otherwise.
func newToken(id, role string, created time.Time) store.Token {
	return store.Token{ID: id, Hash: bytes.Repeat([]byte(id), 32/len(id)+1)[:32], Name: "name of " + id, Role: role, Created: created}
}

func mustPutToken(t *testing.T, s store.Store, tok store.Token) {
	t.Helper()
	if err := s.PutToken(t.Context(), tok); err != nil {
		t.Fatalf("PutToken(%s): %v", tok.ID, err)
	}
}

func allTokens(t *testing.T, s store.Store) []store.Token {
	t.Helper()
	toks, err := s.Tokens(t.Context())
	if err != nil {
		t.Fatalf("Tokens: %v", err)
	}
	return toks
}

func testTokensRoundTrip(t *testing.T, o opener) {
	s := o.store(t)
	ctx := t.Context()
	if toks := allTokens(t, s); len(toks) != 0 {
		t.Fatalf("Tokens of an empty store = %+v", toks)
	}
	admin := newToken("tok-admin", "admin", t0)
	sub := newToken("tok-sub", "submitter", t0.Add(time.Second))
	sub.Queues, sub.Shares, sub.Expires = []string{"batch", "gpu"}, []string{"research", "*"}, t0.Add(720*time.Hour)
	wk := newToken("tok-wk", "worker", t0.Add(time.Second)) // same Created: ordered by ID
	wk.Workers, wk.Queues, wk.Shares = []string{"gpu-*", "cpu-1"}, []string{}, nil
	// Stored out of order: Tokens sorts by creation, then ID.
	for _, tok := range []store.Token{sub, wk, admin} {
		mustPutToken(t, s, tok)
	}
	wk.Queues = nil // empty reads back as nil
	equal(t, "Tokens", allTokens(t, s), []store.Token{admin, sub, wk})
	for _, want := range []store.Token{admin, sub, wk} {
		got, err := s.TokenByHash(ctx, want.Hash)
		if err != nil {
			t.Fatalf("TokenByHash(%s): %v", want.ID, err)
		}
		equal(t, "TokenByHash("+want.ID+")", got, want)
	}
	if _, err := s.TokenByHash(ctx, []byte("no such hash")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TokenByHash(unknown): err = %v, want ErrNotFound", err)
	}
}

func testTokenLimitsRoundTrip(t *testing.T, o opener) {
	s := o.store(t)
	plain := newToken("tok-plain", "submitter", t0)
	plain.Queues, plain.Shares = []string{"*"}, []string{"*"}
	limited := newToken("tok-limited", "submitter", t0.Add(time.Second))
	limited.Queues, limited.Shares = []string{"*"}, []string{"*"}
	limited.Limits = store.TokenLimits{MaxPriority: 9999, Urgent: true, Requestors: []string{"ci", "team-a-*"},
		SLAGroups: []string{"gold"}, Users: []string{"svc-*"}}
	emptyLists := newToken("tok-empty", "submitter", t0.Add(2*time.Second))
	emptyLists.Limits = store.TokenLimits{MaxPriority: 3, Requestors: []string{}, SLAGroups: []string{}}
	for _, tok := range []store.Token{plain, limited, emptyLists} {
		mustPutToken(t, s, tok)
	}
	emptyLists.Limits.Requestors, emptyLists.Limits.SLAGroups = nil, nil // empty reads back as nil
	equal(t, "Tokens", allTokens(t, s), []store.Token{plain, limited, emptyLists})
	got, err := s.TokenByHash(t.Context(), limited.Hash)
	if err != nil {
		t.Fatalf("TokenByHash: %v", err)
	}
	equal(t, "TokenByHash", got, limited)
	revoked, err := s.RevokeToken(t.Context(), limited.ID, t0.Add(time.Hour))
	if err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	limited.Revoked = t0.Add(time.Hour)
	equal(t, "revoked token", revoked, limited)
}

func testTokenDuplicate(t *testing.T, o opener) {
	s := o.store(t)
	first := newToken("tok-1", "admin", t0)
	mustPutToken(t, s, first)
	sameID := newToken("tok-1", "worker", t0.Add(time.Hour))
	sameID.Hash = []byte("another hash")
	sameHash := newToken("tok-2", "worker", t0.Add(time.Hour))
	sameHash.Hash = first.Hash
	for name, tok := range map[string]store.Token{"SameID": sameID, "SameHash": sameHash} {
		t.Run(name, func(t *testing.T) {
			if err := s.PutToken(t.Context(), tok); !errors.Is(err, store.ErrDuplicate) {
				t.Fatalf("PutToken: err = %v, want ErrDuplicate", err)
			}
			equal(t, "Tokens", allTokens(t, s), []store.Token{first})
		})
	}
}

func testTokenInvalid(t *testing.T, o opener) {
	s := o.store(t)
	for _, tc := range []struct {
		name string
		edit func(*store.Token)
	}{
		{"EmptyID", func(tok *store.Token) { tok.ID = "" }},
		{"EmptyHash", func(tok *store.Token) { tok.Hash = nil }},
		{"EmptyRole", func(tok *store.Token) { tok.Role = "" }},
		{"ExpiresOutOfRange", func(tok *store.Token) { tok.Expires = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := newToken("tok-x", "admin", t0)
			tc.edit(&tok)
			if err := s.PutToken(t.Context(), tok); !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("PutToken: err = %v, want ErrInvalid", err)
			}
			if toks := allTokens(t, s); len(toks) != 0 {
				t.Fatalf("a refused token was stored: %+v", toks)
			}
		})
	}
}

func testRevokeToken(t *testing.T, o opener) {
	s := o.store(t)
	ctx := t.Context()
	a, b := newToken("tok-a", "admin", t0), newToken("tok-b", "submitter", t0)
	mustPutToken(t, s, a)
	mustPutToken(t, s, b)
	at := t0.Add(90 * time.Minute)
	got, err := s.RevokeToken(ctx, "tok-a", at.In(time.FixedZone("x", 3600)))
	if err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	a.Revoked = at
	equal(t, "revoked token", got, a)
	if got, err = s.RevokeToken(ctx, "tok-a", at.Add(time.Hour)); err != nil {
		t.Fatalf("RevokeToken again: %v", err)
	}
	equal(t, "token revoked twice", got, a)
	if got, err := s.TokenByHash(ctx, a.Hash); err != nil || !got.Revoked.Equal(at) {
		t.Errorf("TokenByHash after revoke = %+v, %v; want Revoked %s", got, err, at)
	}
	equal(t, "Tokens after revoke", allTokens(t, s), []store.Token{a, b})
	if _, err := s.RevokeToken(ctx, "tok-none", at); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeToken(unknown): err = %v, want ErrNotFound", err)
	}
}
