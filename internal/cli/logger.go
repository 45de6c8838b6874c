package cli

import (
	"log/slog"
	"strings"
)

// newLogger returns a logger writing to env.Stderr at level ("debug",
// "info", "warn", "error") in format ("text" or "json").
func newLogger(env *Env, level, format string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(strings.ToUpper(level)))
	opts := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(env.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(env.Stderr, opts))
}
