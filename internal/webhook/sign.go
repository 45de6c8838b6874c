package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"time"

	"github.com/jobd/jobd/api"
)

// Sign returns the webhook-signature of one attempt of a delivery, per the
// Standard Webhooks specification: "v1," then the base64 HMAC-SHA256,
// under key, of the delivery's id, the attempt's unix time in seconds and
// the body, joined by dots.
func Sign(key []byte, id string, at time.Time, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strconv.FormatInt(at.Unix(), 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// setHeaders sets the Standard Webhooks headers of one attempt on h.
func setHeaders(h http.Header, key []byte, id string, at time.Time, body []byte) {
	h.Set(api.HeaderWebhookID, id)
	h.Set(api.HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(api.HeaderWebhookSignature, Sign(key, id, at, body))
}
