package redact

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestHandlerMasksSecretsEverywhere(t *testing.T) {
	var secrets Secrets
	secrets.Add("s3cret-admin", "ab") // "ab" is too short to mask
	secrets.AddURL("postgres://jobd:pg-p%40ss@db.internal:5432/jobd")
	secrets.AddURL("https://user:up-token@reports.internal")
	secrets.Add(base64.StdEncoding.EncodeToString([]byte("user:up-token")))
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), &secrets))

	key := "jobd_0123456789ab_" + strings.Repeat("f", 64)
	log = log.With("conn", "postgres://jobd:pg-p%40ss@db.internal/jobd")
	log.Debug("login with s3cret-admin failed", "err", errors.New("dial postgres://jobd:pg-p@ss@db.internal: refused"),
		"header", "Bearer "+key, "Authorization", "Basic dXNlcjp1cC10b2tlbg==",
		slog.Group("req", "url", "https://user:up-token@reports.internal/x?token=abc123&n=1"),
		"dsn", "host=db user=jobd password='pg-p@ss' dbname=jobd", "any", fmt.Errorf("wrapped: %w", errors.New("key "+key)),
		"lease_token", "0b1c", "short", "ab")
	out := buf.String()
	for _, secret := range []string{"s3cret-admin", "pg-p@ss", "pg-p%40ss", "up-token", key, "dXNlcjp1cC10b2tlbg==", "abc123", "0b1c"} {
		if strings.Contains(out, secret) {
			t.Errorf("log line holds %q:\n%s", secret, out)
		}
	}
	for _, kept := range []string{`"short":"ab"`, "db.internal", "n=1", "login with"} {
		if !strings.Contains(out, kept) {
			t.Errorf("log line lost %q:\n%s", kept, out)
		}
	}
}

func TestOrdinaryTextUnchanged(t *testing.T) {
	var secrets Secrets
	for _, s := range []string{"engine: lease lost; cancelling the handler", "job_id=42 queue=default", "Basic authentication failed"} {
		if got := secrets.Redact(s); got != s {
			t.Errorf("Redact(%q) = %q", s, got)
		}
	}
}

// TestWebhookSecretsMasked: a webhook signing secret ("whsec_…") is
// masked wherever it appears, known or not.
func TestWebhookSecretsMasked(t *testing.T) {
	var secrets Secrets
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw+/="
	got := secrets.Redact("configured webhook ops with " + secret + ", sending")
	if strings.Contains(got, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") || !strings.Contains(got, "configured webhook ops with") {
		t.Fatalf("Redact = %q", got)
	}
}
