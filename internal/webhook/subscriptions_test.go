package webhook_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/webhook"
	"github.com/jobd/jobd/job"
)

// TestSubscriptions: the service checks what it stores, keeps a secret
// unless a new one is given, refuses to change what the configuration
// owns, and Configure makes the configuration's subscriptions the
// stored ones.
func TestSubscriptions(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, db database) {
		rcv := newReceiver(t)
		n := startNode(t, db, options{maxAttempts: 1000})
		ctx := t.Context()
		for _, bad := range []struct {
			req   api.WebhookRequest
			field string
		}{
			{api.WebhookRequest{Events: []string{api.EventJobFailed}}, "url"},
			{api.WebhookRequest{URL: "ftp://x", Events: []string{api.EventJobFailed}}, "url"},
			{api.WebhookRequest{URL: rcv.URL}, "events"},
			{api.WebhookRequest{URL: rcv.URL, Events: []string{"job.finished"}}, "events"},
			{api.WebhookRequest{URL: rcv.URL, Events: []string{api.EventPing}}, "events"},
			{api.WebhookRequest{URL: rcv.URL, Events: []string{api.EventJobFailed}, Secret: "whsec_dG9vIHNob3J0"}, "secret"},
			{api.WebhookRequest{URL: rcv.URL, Events: []string{api.EventJobFailed}, Filter: api.WebhookFilter{Queue: "a\x01"}}, "filter.queue"},
		} {
			var verr *job.ValidationError
			if _, _, err := n.svc.Create(ctx, bad.req); !errors.As(err, &verr) || verr.Field != bad.field {
				t.Errorf("Create(%+v) = %v, want a validation error of %s", bad.req, err, bad.field)
			}
		}
		if subs, _ := n.svc.List(ctx); len(subs) != 0 {
			t.Fatalf("refused creations stored %d subscriptions", len(subs))
		}

		sub, secret := n.subscribe(t, rcv.URL, []string{api.EventJobFailed, api.EventJobFailed}, api.WebhookFilter{Queue: "q"})
		if !slices.Equal(sub.Events, []string{api.EventJobFailed}) || sub.Queue != "q" || sub.Config {
			t.Fatalf("created %+v", sub)
		}
		up, err := n.svc.Update(ctx, sub.ID, api.WebhookRequest{URL: rcv.URL + "/v2", Events: []string{api.EventWorkerOffline}})
		if err != nil || up.URL != rcv.URL+"/v2" || up.Secret != secret || up.Queue != "" {
			t.Fatalf("Update = %+v, %v; want the new URL and events, the secret kept", up, err)
		}
		// A ping goes to the new URL, signed with the kept secret.
		if _, err := n.svc.Test(ctx, sub.ID); err != nil {
			t.Fatal(err)
		}
		got := rcv.next(t, "the ping")
		verify(t, secret, got)
		var ping api.PingData
		if err := json.Unmarshal(got.Payload.Data, &ping); err != nil || ping.WebhookID != sub.ID || got.Payload.Type != api.EventPing {
			t.Fatalf("ping %s %s", got.Payload.Type, got.Payload.Data)
		}

		// The configuration owns what it configures.
		const cfgSecret = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ="
		configured := []webhook.ConfigWebhook{{ID: "ops", WebhookRequest: api.WebhookRequest{
			URL: rcv.URL + "/ops", Events: []string{api.EventQueueBacklog}, Secret: cfgSecret}}}
		// Nodes that start at once all write it.
		errs := make(chan error, 3)
		for range 3 {
			go func() { errs <- n.svc.Configure(ctx, configured) }()
		}
		for range 3 {
			if err := <-errs; err != nil {
				t.Fatalf("Configure: %v", err)
			}
		}
		ops, err := n.svc.Get(ctx, "ops")
		if err != nil || !ops.Config || ops.Secret != cfgSecret {
			t.Fatalf("configured = %+v, %v", ops, err)
		}
		if _, err := n.svc.Update(ctx, "ops", api.WebhookRequest{URL: rcv.URL, Events: []string{api.EventJobFailed}}); !errors.Is(err, webhook.ErrConfigOwned) {
			t.Fatalf("Update of a configured subscription: %v", err)
		}
		if err := n.svc.Delete(ctx, "ops"); !errors.Is(err, webhook.ErrConfigOwned) {
			t.Fatalf("Delete of a configured subscription: %v", err)
		}
		// A new configuration without it deletes it, and leaves the API's.
		if err := n.svc.Configure(ctx, nil); err != nil {
			t.Fatal(err)
		}
		subs, err := n.svc.List(ctx)
		if err != nil || len(subs) != 1 || subs[0].ID != sub.ID {
			t.Fatalf("after an empty configuration: %+v, %v; want the API's subscription only", subs, err)
		}

		// A delivery whose subscription was deleted is skipped.
		rcv.answering(func(int) int { return http.StatusServiceUnavailable })
		id, err := n.svc.Test(ctx, sub.ID)
		if err != nil {
			t.Fatal(err)
		}
		rcv.next(t, "a failed attempt")
		if err := n.svc.Delete(ctx, sub.ID); err != nil {
			t.Fatal(err)
		}
		j := n.untilJob(t, id, "the ping to end", func(j *job.Job) bool { return j.State.Final() })
		var res struct{ Skipped string }
		if err := json.Unmarshal(j.Result, &res); err != nil || j.State != job.StateSucceeded || res.Skipped == "" {
			t.Fatalf("ping of a deleted subscription: %s %s, want succeeded and skipped", j.State, j.Result)
		}
	})
}

func TestParseConfig(t *testing.T) {
	good := `[{"id":"ops","url":"https://ops.example/","events":["job.failed"],"secret":"whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ=","filter":{"queue":"video"}}]`
	subs, err := webhook.ParseConfig([]byte(good))
	if err != nil || len(subs) != 1 || subs[0].ID != "ops" || subs[0].Filter.Queue != "video" {
		t.Fatalf("ParseConfig = %+v, %v", subs, err)
	}
	for _, bad := range []string{
		`{}`, `[{"url":"https://x/","events":["job.failed"],"secret":"whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ="}]`,
		`[{"id":"a","url":"https://x/","events":["job.failed"]}]`,
		`[{"id":"a","url":"https://x/","events":["job.failed"],"secret":"whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ=","extra":1}]`,
		`[{"id":"a","url":"https://x/","events":["job.failed"],"secret":"whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ="},` +
			`{"id":"a","url":"https://y/","events":["job.failed"],"secret":"whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ="}]`,
	} {
		if _, err := webhook.ParseConfig([]byte(bad)); err == nil {
			t.Errorf("ParseConfig(%s) accepted", bad)
		}
	}
}
