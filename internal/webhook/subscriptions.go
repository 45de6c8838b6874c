package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// ErrConfigOwned is the error of a change, through the API, of a
// subscription the server's configuration owns (jobd serve --webhooks):
// it wraps job.ErrWrongState (409).
var ErrConfigOwned = fmt.Errorf("the subscription is owned by the server's configuration (--webhooks); change it there: %w", job.ErrWrongState)

// Create stores a new subscription of req, with req's secret or a new
// one, and returns it with its secret (to show once).
func (s *Service) Create(ctx context.Context, req api.WebhookRequest) (*store.Webhook, string, error) {
	w, err := subscription(req)
	if err != nil {
		return nil, "", err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, "", err
	}
	w.ID = id.String()
	if w.Secret == "" {
		if w.Secret, err = NewSecret(); err != nil {
			return nil, "", err
		}
	}
	if err := s.store.WebhookCreate(ctx, w); err != nil {
		return nil, "", err
	}
	created, err := s.store.WebhookGet(ctx, w.ID)
	if err != nil {
		return nil, "", err
	}
	return created, w.Secret, nil
}

// Get returns a subscription, or job.ErrNotFound.
func (s *Service) Get(ctx context.Context, id string) (*store.Webhook, error) {
	return s.store.WebhookGet(ctx, id)
}

// List returns every subscription, oldest first.
func (s *Service) List(ctx context.Context) ([]store.Webhook, error) {
	return s.store.WebhookList(ctx)
}

// Update replaces a subscription by req (its secret only when req has
// one); ErrConfigOwned for one the configuration owns.
func (s *Service) Update(ctx context.Context, id string, req api.WebhookRequest) (*store.Webhook, error) {
	w, err := subscription(req)
	if err != nil {
		return nil, err
	}
	w.ID = id
	var out *store.Webhook
	err = s.store.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
		cur, err := ex.WebhookGet(ctx, id)
		if err != nil {
			return err
		}
		if cur.Config {
			return ErrConfigOwned
		}
		out, err = ex.WebhookUpdate(ctx, w)
		return err
	})
	return out, err
}

// Delete deletes a subscription; ErrConfigOwned for one the
// configuration owns. Its deliveries still queued are skipped.
func (s *Service) Delete(ctx context.Context, id string) error {
	return s.store.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
		cur, err := ex.WebhookGet(ctx, id)
		if err != nil {
			return err
		}
		if cur.Config {
			return ErrConfigOwned
		}
		return ex.WebhookDelete(ctx, id)
	})
}

// Test queues a ping to a subscription, delivered like any alert (and not
// rate limited), and returns its delivery's id: the webhook-id it is sent
// with, and the id of its job.
func (s *Service) Test(ctx context.Context, id string) (uuid.UUID, error) {
	if _, err := s.store.WebhookGet(ctx, id); err != nil {
		return uuid.Nil, err
	}
	data, err := json.Marshal(api.PingData{WebhookID: id})
	if err != nil {
		return uuid.Nil, err
	}
	p, err := s.subscriptionDelivery(id, api.EventPing, s.clock.Now(), data)
	if err != nil {
		return uuid.Nil, err
	}
	res, err := s.store.JobInsertMany(ctx, []job.InsertParams{p})
	if err != nil {
		return uuid.Nil, err
	}
	return res[0].Job.ID, nil
}

// ConfigWebhook is a subscription of the server's configuration (jobd
// serve --webhooks): an id of the operator's choosing, and a secret,
// which the configuration must give.
type ConfigWebhook struct {
	ID string `json:"id"`
	api.WebhookRequest
}

// ParseConfig reads the --webhooks JSON: an array of ConfigWebhook. The
// errors name the entry and field, never a secret.
func ParseConfig(raw []byte) ([]ConfigWebhook, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var subs []ConfigWebhook
	if err := dec.Decode(&subs); err != nil {
		return nil, fmt.Errorf("want a JSON array of {\"id\", \"url\", \"events\", \"secret\", \"filter\"}: %w", err)
	}
	seen := map[string]bool{}
	for i, c := range subs {
		if err := checkName("id", c.ID, true); err != nil {
			return nil, fmt.Errorf("webhook %d: %w", i, err)
		}
		if seen[c.ID] {
			return nil, fmt.Errorf("webhook %q is configured twice", c.ID)
		}
		seen[c.ID] = true
		if c.Secret == "" {
			return nil, fmt.Errorf("webhook %q: %w", c.ID, job.Invalid("secret", "is required in the configuration (whsec_…)"))
		}
		if _, err := subscription(c.WebhookRequest); err != nil {
			return nil, fmt.Errorf("webhook %q: %w", c.ID, err)
		}
	}
	return subs, nil
}

