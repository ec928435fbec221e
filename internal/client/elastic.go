package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/allot-sched/allot/internal/api"
)

// ToggleElastic switches a worker off (enabled false) or back on by hand
// (POST /v1/workers/{name}/elastic). Inside the elastic coordinator's
// toggle cooldown the server refuses with a conflict (IsConflict).
func (c *Client) ToggleElastic(ctx context.Context, worker string, enabled bool) (api.Worker, error) {
	return callJSON[api.Worker](ctx, c, http.MethodPost, "/v1/workers/"+url.PathEscape(worker)+"/elastic", api.ElasticToggle{Enabled: &enabled})
}

// HeartbeatCache tells the server the worker is alive and which models and
// datasets it holds (cache hints for context reuse). With no hints it is
// a plain heartbeat.
func (c *Client) HeartbeatCache(ctx context.Context, worker string, hints []api.CacheHint) error {
	if len(hints) == 0 {
		return c.Heartbeat(ctx, worker)
	}
	return c.doJSON(ctx, http.MethodPost, "/v1/workers/"+url.PathEscape(worker)+"/heartbeat", api.Heartbeat{Cache: hints}, nil)
}

// Density returns the server's task/worker density series (GET
// /v1/density).
func (c *Client) Density(ctx context.Context) (api.Density, error) {
	return callJSON[api.Density](ctx, c, http.MethodGet, "/v1/density", nil)
}
