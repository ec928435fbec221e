package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/allot-sched/allot/internal/api"
)

// Requeue runs a job's tasks again as new attempts: task "" requeues every
// task that did not succeed, else the one task. A running task is stopped
// and waits again.
func (c *Client) Requeue(ctx context.Context, job, task string) (api.Job, error) {
	path := "/v1/jobs/" + url.PathEscape(job) + "/requeue"
	if task != "" {
		path = "/v1/jobs/" + url.PathEscape(job) + "/tasks/" + url.PathEscape(task) + "/requeue"
	}
	var j api.Job
	err := c.doJSON(ctx, http.MethodPost, path, nil, &j)
	return j, err
}

// CancelTask cancels one task of a job, and the tasks that need it.
func (c *Client) CancelTask(ctx context.Context, job, task string) (api.Job, error) {
	var j api.Job
	err := c.doJSON(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(job)+"/tasks/"+url.PathEscape(task)+"/cancel", nil, &j)
	return j, err
}
