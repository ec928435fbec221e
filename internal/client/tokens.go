package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/allot-sched/allot/internal/api"
)

// CreateToken creates an API token (admin only). The answer carries the
// secret; the server keeps only its hash, so this is the one chance to
// read it.
func (c *Client) CreateToken(ctx context.Context, req api.CreateToken) (api.NewToken, error) {
	var t api.NewToken
	err := c.doJSON(ctx, http.MethodPost, "/v1/tokens", req, &t)
	return t, err
}

// Tokens lists the API tokens, revoked ones included, without secrets
// (admin only).
func (c *Client) Tokens(ctx context.Context) ([]api.Token, error) {
	var ts []api.Token
	err := c.doJSON(ctx, http.MethodGet, "/v1/tokens", nil, &ts)
	return ts, err
}

// RevokeToken revokes a token by ID (admin only); requests with it are
// refused from then on.
func (c *Client) RevokeToken(ctx context.Context, id string) (api.Token, error) {
	var t api.Token
	err := c.doJSON(ctx, http.MethodDelete, "/v1/tokens/"+url.PathEscape(id), nil, &t)
	return t, err
}
