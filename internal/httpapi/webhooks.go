package httpapi

import (
	"errors"
	"net/http"
	"unicode/utf8"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/internal/webhook"
	"github.com/jobd/jobd/store"
)

// webhooks returns the webhook service, or the problem of a server
// without one.
func (s *server) webhooks() (*webhook.Service, error) {
	if s.cfg.Webhooks == nil {
		return nil, problem.Errorf(api.ProblemNotFound, "", "webhooks are not served by this handler")
	}
	return s.cfg.Webhooks, nil
}

// createWebhook: POST /api/v1/webhooks {url, events, secret?, filter} →
// 201 with the subscription and its secret, shown this once.
func (s *server) createWebhook(w http.ResponseWriter, r *http.Request) error {
	svc, err := s.webhooks()
	if err != nil {
		return err
	}
	if err := checkQuery(r); err != nil {
		return err
	}
	var req api.WebhookRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	sub, secret, err := svc.Create(r.Context(), req)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/webhooks/"+sub.ID)
	return writeJSON(w, http.StatusCreated, api.WebhookCreated{Webhook: toAPIWebhook(*sub), Secret: secret})
}

// listWebhooks: GET /api/v1/webhooks, oldest first, without secrets.
func (s *server) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	svc, err := s.webhooks()
	if err != nil {
		return err
	}
	if err := checkQuery(r); err != nil {
		return err
	}
	subs, err := svc.List(r.Context())
	if err != nil {
		return err
	}
	out := api.WebhookList{Webhooks: make([]api.Webhook, 0, len(subs))}
	for _, sub := range subs {
		out.Webhooks = append(out.Webhooks, toAPIWebhook(sub))
	}
	return writeJSON(w, http.StatusOK, out)
}

// getWebhook: GET /api/v1/webhooks/{id}, without its secret.
func (s *server) getWebhook(w http.ResponseWriter, r *http.Request) error {
	svc, id, err := s.webhookOf(r)
	if err != nil {
		return err
	}
	sub, err := svc.Get(r.Context(), id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toAPIWebhook(*sub))
}

// updateWebhook: PUT /api/v1/webhooks/{id} replaces a subscription (its
// secret only when the body has one) → 200 without its secret; 409 for
// one the configuration owns.
func (s *server) updateWebhook(w http.ResponseWriter, r *http.Request) error {
	svc, id, err := s.webhookOf(r)
	if err != nil {
		return err
	}
	var req api.WebhookRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	sub, err := svc.Update(r.Context(), id, req)
	if err != nil {
		return configOwned(err)
	}
	return writeJSON(w, http.StatusOK, toAPIWebhook(*sub))
}

// deleteWebhook: DELETE /api/v1/webhooks/{id} → 204; 409 for one the
// configuration owns.
func (s *server) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	svc, id, err := s.webhookOf(r)
	if err != nil {
		return err
	}
	if err := svc.Delete(r.Context(), id); err != nil {
		return configOwned(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// testWebhook: POST /api/v1/webhooks/{id}/test queues a ping, delivered
// like any alert → 202 with its delivery's id (its job, and its
// webhook-id).
func (s *server) testWebhook(w http.ResponseWriter, r *http.Request) error {
	svc, id, err := s.webhookOf(r)
	if err != nil {
		return err
	}
	delivery, err := svc.Test(r.Context(), id)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/jobs/"+delivery.String())
	return writeJSON(w, http.StatusAccepted, api.WebhookTest{DeliveryID: delivery.String()})
}

// webhookOf returns the service and the {id} of a subscription's route,
// whose query must be empty.
func (s *server) webhookOf(r *http.Request) (*webhook.Service, string, error) {
	svc, err := s.webhooks()
	if err != nil {
		return nil, "", err
	}
	if err := checkQuery(r); err != nil {
		return nil, "", err
	}
	id := r.PathValue("id")
	if id == "" || len(id) > 128 || !utf8.ValidString(id) {
		return nil, "", badRequest("id", "id must be a webhook id")
	}
	return svc, id, nil
}

// configOwned answers a change of a subscription the configuration owns
// with a problem that says so.
func configOwned(err error) error {
	if errors.Is(err, webhook.ErrConfigOwned) {
		return problem.Errorf(api.ProblemWrongState, "", "the webhook is owned by the server's configuration (jobd serve --webhooks); change it there")
	}
	return err
}

func toAPIWebhook(w store.Webhook) api.Webhook {
	events := w.Events
	if events == nil {
		events = []string{}
	}
	return api.Webhook{
		ID: w.ID, URL: w.URL, Events: events, Filter: api.WebhookFilter{Queue: w.Queue, Kind: w.Kind},
		SecretSet: w.Secret != "", Config: w.Config, CreatedAt: w.CreatedAt.UTC(), UpdatedAt: w.UpdatedAt.UTC(),
	}
}