// Configure makes the configuration's subscriptions those of the store,
// in one transaction: each is created or replaced (secret included), and
// the configuration's subscriptions no longer configured are deleted.
// Subscriptions made through the API are left alone, but for one whose
// id a configured one takes, which the configuration then owns. Every
// node of a cluster should be given the same configuration; of nodes
// that start at once, each writes it in turn.
func (s *Service) Configure(ctx context.Context, subs []ConfigWebhook) error {
	var err error
	for range 3 {
		// A node that created a subscription first makes this one's
		// creation a duplicate: the next try replaces it instead.
		if err = s.configure(ctx, subs); !errors.Is(err, job.ErrDuplicate) {
			return err
		}
	}
	return err
}

func (s *Service) configure(ctx context.Context, subs []ConfigWebhook) error {
	return s.store.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
		current, err := ex.WebhookList(ctx)
		if err != nil {
			return err
		}
		wanted := map[string]bool{}
		for _, c := range subs {
			w, err := subscription(c.WebhookRequest)
			if err != nil {
				return fmt.Errorf("webhook %q: %w", c.ID, err)
			}
			w.ID, w.Config = c.ID, true
			wanted[c.ID] = true
			_, err = ex.WebhookUpdate(ctx, w)
			if errors.Is(err, job.ErrNotFound) {
				err = ex.WebhookCreate(ctx, w)
			}
			if err != nil {
				return fmt.Errorf("webhook %q: %w", c.ID, err)
			}
		}
		for _, w := range current {
			if w.Config && !wanted[w.ID] {
				if err := ex.WebhookDelete(ctx, w.ID); err != nil {
					return fmt.Errorf("webhook %q: %w", w.ID, err)
				}
			}
		}
		return nil
	})
}

// subscription checks req and returns the subscription it describes
// (without an id). The errors are *job.ValidationError naming the field,
// and never repeat a secret.
func subscription(req api.WebhookRequest) (store.Webhook, error) {
	if req.URL == "" {
		return store.Webhook{}, job.Invalid("url", "is required")
	}
	if err := job.CheckCallbackURL("url", req.URL); err != nil {
		return store.Webhook{}, err
	}
	if len(req.Events) == 0 {
		return store.Webhook{}, job.Invalid("events", "at least one is required, of %v", api.AlertEvents)
	}
	var events []string
	for _, e := range req.Events {
		if !slices.Contains(api.AlertEvents, e) {
			return store.Webhook{}, job.Invalid("events", "unknown event %q; known events: %v", cut(e), api.AlertEvents)
		}
		if !slices.Contains(events, e) {
			events = append(events, e)
		}
	}
	if req.Secret != "" {
		if _, err := ParseSecret(req.Secret); err != nil {
			return store.Webhook{}, job.Invalid("secret", "%v", err)
		}
	}
	if err := checkName("filter.queue", req.Filter.Queue, false); err != nil {
		return store.Webhook{}, err
	}
	if err := checkName("filter.kind", req.Filter.Kind, false); err != nil {
		return store.Webhook{}, err
	}
	return store.Webhook{URL: req.URL, Events: events, Secret: req.Secret, Queue: req.Filter.Queue, Kind: req.Filter.Kind}, nil
}

// checkName refuses a name no queue or kind could have (over 128 bytes,
// invalid UTF-8, control characters), or an empty one when required.
func checkName(field, v string, required bool) error {
	switch {
	case v == "" && required:
		return job.Invalid(field, "is required")
	case len(v) > 128 || !utf8.ValidString(v):
		return job.Invalid(field, "must be valid UTF-8 of at most 128 bytes")
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return job.Invalid(field, "must not contain control characters")
		}
	}
	return nil
}

// cut shortens a caller's text for an error message.
func cut(s string) string { return job.CutText(s, 64) }
