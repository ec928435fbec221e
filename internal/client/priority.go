package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/allot-sched/allot/internal/api"
)

// SetPriority changes a job's priority, and whether it is urgent.
func (c *Client) SetPriority(ctx context.Context, job string, priority int, urgent bool) (api.Job, error) {
	var j api.Job
	err := c.doJSON(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(job)+"/priority", api.PriorityChange{Priority: priority, Urgent: urgent}, &j)
	return j, err
}
