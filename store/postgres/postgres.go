// Package postgres is jobd's PostgreSQL store: store.Store on pgx v5.
//
// Every state transition is one transaction whose writes are fenced by
// the state they expect and, for a lease holder, the lease token, and
// which appends its journal rows through a data-modifying CTE. Where a
// transition depends on the row (a failure with attempts left, a cancel
// request), the transaction locks the rows (FOR UPDATE), Go decides
// (package job's state machine) and one statement applies the decisions:
// two round trips, BEGIN and COMMIT riding along (rounds.go). Claims take
// many jobs per statement with FOR UPDATE SKIP LOCKED; a limited queue's
// (flow control) take the queue's settings row first, in the same round
// trip, and count what runs in the same statement (claim_limited.sql).
// Finishes, heartbeats and inserts are batched with unnest, and a batch
// of successes, the hot path, is one statement. Wake-ups travel
// by LISTEN/NOTIFY on the channel jobd_wake, and cancel requests of running
// jobs on jobd_cancel, so any number of nodes can share one database. The
// statements live in sql/*.sql, the schema in migrations/*.up.sql.
package postgres

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/wakeup"
)

// Options configures a Store. Zero values take the defaults.
type Options struct {
	// Clock tells the time. Default (and clock.Real): the database's now(),
	// so that every node agrees; any other clock's time is passed to the
	// statements instead, which lets tests expire leases without sleeping.
	Clock clock.Clock
	// Logger receives what background work (Listen, delayed wake-ups)
	// cannot return. Default: slog.Default().
	Logger *slog.Logger
	// MaxArgsBytes caps a job's args. Default: job.DefaultMaxArgsBytes.
	MaxArgsBytes int
	// MaxConns caps the connection pool. Default: pgxpool's, the greater
	// of 4 and the number of CPUs.
	MaxConns int32
	// Pooler says what the URL reaches: PoolerAuto (the default, "")
	// detects PgBouncer, PoolerNone is PostgreSQL itself, and
	// PoolerTransaction a pooler that hands a connection to another
	// client between transactions (PgBouncer's pool_mode = transaction).
	// See connect.go.
	Pooler string
	// ListenURL, when set, is where the store's dedicated connections go
	// (Listen's, and LeaderWatch's): PostgreSQL itself, for a URL that
	// reaches it through a transaction pooler, where LISTEN and session
	// locks do not work. Default: the URL, unless it goes through a
	// transaction pooler, in which case Listen does nothing (the nodes
	// find jobs by polling) and LeaderWatch refuses (the term alone
	// elects the leader).
	ListenURL string
}

// Store is a PostgreSQL jobd store. It is safe for concurrent use. Its
// Executor operations (the embedded executor's) each run in a transaction
// of their own; InTx runs several in one, and WithTx runs them in a
// transaction of the caller's.
type Store struct {
	executor
	pool *pgxpool.Pool
	// direct is the configuration of the dedicated connections (Listen's,
	// LeaderWatch's), nil when there is none: the URL goes through a
	// transaction pooler and Options.ListenURL is empty.
	direct *pgx.ConnConfig
	// pooled: the pool's connections go through a transaction pooler.
	pooled bool
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Executor = (*executor)(nil)
)

// The application_name of the store's connections, unless the URL sets
// one: poolAppName for the pool's, listenAppName for Listen's and
// leaderAppName for LeaderWatch's.
const (
	poolAppName   = "jobd"
	listenAppName = "jobd-listen"
	leaderAppName = "jobd-leader"
)

// Open connects to the database at url (a PostgreSQL URL or key=value
// string) and checks that it answers. It does not migrate: call Migrate.
// Directly on PostgreSQL (Options.Pooler), its connections set
// random_page_cost to 1.1 unless url sets it (see poolConfig); through a
// transaction pooler they set nothing and prepare no statement (see
// connect.go). They name themselves, unless url sets application_name,
// jobd (the pool's), jobd-listen (Listen's) and jobd-leader
// (LeaderWatch's).
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	pooler, err := checkPooler(opts.Pooler)
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s, err := open(ctx, url, opts, pooler == PoolerTransaction)
	if err != nil && pooler == PoolerAuto && refusedStartupParameter(err) {
		opts.Logger.Info("jobd: the database refused a startup parameter, as PgBouncer does: using it as a transaction pooler (no startup parameters, no prepared statements, LISTEN and the leader's lock on --listen-database)",
			"listen_database", opts.ListenURL != "")
		return open(ctx, url, opts, true)
	}
	return s, err
}

// open opens the store on url, through a transaction pooler if pooled.
func open(ctx context.Context, url string, opts Options, pooled bool) (*Store, error) {
	cfg, err := poolConfig(url, opts, pooled)
	if err != nil {
		return nil, err
	}
	s := &Store{pooled: pooled}
	if s.direct, err = directConfig(cfg.ConnConfig, opts.ListenURL, pooled); err != nil {
		return nil, err
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		// Lets an operator tell jobd's sessions apart in
		// pg_stat_activity, and the long-lived LISTEN one among them.
		cfg.ConnConfig.RuntimeParams["application_name"] = poolAppName
	}
	s.executor = executor{
		clock:   opts.Clock,
		dbClock: clock.IsReal(opts.Clock),
		logger:  opts.Logger,
		maxArgs: opts.MaxArgsBytes,
	}
	if s.clock == nil {
		s.clock = clock.Real
	}
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, errorf("postgres: connect: %w", err)
	}
	if err := s.Ping(ctx); err != nil {
		s.pool.Close()
		return nil, err
	}
	s.db = guardedPool{pool: s.pool, owner: s}
	s.delayed = wakeup.NewScheduler(s.clock, s.wakeDelayed)
	s.limited = newLimitedQueues()
	return s, nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return errorf("postgres: ping: %w", err)
	}
	return nil
}

// Close stops pending delayed wake-ups and closes the connections. Listen
// calls in progress end with their contexts, not here.
func (s *Store) Close() error {
	s.delayed.Close()
	s.pool.Close()
	return nil
}

// now is the clock parameter ($1) of every statement that depends on the
// time: nil lets the database use its own now().
func (s *executor) now() *time.Time {
	if s.dbClock {
		return nil
	}
	t := s.clock.Now()
	return &t
}

// wakeDelayed is the scheduler's fire function: a delayed job's run_at
// passed, so wake its queue on every node.
func (s *executor) wakeDelayed(queue string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Wake(ctx, queue); err != nil {
		s.logger.Warn("jobd: wake delayed queue", "queue", queue, "err", err)
	}
}

// notFound maps "no rows" to job.ErrNotFound; every lookup goes through it.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return job.ErrNotFound
	}
	return err
}

// uniqueViolation reports whether err is a unique violation of index.
func uniqueViolation(err error, index string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == index
}

// deadlock reports whether PostgreSQL broke a deadlock by failing err's
// transaction, which is then safe to run again.
func deadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}
