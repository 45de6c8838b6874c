package cli

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/testutil/testsignal"
)

// delivered is one webhook delivery a test receiver got.
type delivered struct {
	path, id, timestamp, signature string
	body                           []byte
	payload                        api.WebhookPayload
}

// validSignature checks a delivery as the Standard Webhooks
// specification says, independently of package webhook.
func validSignature(secret string, d delivered) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(d.id + "." + d.timestamp + "." + string(d.body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, s := range strings.Fields(d.signature) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}

// TestServeWebhooks: jobd serve with --webhooks delivers the
// configuration's alerts, signed with its secret, and a job's callback
// (to a loopback receiver, with --callback-allow-private), signed with
// the callback secret that jobd webhooks callback-secret prints; the API
// cannot delete a configured subscription; no secret reaches the logs.
func TestServeWebhooks(t *testing.T) {
	got := make(chan delivered, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := delivered{path: r.URL.Path, id: r.Header.Get("webhook-id"), timestamp: r.Header.Get("webhook-timestamp"),
			signature: r.Header.Get("webhook-signature"), body: body}
		_ = json.Unmarshal(body, &d.payload)
		got <- d
	}))
	defer rcv.Close()
	const opsSecret = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ="
	config := `[{"id":"ops","url":"` + rcv.URL + `/ops","events":["job.failed"],"secret":"` + opsSecret + `"}]`
	db := "sqlite:" + filepath.Join(t.TempDir(), "jobd.db")

	stderr := &lockedBuffer{}
	env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr, Getenv: func(k string) string {
		return map[string]string{"JOBD_WEBHOOKS": config}[k]
	}}
	testsignal.Of(&env.points.listening).Init()
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() {
		exit <- Main(ctx, []string{"serve", "--database", db, "--listen", "127.0.0.1:0",
			"--callback-allow-private", "--log-level", "debug"}, env)
	}()
	defer func() {
		cancel()
		if code := <-exit; code != 0 {
			t.Errorf("serve exited %d: %s", code, stderr)
		}
	}()
	base := "http://" + testsignal.Of(&env.points.listening).Wait(t, "serve to listen")

	body := `{"kind":"sleep","args":{"ms":1,"fail_attempts":1},"max_attempts":1,"callback_url":"` + rcv.URL + `/cb?token=abc"}`
	resp, err := http.Post(base+"/api/v1/jobs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var j api.Job
	_ = json.NewDecoder(resp.Body).Decode(&j)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || j.CallbackURL != rcv.URL+"/cb?token=abc" {
		t.Fatalf("submit: %d, callback_url %q", resp.StatusCode, j.CallbackURL)
	}

	byPath := map[string]delivered{}
	for len(byPath) < 2 {
		select {
		case d := <-got:
			byPath[d.path] = d
		case <-time.After(testsignal.Timeout):
			t.Fatalf("timed out waiting for the alert and the callback; got %v", byPath)
		}
	}
	alert, callback := byPath["/ops"], byPath["/cb"]
	if alert.payload.Type != api.EventJobFailed || !validSignature(opsSecret, alert) {
		t.Fatalf("alert: type %q, signature valid %v", alert.payload.Type, validSignature(opsSecret, alert))
	}
	if callback.payload.Type != api.EventJobFinished {
		t.Fatalf("callback type %q", callback.payload.Type)
	}

	var out bytes.Buffer
	cenv := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	if code := Main(context.Background(), []string{"webhooks", "callback-secret", "--database", db}, cenv); code != 0 {
		t.Fatalf("webhooks callback-secret exited %d", code)
	}
	callbackSecret := strings.TrimSpace(out.String())
	if !strings.HasPrefix(callbackSecret, "whsec_") || !validSignature(callbackSecret, callback) {
		t.Fatalf("the callback does not verify with the secret jobd webhooks callback-secret prints")
	}

	out.Reset()
	if code := Main(context.Background(), []string{"webhooks", "--server", base, "list"}, cenv); code != 0 || !strings.Contains(out.String(), "ops") ||
		!strings.Contains(out.String(), "config") {
		t.Fatalf("webhooks list: exit %d\n%s", code, out.String())
	}
	if code := Main(context.Background(), []string{"webhooks", "--server", base, "delete", "ops"}, cenv); code == 0 {
		t.Fatal("webhooks delete of a configured subscription succeeded")
	}
	for _, secret := range []string{opsSecret, callbackSecret, strings.TrimPrefix(opsSecret, "whsec_")} {
		if strings.Contains(stderr.String(), secret) {
			t.Fatalf("a webhook secret is in the logs:\n%s", stderr)
		}
	}
}

func TestServeWebhookFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--webhooks", "{"},
		{"--webhooks", `[{"id":"a","url":"http://x","events":["job.failed"]}]`}, // no secret
		{"--webhooks", `[{"id":"a","url":"http://x","events":["nope"],"secret":"whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ="}]`},
		{"--callback-secret", "plain"},
		{"--callback-allow-network", "10.0.0.0/33"},
		{"--webhook-max-attempts", "0"},
		{"--alert-interval", "0s"},
	} {
		var stderr bytes.Buffer
		env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" }}
		all := append([]string{"serve", "--database", "sqlite:" + filepath.Join(t.TempDir(), "jobd.db"), "--listen", "127.0.0.1:0"}, args...)
		if code := Main(context.Background(), all, env); code != 2 {
			t.Errorf("serve %v: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
}
