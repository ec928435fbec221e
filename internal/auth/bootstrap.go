package auth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/allot-sched/allot/internal/store"
)

// AdminTokenFile is the file, in the server's data directory, that receives
// the secret of the first admin token.
const AdminTokenFile = "admin.token"

// TokenStore is the part of store.Store that manages tokens.
type TokenStore interface {
	TokenReader
	PutToken(ctx context.Context, t store.Token) error
	Tokens(ctx context.Context) ([]store.Token, error)
}

// FirstTokenStore is a store that several servers share (PostgreSQL): it
// stores a token only while it holds none, atomically, so that of servers
// bootstrapping a new database together exactly one makes the first admin
// token.
type FirstTokenStore interface {
	PutFirstToken(ctx context.Context, t store.Token) (bool, error)
}

// Bootstrap lets the operator of a new server in: when the store holds no
// token at all, it creates an admin token and writes its secret to path,
// readable by the owner only (0600). It returns the token and true when it
// made one; a store that has tokens is left alone, and so is the file.
//
// The file is written (and synced) before the token is stored: a crash in
// between leaves a file with a useless secret and an empty token table, and
// the next start simply writes both again. The other order could store an
// admin token whose secret nobody has.
//
// On a FirstTokenStore, the server that stores the first token keeps the
// file; one that finds another server was first removes the file it
// wrote and returns false.
func Bootstrap(ctx context.Context, st TokenStore, path string, now time.Time) (store.Token, bool, error) {
	toks, err := st.Tokens(ctx)
	if err != nil {
		return store.Token{}, false, fmt.Errorf("bootstrap: listing tokens: %w", err)
	}
	if len(toks) > 0 {
		return store.Token{}, false, nil
	}
	tok, secret, err := New(Spec{Name: "bootstrap admin", Role: Admin}, now)
	if err != nil {
		return store.Token{}, false, err
	}
	if err := writeSecret(path, secret); err != nil {
		return store.Token{}, false, fmt.Errorf("bootstrap: %w", err)
	}
	if first, ok := st.(FirstTokenStore); ok {
		stored, err := first.PutFirstToken(ctx, tok)
		if err != nil {
			return store.Token{}, false, fmt.Errorf("bootstrap: storing the admin token: %w", err)
		}
		if !stored {
			if err := os.Remove(path); err != nil {
				return store.Token{}, false, fmt.Errorf("bootstrap: another server made the first admin token; removing %s: %w", path, err)
			}
			return store.Token{}, false, nil
		}
		return tok, true, nil
	}
	if err := st.PutToken(ctx, tok); err != nil {
		return store.Token{}, false, fmt.Errorf("bootstrap: storing the admin token: %w", err)
	}
	return tok, true, nil
}

// writeSecret replaces path with secret and a newline, mode 0600, through a
// temporary file and a rename, so a reader never sees half a secret.
func writeSecret(path, secret string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	// CreateTemp makes the file 0600 already; say so, in case that changes.
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, werr := tmp.WriteString(secret + "\n")
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
