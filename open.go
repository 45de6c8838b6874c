package jobd

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
	"github.com/jobd/jobd/store/sqlite"
)

// StoreOptions are what OpenStore passes to the driver beyond the URL.
type StoreOptions struct {
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Postgres configures a PostgreSQL store beyond its URL.
	Postgres PostgresConfig
}

// OpenStore opens the store a database URL names: "postgres://…" or
// "postgresql://…" for PostgreSQL, "sqlite:PATH" for an SQLite file. It
// does not migrate. An unusable URL is an ErrInvalidConfig error; an
// error never shows the URL's password.
func OpenStore(ctx context.Context, url string, opts StoreOptions) (store.Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	switch {
	case IsPostgresURL(url):
		if opts.Postgres.ListenURL != "" && !IsPostgresURL(opts.Postgres.ListenURL) {
			return nil, invalid("--listen-database needs a postgres:// --database, and is a postgres://… URL itself")
		}
		if p := opts.Postgres.Pooler; p != "" && !slices.Contains(postgres.Poolers, p) {
			return nil, invalid("--database-pooler must be one of %s, got %q", strings.Join(postgres.Poolers, ", "), p)
		}
		s, err := postgres.Open(ctx, url, postgres.Options{Clock: clock.Real, Logger: opts.Logger,
			ListenURL: opts.Postgres.ListenURL, Pooler: opts.Postgres.Pooler})
		if err != nil {
			return nil, fmt.Errorf("open PostgreSQL: %w", redactPassword(redactPassword(err, url), opts.Postgres.ListenURL))
		}
		return s, nil
	case strings.HasPrefix(url, "sqlite:"):
		if opts.Postgres.ListenURL != "" {
			return nil, invalid("--listen-database needs a postgres:// --database, and is a postgres://… URL itself")
		}
		path := strings.TrimPrefix(strings.TrimPrefix(url, "sqlite:"), "//")
		if path == "" {
			return nil, invalid("--database sqlite: needs a file path, e.g. sqlite:jobd.db")
		}
		s, err := sqlite.Open(ctx, path, sqlite.Options{Clock: clock.Real, Logger: opts.Logger})
		if err != nil {
			return nil, fmt.Errorf("open SQLite %s: %w", path, err)
		}
		return s, nil
	default:
		return nil, invalid("--database must be postgres://… or sqlite:PATH")
	}
}

// IsPostgresURL reports whether url names a PostgreSQL database.
func IsPostgresURL(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}

// redactPassword keeps a database URL's password out of an error's
// message; the error chain stays intact for errors.Is.
func redactPassword(err error, url string) error {
	secret := password(url)
	if secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), secret, "xxxxx"), err: err}
}

// password is the password of a URL's user information, "" for none.
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
