package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/allot-sched/allot/internal/api"
)

// Hold holds a job: it keeps its place in its queue but starts no task
// until Release. The token's name is recorded as who holds it.
func (c *Client) Hold(ctx context.Context, job string) (api.Job, error) {
	var j api.Job
	err := c.doJSON(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(job)+"/hold", nil, &j)
	return j, err
}

// Release releases a held job; its waiting tasks may start again.
func (c *Client) Release(ctx context.Context, job string) (api.Job, error) {
	var j api.Job
	err := c.doJSON(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(job)+"/release", nil, &j)
	return j, err
}

// SetResources changes what every task of a pending job asks for; the
// fields ch leaves out keep each task's own.
func (c *Client) SetResources(ctx context.Context, job string, ch api.ResourcesChange) (api.Job, error) {
	var j api.Job
	err := c.doJSON(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(job)+"/resources", ch, &j)
	return j, err
}
