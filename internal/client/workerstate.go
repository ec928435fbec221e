package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/allot-sched/allot/internal/api"
)

// SetWorkerState drains ("draining"), disables ("disabled") or enables
// ("ready") a worker.
func (c *Client) SetWorkerState(ctx context.Context, worker, state string) (api.Worker, error) {
	var w api.Worker
	err := c.doJSON(ctx, http.MethodPost, "/v1/workers/"+url.PathEscape(worker)+"/state", map[string]string{"state": state}, &w)
	return w, err
}
