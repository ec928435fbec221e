package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/allot-sched/allot/internal/api"
)

// Explain asks why a job's waiting tasks are not running and when the job
// should start.
func (c *Client) Explain(ctx context.Context, job string) (api.Explanation, error) {
	return callJSON[api.Explanation](ctx, c, http.MethodGet, "/v1/jobs/"+url.PathEscape(job)+"/explain", nil)
}
