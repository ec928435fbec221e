package rest

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/control"
	"github.com/allot-sched/allot/internal/store"
)

// Token management: admin only. The secret of a new token is in the answer
// of its creation and nowhere else; the store keeps its hash.

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ManageTokens) {
		return
	}
	var req api.CreateToken
	if !s.decodeJSON(w, r, &req) {
		return
	}
	var expiresIn *time.Duration
	if req.ExpiresIn != nil {
		expiresIn = new(time.Duration(*req.ExpiresIn))
	}
	tok, secret, err := auth.New(auth.Spec{Name: req.Name, Role: auth.Role(req.Role), Queues: req.Queues, Shares: req.Shares,
		Workers: req.Workers, ExpiresIn: expiresIn,
		Limits: store.TokenLimits{MaxPriority: req.MaxPriority, Urgent: req.Urgent, Requestors: req.Requestors,
			SLAGroups: req.SLAGroups, Users: req.Users}}, time.Now())
	if err != nil {
		s.fail(w, err)
		return
	}
	if taken, err := s.nameTaken(r, tok.Name); err != nil {
		s.fail(w, err)
		return
	} else if taken != "" {
		writeError(w, http.StatusConflict, api.Error{Code: api.CodeConflict, Field: "name",
			Message: fmt.Sprintf("name %q is taken by token %s, which is active: revoke it first, or choose another name", tok.Name, taken)})
		return
	}
	if err := s.ctrl.Store().PutToken(r.Context(), tok); err != nil {
		s.fail(w, err)
		return
	}
	s.opt.Logger.Info("token created", "token", tok.ID, "role", tok.Role, "name", tok.Name, "by", principal(r).TokenID)
	writeJSON(w, http.StatusCreated, api.NewToken{Token: tokenView(tok), Secret: secret})
}

// nameTaken returns the ID of an active token whose name is name, or
// whose ID is (a nameless token's jobs record its ID as their submitter),
// or "" when there is none or name is empty. A name says whose jobs are
// whose (GET /v1/jobs?mine=true, the usage of a submitter), so two live
// tokens of one name would be one submitter. The check reads the stored
// tokens before the new one is written: two creations of one name at the
// same instant may both pass. What a token may read does not rest on it:
// that is its scope (see usage).
func (s *Server) nameTaken(r *http.Request, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	toks, err := s.ctrl.Store().Tokens(r.Context())
	if err != nil {
		return "", err
	}
	now := time.Now()
	for _, t := range toks {
		if (t.Name == name || t.ID == name) && auth.Active(t, now) {
			return t.ID, nil
		}
	}
	return "", nil
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ManageTokens) {
		return
	}
	toks, err := s.ctrl.Store().Tokens(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	out := make([]api.Token, 0, len(toks))
	for _, t := range toks {
		out = append(out, tokenView(t))
	}
	writeJSON(w, http.StatusOK, out)
}

// revokeToken revokes a token; the next request with it is refused. The
// last usable admin token cannot be revoked: nobody could manage tokens
// afterwards.
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.ManageTokens) {
		return
	}
	id := r.PathValue("id")
	toks, err := s.ctrl.Store().Tokens(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	now := time.Now()
	target, admins := -1, 0
	for i, t := range toks {
		if t.ID == id {
			target = i
		} else if t.Role == string(auth.Admin) && auth.Active(t, now) {
			admins++
		}
	}
	if target < 0 {
		s.fail(w, fmt.Errorf("%w: token %q", control.ErrNotFound, id))
		return
	}
	if t := toks[target]; t.Role == string(auth.Admin) && auth.Active(t, now) && admins == 0 {
		s.fail(w, fmt.Errorf("%w: token %q is the last usable admin token; create another admin token first", control.ErrConflict, id))
		return
	}
	tok, err := s.ctrl.Store().RevokeToken(r.Context(), id, now)
	if errors.Is(err, store.ErrNotFound) {
		err = fmt.Errorf("%w: token %q", control.ErrNotFound, id)
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	if s.opt.Auth != nil {
		s.opt.Auth.Forget()
	}
	s.opt.Logger.Info("token revoked", "token", tok.ID, "role", tok.Role, "name", tok.Name, "by", principal(r).TokenID)
	writeJSON(w, http.StatusOK, tokenView(tok))
}

// tokenView is a token as the API shows it: everything but the hash.
func tokenView(t store.Token) api.Token {
	out := api.Token{ID: t.ID, Name: t.Name, Role: t.Role, Queues: t.Queues, Shares: t.Shares, Workers: t.Workers, Created: t.Created,
		Unreadable: t.Unreadable}
	if t.Role == string(auth.Submitter) {
		l := t.Limits
		maxPriority := l.MaxPriority
		out.MaxPriority, out.Urgent, out.Requestors, out.SLAGroups, out.Users = &maxPriority, l.Urgent, l.Requestors, l.SLAGroups, l.Users
	}
	if !t.Expires.IsZero() {
		e := t.Expires
		out.Expires = &e
	}
	if !t.Revoked.IsZero() {
		rv := t.Revoked
		out.Revoked = &rv
	}
	return out
}
