package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/jobd/jobd/api"
)

// Queues returns every queue with its job counts by state, paused flag,
// flow control and throttles.
func (c *Client) Queues(ctx context.Context) ([]api.Queue, error) {
	var out api.QueueList
	if _, _, err := c.do(ctx, http.MethodGet, "/api/v1/queues", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Queues, nil
}

// PauseQueue stops every node from claiming jobs of queue.
func (c *Client) PauseQueue(ctx context.Context, queue string) (*api.Queue, error) {
	return c.queueAction(ctx, queue, "pause")
}

// ResumeQueue lets nodes claim jobs of queue again.
func (c *Client) ResumeQueue(ctx context.Context, queue string) (*api.Queue, error) {
	return c.queueAction(ctx, queue, "resume")
}

// SetQueueLimits replaces the flow control of queue (PUT
// /api/v1/queues/{name}): limits is the whole of it, a member left zero
// limits nothing, and api.QueueLimits{} clears every limit. Every node
// applies it from its next claim. It needs an admin key; a bad member is
// an *Error whose Problem.Field names it ("rate.period").
func (c *Client) SetQueueLimits(ctx context.Context, queue string, limits api.QueueLimits) (*api.Queue, error) {
	var out api.Queue
	if _, _, err := c.do(ctx, http.MethodPut, "/api/v1/queues/"+url.PathEscape(queue), nil, limits, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *Client) queueAction(ctx context.Context, queue, action string) (*api.Queue, error) {
	var out api.Queue
	if _, _, err := c.do(ctx, http.MethodPost, "/api/v1/queues/"+url.PathEscape(queue)+"/"+action, nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateKey creates an API key with scopes (api.ScopeSubmit, ScopeRead,
// ScopeCancel, ScopeAdmin, ScopeMetrics). The returned Key.Key is the
// secret, shown only this once.
func (c *Client) CreateKey(ctx context.Context, name string, scopes []string) (*api.Key, error) {
	return c.CreateKeyWith(ctx, api.KeyRequest{Name: name, Scopes: scopes})
}

// CreateKeyWith creates the API key req describes: with req.Queues, a key
// limited to those queues (names and NAME.* prefixes), which submits only
// to them and reads and cancels only their jobs. Bad queues, or queues
// for a key of scope admin or metrics, are an *Error whose Problem.Field
// is "queues". The returned Key.Key is the secret, shown only this once.
func (c *Client) CreateKeyWith(ctx context.Context, req api.KeyRequest) (*api.Key, error) {
	var out api.Key
	if _, _, err := c.do(ctx, http.MethodPost, "/api/v1/keys", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListKeys returns every API key, oldest first, without secrets.
func (c *Client) ListKeys(ctx context.Context) ([]api.Key, error) {
	var out api.KeyList
	if _, _, err := c.do(ctx, http.MethodGet, "/api/v1/keys", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Keys, nil
}

// RevokeKey deletes an API key by id.
func (c *Client) RevokeKey(ctx context.Context, id string) error {
	_, _, err := c.do(ctx, http.MethodDelete, "/api/v1/keys/"+url.PathEscape(id), nil, nil, nil)
	return err
}

// Status returns the server's status: database reachable, version,
// uptime, job counts. errors.Is(err, ErrUnavailable) when the database
// does not answer.
func (c *Client) Status(ctx context.Context) (*api.Status, error) {
	var out api.Status
	if _, _, err := c.do(ctx, http.MethodGet, "/status", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
