package cli

import (
	"context"
	"flag"
	"log/slog"
	"strings"

	"github.com/jobd/jobd"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
)

// defaultDatabase is the embedded store used with no configuration.
const defaultDatabase = jobd.DefaultDatabase

// openStore opens the store a --database URL names: postgres://… or
// postgresql://… for PostgreSQL, sqlite:PATH for an embedded SQLite file.
// It does not migrate.
func openStore(ctx context.Context, url string, logger *slog.Logger) (store.Store, error) {
	st, err := jobd.OpenStore(ctx, url, jobd.StoreOptions{Logger: logger})
	return st, usage(err)
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
