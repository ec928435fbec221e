package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/model"
	"github.com/allot-sched/allot/internal/store"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// specCase is a token description and the field its check must name
// ("" = valid).
type specCase struct {
	name  string
	s     Spec
	field string
}

func TestSpecCheckNamesTheField(t *testing.T) {
	checkSpecs(t, []specCase{
		{"admin", Spec{Role: Admin}, ""},
		{"submitter", Spec{Role: Submitter, Queues: []string{"batch"}, Shares: []string{"research"}, ExpiresIn: new(time.Hour)}, ""},
		{"submitter with any", Spec{Role: Submitter, Queues: []string{Any}, Shares: []string{Any}}, ""},
		{"worker prefix", Spec{Role: Worker, Workers: []string{"gpu-*", "cpu-1", "*"}}, ""},
		{"no role", Spec{}, "role"},
		{"unknown role", Spec{Role: "root"}, "role"},
		{"submitter without queues", Spec{Role: Submitter, Shares: []string{"a"}}, "queues"},
		{"submitter without shares", Spec{Role: Submitter, Queues: []string{"a"}}, "shares"},
		{"submitter with workers", Spec{Role: Submitter, Queues: []string{"a"}, Shares: []string{"a"}, Workers: []string{"w"}}, "workers"},
		{"worker without names", Spec{Role: Worker}, "workers"},
		{"worker with shares", Spec{Role: Worker, Workers: []string{"w"}, Shares: []string{"a"}}, "shares"},
		{"admin with queues", Spec{Role: Admin, Queues: []string{"a"}}, "queues"},
		{"empty entry", Spec{Role: Submitter, Queues: []string{"a", ""}, Shares: []string{"a"}}, "queues[1]"},
		{"space in entry", Spec{Role: Submitter, Queues: []string{"a"}, Shares: []string{"re search"}}, "shares[0]"},
		{"prefix pattern for a share", Spec{Role: Submitter, Queues: []string{"a"}, Shares: []string{"res*"}}, "shares[0]"},
		{"star inside a worker pattern", Spec{Role: Worker, Workers: []string{"gpu-*-a"}}, "workers[0]"},
		{"long entry", Spec{Role: Worker, Workers: []string{strings.Repeat("w", MaxNameLen+1)}}, "workers[0]"},
		{"too many entries", Spec{Role: Worker, Workers: make([]string, MaxScopeItems+1)}, "workers"},
		{"long name", Spec{Role: Admin, Name: strings.Repeat("n", MaxNameLen+1)}, "name"},
		{"control character in name", Spec{Role: Admin, Name: "a\nb"}, "name"},
		{"negative expiry", Spec{Role: Admin, ExpiresIn: new(-time.Second)}, "expiresIn"},
		{"an expiry past what the store keeps", Spec{Role: Admin, ExpiresIn: new(2562047 * time.Hour)}, "expiresIn"},
		{"an expiry past ten years", Spec{Role: Admin, ExpiresIn: new(MaxExpiresIn + time.Second)}, "expiresIn"},
		{"an expiry of 0 (never is no expiry at all)", Spec{Role: Admin, ExpiresIn: new(time.Duration(0))}, "expiresIn"},
	})
}

// checkSpecs runs Spec.Check on each case and compares the first field it
// names.
func checkSpecs(t *testing.T, cases []specCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Check()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Check = %v, want valid", err)
				}
				return
			}
			var errs model.FieldErrors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("Check = %v, want model.FieldErrors", err)
			}
			if errs[0].Path != tc.field {
				t.Errorf("field %q, want %q (%v)", errs[0].Path, tc.field, err)
			}
		})
	}
}

func TestNewTokenKeepsOnlyTheHashOfItsSecret(t *testing.T) {
	tok, secret, err := New(Spec{Name: "alice", Role: Submitter, Queues: []string{"gpu", "batch", "gpu"}, Shares: []string{"research"},
		ExpiresIn: new(720 * time.Hour)}, t0.In(time.FixedZone("x", 7200)))
	if err != nil {
		t.Fatal(err)
	}
	if !WellFormed(secret) || !strings.HasPrefix(secret, "allot_") {
		t.Fatalf("secret %q is not well formed", secret)
	}
	sum := sha256.Sum256([]byte(secret))
	if !bytes.Equal(tok.Hash, sum[:]) {
		t.Errorf("hash %x, want SHA-256 of the secret %x", tok.Hash, sum)
	}
	if strings.Contains(string(tok.Hash)+tok.ID+tok.Name, secret[len(SecretPrefix):len(SecretPrefix)+8]) {
		t.Errorf("the token record carries part of the secret: %+v", tok)
	}
	if !strings.HasPrefix(tok.ID, "tok-") || len(tok.ID) != 16 {
		t.Errorf("id %q", tok.ID)
	}
	if !tok.Created.Equal(t0) || tok.Created.Location() != time.UTC || !tok.Expires.Equal(t0.Add(720*time.Hour)) {
		t.Errorf("created %s expires %s", tok.Created, tok.Expires)
	}
	if strings.Join(tok.Queues, ",") != "batch,gpu" {
		t.Errorf("queues %q, want sorted without repeats", tok.Queues)
	}
	_, other, _ := New(Spec{Role: Admin}, t0)
	if other == secret {
		t.Error("two tokens got the same secret")
	}
	if _, _, err := New(Spec{Role: Submitter}, t0); err == nil {
		t.Error("New accepted an invalid spec")
	}
}

