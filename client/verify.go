package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jobd/jobd/api"
)

// ErrBadSignature is the error of a webhook delivery VerifyWebhook
// refuses.
var ErrBadSignature = errors.New("webhook signature does not verify")

// DefaultWebhookTolerance is how far VerifyWebhook lets a delivery's
// timestamp be from now, against replays.
const DefaultWebhookTolerance = 5 * time.Minute

// VerifyWebhook checks a delivery jobd sent (an alert, a ping or a job's
// callback) as the Standard Webhooks specification says: one of the
// webhook-signature header's "v1,<base64>" entries is the HMAC-SHA256,
// under secret's key (the base64 after "whsec_"), of the webhook-id, the
// webhook-timestamp and body joined by "."; and the timestamp is within
// tolerance of now (DefaultWebhookTolerance when 0). It returns an error
// wrapping ErrBadSignature when not. Use the body exactly as received.
func VerifyWebhook(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		return errors.New("the secret is not whsec_ followed by base64")
	}
	if tolerance <= 0 {
		tolerance = DefaultWebhookTolerance
	}
	id, ts := h.Get(api.HeaderWebhookID), h.Get(api.HeaderWebhookTimestamp)
	secs, err := strconv.ParseInt(ts, 10, 64)
	if id == "" || err != nil {
		return errors.Join(ErrBadSignature, errors.New("no webhook-id, or no webhook-timestamp in unix seconds"))
	}
	if d := now.Sub(time.Unix(secs, 0)); d > tolerance || d < -tolerance {
		return errors.Join(ErrBadSignature, errors.New("the webhook-timestamp is too far from now"))
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, entry := range strings.Fields(h.Get(api.HeaderWebhookSignature)) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		if got, err := base64.StdEncoding.DecodeString(sig); err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrBadSignature
}
