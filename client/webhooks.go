package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/jobd/jobd/api"
)

// CreateWebhook subscribes req.URL to alerts (admin scope). The answer's
// Secret, req's or a new one, signs the deliveries; it is shown only this
// once.
func (c *Client) CreateWebhook(ctx context.Context, req api.WebhookRequest) (*api.WebhookCreated, error) {
	var out api.WebhookCreated
	if _, _, err := c.do(ctx, http.MethodPost, "/api/v1/webhooks", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListWebhooks returns every subscription, oldest first, without secrets.
func (c *Client) ListWebhooks(ctx context.Context) ([]api.Webhook, error) {
	var out api.WebhookList
	if _, _, err := c.do(ctx, http.MethodGet, "/api/v1/webhooks", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Webhooks, nil
}

// GetWebhook returns one subscription, without its secret.
func (c *Client) GetWebhook(ctx context.Context, id string) (*api.Webhook, error) {
	var out api.Webhook
	if _, _, err := c.do(ctx, http.MethodGet, "/api/v1/webhooks/"+url.PathEscape(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateWebhook replaces a subscription by req; its secret is kept unless
// req has one. errors.Is(err, ErrConflict) for a subscription the
// server's configuration owns.
func (c *Client) UpdateWebhook(ctx context.Context, id string, req api.WebhookRequest) (*api.Webhook, error) {
	var out api.Webhook
	if _, _, err := c.do(ctx, http.MethodPut, "/api/v1/webhooks/"+url.PathEscape(id), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteWebhook deletes a subscription.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	_, _, err := c.do(ctx, http.MethodDelete, "/api/v1/webhooks/"+url.PathEscape(id), nil, nil, nil)
	return err
}

// TestWebhook sends a subscription a ping, delivered like any alert, and
// returns the id of its delivery: the job that delivers it (GetJob shows
// its attempts) and the webhook-id it is sent with.
func (c *Client) TestWebhook(ctx context.Context, id string) (string, error) {
	var out api.WebhookTest
	if _, _, err := c.do(ctx, http.MethodPost, "/api/v1/webhooks/"+url.PathEscape(id)+"/test", nil, nil, &out); err != nil {
		return "", err
	}
	return out.DeliveryID, nil
}