func TestWellFormedSecrets(t *testing.T) {
	good := NewSecret()
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{good, true},
		{"", false},
		{good[:len(good)-1], false},
		{good + "A", false},
		{"allot-" + good[6:], false},
		{good[:10] + "!" + good[11:], false},
		{"Bearer " + good, false},
	} {
		if got := WellFormed(tc.s); got != tc.want {
			t.Errorf("WellFormed(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

// memTokens is a TokenReader over a map, counting reads.
type memTokens struct {
	byHash map[string]store.Token
	reads  atomic.Int64
	err    error
}

func (m *memTokens) TokenByHash(_ context.Context, hash []byte) (store.Token, error) {
	m.reads.Add(1)
	if m.err != nil {
		return store.Token{}, m.err
	}
	t, ok := m.byHash[string(hash)]
	if !ok {
		return store.Token{}, store.ErrNotFound
	}
	return t, nil
}

func (m *memTokens) add(t *testing.T, s Spec, edit func(*store.Token)) string {
	t.Helper()
	tok, secret, err := New(s, t0)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&tok)
	}
	m.byHash[string(tok.Hash)] = tok
	return secret
}

func TestAuthenticateRefusesEveryBadToken(t *testing.T) {
	m := &memTokens{byHash: map[string]store.Token{}}
	good := m.add(t, Spec{Name: "alice", Role: Submitter, Queues: []string{"q"}, Shares: []string{"s"}}, nil)
	revoked := m.add(t, Spec{Role: Admin}, func(tok *store.Token) { tok.Revoked = t0.Add(time.Minute) })
	expired := m.add(t, Spec{Role: Admin, ExpiresIn: new(time.Hour)}, nil)
	notYet := m.add(t, Spec{Role: Worker, Workers: []string{"w"}, ExpiresIn: new(3 * time.Hour)}, nil)
	unreadable := m.add(t, Spec{Role: Admin}, func(tok *store.Token) { tok.Unreadable = "scope: invalid JSON" })
	now := t0.Add(2 * time.Hour)
	a := NewAuthenticator(m, func() time.Time { return now }, -1)
	cases := []struct {
		name, header string
		want         error // nil: authenticated
	}{
		{"good", "Bearer " + good, nil},
		{"scheme in lower case", "bearer " + good, nil},
		{"not expired yet", "Bearer " + notYet, nil},
		{"missing", "", ErrMissing},
		{"blank", "   ", ErrMissing},
		{"basic scheme", "Basic dXNlcjpwYXNz", ErrMalformed},
		{"no scheme", good, ErrMalformed},
		{"not an allot secret", "Bearer hunter2", ErrMalformed},
		{"truncated", "Bearer " + good[:len(good)-2], ErrMalformed},
		{"unknown", "Bearer " + NewSecret(), ErrUnknown},
		{"revoked", "Bearer " + revoked, ErrRevoked},
		{"expired", "Bearer " + expired, ErrExpired},
		{"stored row unreadable", "Bearer " + unreadable, ErrUnreadable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := a.Authenticate(t.Context(), tc.header)
			if tc.want == nil {
				if err != nil || p.Role == "" || p.TokenID == "" {
					t.Fatalf("Authenticate = %+v, %v; want a principal", p, err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("Authenticate = %v, want %v", err, tc.want)
			}
		})
	}
	p, _ := a.Authenticate(t.Context(), "Bearer "+good)
	if p.Name != "alice" || p.Role != Submitter || strings.Join(p.Shares, ",") != "s" {
		t.Errorf("principal %+v does not carry the token's scope", p)
	}
	m.err = errors.New("disk on fire")
	if _, err := a.Authenticate(t.Context(), "Bearer "+good); err == nil || errors.Is(err, ErrUnauthenticated) {
		t.Errorf("a store failure gave %v; want the store's error, not a 401", err)
	}
}

func TestAuthenticatorCachesBrieflyAndForgets(t *testing.T) {
	m := &memTokens{byHash: map[string]store.Token{}}
	secret := m.add(t, Spec{Role: Admin}, nil)
	ttl := 200 * time.Millisecond
	a := NewAuthenticator(m, nil, ttl)
	ctx := t.Context()
	for range 50 {
		if _, err := a.Authenticate(ctx, "Bearer "+secret); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.reads.Load(); n != 1 {
		t.Errorf("%d store reads for 50 requests within the cache time, want 1", n)
	}
	// Revoked behind the authenticator's back (another server): refused
	// once the cached copy is older than the cache time.
	h := string(Hash(secret))
	tok := m.byHash[h]
	tok.Revoked = t0
	m.byHash[h] = tok
	start := time.Now()
	for {
		_, err := a.Authenticate(ctx, "Bearer "+secret)
		if errors.Is(err, ErrRevoked) {
			break
		}
		if time.Since(start) > 5*ttl {
			t.Fatalf("revoked token still accepted after %s", time.Since(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Revoked through this server: Forget applies it to the next request.
	other := m.add(t, Spec{Role: Admin}, nil)
	if _, err := a.Authenticate(ctx, "Bearer "+other); err != nil {
		t.Fatal(err)
	}
	h = string(Hash(other))
	tok = m.byHash[h]
	tok.Revoked = t0
	m.byHash[h] = tok
	a.Forget()
	if _, err := a.Authenticate(ctx, "Bearer "+other); !errors.Is(err, ErrRevoked) {
		t.Errorf("after Forget: %v, want ErrRevoked", err)
	}
	// Unknown secrets are not cached: each costs a read, none stays.
	before := m.reads.Load()
	for range 3 {
		_, _ = a.Authenticate(ctx, "Bearer "+NewSecret())
	}
	if n := m.reads.Load() - before; n != 3 {
		t.Errorf("%d reads for 3 unknown secrets, want 3", n)
	}
}

// fileTokens is a TokenStore over a slice.
type fileTokens struct {
	memTokens
	list []store.Token
	put  error
}

func (f *fileTokens) PutToken(_ context.Context, t store.Token) error {
	if f.put != nil {
		return f.put
	}
	f.list = append(f.list, t)
	f.byHash[string(t.Hash)] = t
	return nil
}

func (f *fileTokens) Tokens(context.Context) ([]store.Token, error) { return f.list, nil }

func TestBootstrapCreatesOneAdminTokenInAPrivateFile(t *testing.T) {
	st := &fileTokens{memTokens: memTokens{byHash: map[string]store.Token{}}}
	path := filepath.Join(t.TempDir(), AdminTokenFile)
	tok, created, err := Bootstrap(t.Context(), st, path, t0)
	if err != nil || !created || tok.Role != string(Admin) {
		t.Fatalf("Bootstrap = %+v, %v, %v", tok, created, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("%s has mode %o, want 600", path, mode)
	}
	raw, _ := os.ReadFile(path)
	p, err := NewAuthenticator(st, func() time.Time { return t0 }, -1).Authenticate(t.Context(), "Bearer "+strings.TrimSpace(string(raw)))
	if err != nil || p.Role != Admin || p.TokenID != tok.ID {
		t.Fatalf("the file's secret authenticates as %+v, %v; want the admin token", p, err)
	}
	// A second start finds tokens and leaves the store and the file alone.
	if _, created, err := Bootstrap(t.Context(), st, path, t0.Add(time.Hour)); err != nil || created {
		t.Fatalf("second Bootstrap: created %v, %v", created, err)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, raw) || len(st.list) != 1 {
		t.Errorf("second Bootstrap changed the file or added a token (%d tokens)", len(st.list))
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestBootstrapThatCannotStoreLeavesNoUsableToken(t *testing.T) {
	st := &fileTokens{memTokens: memTokens{byHash: map[string]store.Token{}}, put: errors.New("store down")}
	path := filepath.Join(t.TempDir(), AdminTokenFile)
	if _, _, err := Bootstrap(t.Context(), st, path, t0); err == nil {
		t.Fatal("Bootstrap succeeded although the token could not be stored")
	}
	if len(st.list) != 0 {
		t.Errorf("tokens stored: %+v", st.list)
	}
	// The next start tries again and replaces the file.
	st.put = nil
	if _, created, err := Bootstrap(t.Context(), st, path, t0); err != nil || !created {
		t.Fatalf("retry: created %v, %v", created, err)
	}
}

// sharedTokens is a FirstTokenStore on which another server was first:
// PutFirstToken stores nothing.
type sharedTokens struct {
	fileTokens
	first bool // whether this server's token is the first
}

func (s *sharedTokens) PutFirstToken(ctx context.Context, t store.Token) (bool, error) {
	if !s.first {
		return false, nil
	}
	return true, s.PutToken(ctx, t)
}

// On a store that servers share, the server that was not first to store
// the admin token keeps no file with a secret nobody can use.
func TestBootstrapOnASharedStoreKeepsTheFileOnlyWhereTheTokenWasStored(t *testing.T) {
	for _, first := range []bool{true, false} {
		st := &sharedTokens{fileTokens: fileTokens{memTokens: memTokens{byHash: map[string]store.Token{}}}, first: first}
		path := filepath.Join(t.TempDir(), AdminTokenFile)
		_, created, err := Bootstrap(t.Context(), st, path, t0)
		if err != nil || created != first {
			t.Fatalf("first=%v: Bootstrap created %v, %v", first, created, err)
		}
		_, statErr := os.Stat(path)
		if first != (statErr == nil) || len(st.list) != map[bool]int{true: 1, false: 0}[first] {
			t.Errorf("first=%v: file there: %v, tokens stored %d", first, statErr == nil, len(st.list))
		}
	}
}
