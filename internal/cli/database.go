package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
	"github.com/jobd/jobd/store/sqlite"
)

// defaultDatabase is the embedded store used with no configuration.
const defaultDatabase = "sqlite:jobd.db"

// openStore opens the store a --database URL names: postgres://… or
// postgresql://… for PostgreSQL, sqlite:PATH for an embedded SQLite file.
// It does not migrate.
func openStore(ctx context.Context, url string, logger *slog.Logger) (store.Store, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		s, err := postgres.Open(ctx, url, postgres.Options{Clock: clock.Real, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("open PostgreSQL: %w", redactPassword(err, url))
		}
		return s, nil
	case strings.HasPrefix(url, "sqlite:"):
		path := strings.TrimPrefix(url, "sqlite:")
		path = strings.TrimPrefix(path, "//")
		if path == "" {
			return nil, usageError("--database sqlite: needs a file path, e.g. sqlite:jobd.db")
		}
		s, err := sqlite.Open(ctx, path, sqlite.Options{Clock: clock.Real, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("open SQLite %s: %w", path, err)
		}
		return s, nil
	default:
		return nil, usageError("--database must be postgres://… or sqlite:PATH")
	}
}

// redactPassword keeps a database URL's password out of an error's message; the
// error chain stays intact for errors.Is.
func redactPassword(err error, url string) error {
	secret := password(url)
	if secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), secret, "xxxxx"), err: err}
}

func password(url string) string {
	i := strings.Index(url, "://")
	if i < 0 {
		return ""
	}
	rest := url[i+3:]
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return ""
	}
	colon := strings.Index(rest[:at], ":")
	if colon < 0 {
		return ""
	}
	return rest[colon+1 : at]
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
