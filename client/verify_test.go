package client_test

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/internal/webhook"
)

// TestVerifyWebhook: VerifyWebhook accepts what package webhook signs,
// and refuses a changed body, another secret, a stale timestamp.
func TestVerifyWebhook(t *testing.T) {
	secret, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	key, err := webhook.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_900_000_000, 0)
	body := []byte(`{"type":"ping","timestamp":"2030-03-17T17:46:40Z","data":{"webhook_id":"w"}}`)
	h := http.Header{}
	h.Set("webhook-id", "01a2")
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", "v1,bm90IGl0 "+webhook.Sign(key, "01a2", now, body))
	if err := client.VerifyWebhook(secret, h, body, now.Add(time.Minute), 0); err != nil {
		t.Fatalf("VerifyWebhook: %v", err)
	}
	other, _ := webhook.NewSecret()
	for what, err := range map[string]error{
		"a changed body":  client.VerifyWebhook(secret, h, append(body, ' '), now, 0),
		"another secret":  client.VerifyWebhook(other, h, body, now, 0),
		"a stale attempt": client.VerifyWebhook(secret, h, body, now.Add(10*time.Minute), 0),
	} {
		if !errors.Is(err, client.ErrBadSignature) {
			t.Errorf("%s: err = %v, want ErrBadSignature", what, err)
		}
	}
}
