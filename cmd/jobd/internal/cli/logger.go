package cli

import (
	"log/slog"
	"strings"

	"github.com/jobd/jobd/internal/redact"
)

// urlSecrets is the secret set of a URL's credentials.
func urlSecrets(raw string) *redact.Secrets {
	s := &redact.Secrets{}
	s.AddURL(raw)
	return s
}

// newLogger returns a logger writing to env.Stderr at level ("debug",
// "info", "warn", "error") in format ("text" or "json"), through the one
// handler that masks secrets (and anything shaped like a credential) in
// every record.
func newLogger(env *Env, level, format string, secrets *redact.Secrets) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(strings.ToUpper(level)))
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler = slog.NewTextHandler(env.Stderr, opts)
	if format == "json" {
		h = slog.NewJSONHandler(env.Stderr, opts)
	}
	if secrets == nil {
		secrets = &redact.Secrets{}
	}
	return slog.New(redact.NewHandler(h, secrets))
}
