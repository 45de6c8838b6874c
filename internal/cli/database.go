package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"slices"
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
	return openStoreWith(ctx, url, logger, pgFlags{})
}

// pgFlags are the flags of a PostgreSQL store beyond its URL.
type pgFlags struct {
	// listen is --listen-database: the URL of the dedicated connections
	// (LISTEN, the leader's presence lock), PostgreSQL itself.
	listen string
	// pooler is --database-pooler: what --database reaches.
	pooler string
}

// register adds the flags to fs.
func (f *pgFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "listen-database", "", "PostgreSQL: URL of the dedicated connections (LISTEN, the leader's lock), straight to PostgreSQL when --database goes through PgBouncer in transaction mode; default --database's unless it goes through one (then no LISTEN: workers poll)")
	fs.StringVar(&f.pooler, "database-pooler", postgres.PoolerAuto, "PostgreSQL: what --database reaches: "+strings.Join(postgres.Poolers, ", ")+" (auto: PgBouncer is detected by its refusal of a startup parameter; transaction: no session state, no prepared statement)")
}

// check validates the flags beside the --database URL.
func (f *pgFlags) check(database string) error {
	pg := isPostgres(database)
	if f.listen != "" && (!pg || !isPostgres(f.listen)) {
		return usageError("--listen-database needs a postgres:// --database, and is a postgres://… URL itself")
	}
	if !slices.Contains(postgres.Poolers, f.pooler) && f.pooler != "" {
		return usageError("--database-pooler must be one of %s, got %q", strings.Join(postgres.Poolers, ", "), f.pooler)
	}
	return nil
}

func isPostgres(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}

// openStoreWith is openStore with the flags of a PostgreSQL store.
func openStoreWith(ctx context.Context, url string, logger *slog.Logger, pg pgFlags) (store.Store, error) {
	switch {
	case isPostgres(url):
		s, err := postgres.Open(ctx, url, postgres.Options{Clock: clock.Real, Logger: logger, ListenURL: pg.listen, Pooler: pg.pooler})
		if err != nil {
			return nil, fmt.Errorf("open PostgreSQL: %w", redactPassword(redactPassword(err, url), pg.listen))
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
