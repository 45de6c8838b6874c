package postgres

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// What a store's URL reaches (Options.Pooler).
//
// Through a transaction pooler (PgBouncer with pool_mode = transaction),
// consecutive transactions of one client connection may run on different
// server connections, so nothing may live in a session: the store then
// sends no startup parameter but application_name (PgBouncer refuses
// the others unless told to ignore them), prepares no named statement
// (pgx's cache_describe mode: a statement's description is cached, and
// every execution parses it again as the unnamed statement, in the same
// round trip; a URL's default_query_exec_mode wins), and runs LISTEN and
// the leader's session lock on Options.ListenURL, or not at all. Its
// transactions' settings are SET LOCAL (set_config(…, true)) already,
// its locks transaction-level (pg_advisory_xact_lock), so that they end
// with the transaction in every mode.
const (
	// PoolerAuto treats the URL as PostgreSQL itself unless the first
	// connection is refused as PgBouncer refuses an unknown startup
	// parameter (random_page_cost): then as a transaction pooler.
	PoolerAuto = "auto"
	// PoolerNone: the URL is PostgreSQL itself (or a pooler in session
	// mode).
	PoolerNone = "none"
	// PoolerTransaction: the URL is a pooler in transaction mode.
	PoolerTransaction = "transaction"
)

// Poolers are the values Options.Pooler takes ("" is PoolerAuto).
var Poolers = []string{PoolerAuto, PoolerNone, PoolerTransaction}

// checkPooler returns the pooler p names, PoolerAuto for "".
func checkPooler(p string) (string, error) {
	switch p {
	case "", PoolerAuto:
		return PoolerAuto, nil
	case PoolerNone, PoolerTransaction:
		return p, nil
	}
	return "", fmt.Errorf("postgres: the pooler must be %s, got %q", strings.Join(Poolers, ", "), p)
}

// pageCostParam is the startup parameter the pool's direct connections
// set (see poolConfig), and the one whose refusal tells PgBouncer.
const pageCostParam = "random_page_cost"

// poolConfig parses url into the pool's configuration, for a transaction
// pooler if pooled.
func poolConfig(url string, opts Options, pooled bool) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, errorf("postgres: parse url: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if pooled {
		// No named prepared statement: the next transaction may run on a
		// server connection that never saw it. The description cache is
		// the client's, whatever server connection answers.
		if !strings.Contains(url, "default_query_exec_mode") {
			cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
		}
		return cfg, nil
	}
	// A job queue's hot table lives in memory, where a random page read
	// costs about what a sequential one does. With the default cost (4),
	// the planner prefers to scan a small or never-analysed table whole
	// rather than probe its primary key a thousand times for a batched
	// finish, and a prepared statement can keep that plan as the table
	// grows. The URL may set another value. (Through a transaction
	// pooler, set it on the role: ALTER ROLE … SET random_page_cost.)
	if _, ok := cfg.ConnConfig.RuntimeParams[pageCostParam]; !ok {
		cfg.ConnConfig.RuntimeParams[pageCostParam] = "1.1"
	}
	return cfg, nil
}

// directConfig returns the configuration of the dedicated connections:
// listenURL's when set, else the pool's own unless pooled, else nil (none
// can be had).
func directConfig(pool *pgx.ConnConfig, listenURL string, pooled bool) (*pgx.ConnConfig, error) {
	if listenURL == "" {
		if pooled {
			return nil, nil
		}
		return pool.Copy(), nil
	}
	cfg, err := pgx.ParseConfig(listenURL)
	if err != nil {
		return nil, errorf("postgres: parse the listen url: %w", err)
	}
	return cfg, nil
}

// dedicated returns the configuration of a dedicated connection named
// appName unless its URL names it.
func (s *Store) dedicated(appName string) *pgx.ConnConfig {
	cfg := s.direct.Copy()
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = appName
	}
	return cfg
}

// refusedStartupParameter reports whether err is PgBouncer's refusal of
// the startup parameter the store sends (pageCostParam), which tells a
// pooler from PostgreSQL: PostgreSQL takes any setting there.
func refusedStartupParameter(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "08P01" &&
		strings.Contains(pgErr.Message, "unsupported startup parameter: "+pageCostParam)
}

// Pooled reports whether the store's URL goes through a transaction
// pooler (given, or detected: see PoolerAuto), and Direct whether it has
// dedicated connections (LISTEN and the leader's lock): the URL's own, or
// Options.ListenURL's.
func (s *Store) Pooled() (pooled, direct bool) { return s.pooled, s.direct != nil }
