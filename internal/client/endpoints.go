package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/model"
)

// Endpoints lists the endpoints with their configuration and scheduling
// metrics, and the throttling settings in force.
func (c *Client) Endpoints(ctx context.Context) (api.EndpointList, error) {
	return callJSON[api.EndpointList](ctx, c, http.MethodGet, "/v1/endpoints", nil)
}

// SetEndpoint adds or replaces an endpoint at run time. endpoint is the
// endpoint block as the configuration file writes it (a model.EndpointSpec, or a
// json.RawMessage sent as is).
func (c *Client) SetEndpoint(ctx context.Context, name string, endpoint any) (api.Endpoint, error) {
	return callJSON[api.Endpoint](ctx, c, http.MethodPut, "/v1/endpoints/"+url.PathEscape(name), endpoint)
}

// RemoveEndpoint removes an endpoint at run time.
func (c *Client) RemoveEndpoint(ctx context.Context, name string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/endpoints/"+url.PathEscape(name), nil, nil)
}

// Throttling returns the throttling settings in force, every field set.
func (c *Client) Throttling(ctx context.Context) (model.ThrottlingSpec, error) {
	return callJSON[model.ThrottlingSpec](ctx, c, http.MethodGet, "/v1/throttling", nil)
}

// SetThrottling replaces the throttling settings; omitted fields take the
// defaults, so change a field of what Throttling returned.
func (c *Client) SetThrottling(ctx context.Context, t model.ThrottlingSpec) (model.ThrottlingSpec, error) {
	return callJSON[model.ThrottlingSpec](ctx, c, http.MethodPut, "/v1/throttling", t)
}

// DeadLetters lists the jobs whose inputs could not be read, oldest first.
func (c *Client) DeadLetters(ctx context.Context) (api.DeadLetterList, error) {
	return callJSON[api.DeadLetterList](ctx, c, http.MethodGet, "/v1/deadletters", nil)
}

// Redrive checks a dead-lettered job's inputs again and submits it, or
// leaves it on the list with the new reason (Redriven false).
func (c *Client) Redrive(ctx context.Context, job string) (api.Redriven, error) {
	return callJSON[api.Redriven](ctx, c, http.MethodPost, "/v1/deadletters/"+url.PathEscape(job)+"/redrive", nil)
}
