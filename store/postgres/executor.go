package postgres

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/wakeup"
)

// executor runs store.Executor's operations on db: the Store's pool, each
// operation in a transaction of its own, or one transaction, tx.
type executor struct {
	db dbtx
	// tx is the transaction the operations run in; nil on the Store.
	tx pgx.Tx
	// after collects, inside InTx, what is to run once the transaction
	// commits (wake-ups of jobs due later). Nil elsewhere: on the Store
	// an operation has committed when it runs them, and in a caller's
	// transaction (WithTx) nothing here knows when it commits.
	after *[]func()

	clock   clock.Clock
	dbClock bool // clock is the real one: let the database tell the time
	logger  *slog.Logger
	maxArgs int
	delayed *wakeup.Scheduler // wakes a queue when a delayed job falls due
	limited *limitedQueues    // the node's view of the limited queues
	// flowLocked, in a transaction (InTx's, WithTx's), says whether it
	// holds the lock of a limited queue (see claimPlan.wait); nil on the
	// Store, whose claims are each a transaction of their own.
	flowLocked *bool
}

// dbtx is what a statement runs on: the pool, or a transaction (the
// store's own or the caller's). guardedPool and pgx.Tx both are.
type dbtx interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// querier is the part of dbtx that reads and writes rows.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// InTx runs fn in one transaction, with an Executor whose operations run
// in it; see store.Store. Delayed jobs' wake-ups are arranged once it has
// committed; wake-ups due now and cancel requests are NOTIFYs, which
// PostgreSQL delivers on commit.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, ex store.Executor) error) error {
	if err := store.CheckNotInTx(ctx, s); err != nil {
		return err
	}
	txCtx := store.TxContext(ctx, s)
	if err := s.atomically(ctx, func(ex *executor) error { return fn(txCtx, ex) }); err != nil {
		return errorf("postgres: transaction: %w", err)
	}
	return nil
}

// WithTx returns an Executor whose operations run in tx, a transaction
// the caller holds on this store's database, so that the caller's own
// statements and jobd's commit together or not at all. Nothing it writes
// is visible before tx commits, and its wake-ups (NOTIFY) are delivered
// only then. Nothing here knows when tx commits, though: a job due later
// has its queue woken at its run_at even if tx rolls back (an empty claim,
// nothing more). The Executor must not outlive tx; an error from it may
// have aborted tx.
func (s *Store) WithTx(tx pgx.Tx) store.Executor {
	ex := s.executor
	ex.db, ex.tx, ex.after, ex.flowLocked = tx, tx, nil, new(bool)
	return &ex
}

// atomically runs fn with an executor on one transaction: s itself when s
// runs in one already, or else a new READ COMMITTED transaction (whatever
// the server's default: a limited claim needs it, see flow_lock.sql) that
// commits when fn returns nil. What fn leaves to run after the commit
// (afterCommit) runs then.
func (s *executor) atomically(ctx context.Context, fn func(ex *executor) error) error {
	if s.tx != nil {
		return fn(s)
	}
	g := s.db.(guardedPool)
	if err := store.CheckNotInTx(ctx, g.owner); err != nil {
		return err
	}
	var after []func()
	err := pgx.BeginTxFunc(ctx, g.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		ex := *s
		ex.db, ex.tx, ex.after, ex.flowLocked = tx, tx, &after, new(bool)
		return fn(&ex)
	})
	if err != nil {
		return err
	}
	for _, f := range after {
		f()
	}
	return nil
}

// afterCommit runs f once the transaction s runs in has committed: at
// once on the Store (the operation committed before it calls this) and in
// a caller's transaction (see WithTx), at InTx's commit inside InTx.
func (s *executor) afterCommit(f func()) {
	if s.after != nil {
		*s.after = append(*s.after, f)
		return
	}
	f()
}

// transact runs fn's rounds in one transaction: the one s runs in, or a
// new one on a connection of the pool (see rounds).
func (s *executor) transact(ctx context.Context, fn func(r *rounds) error) error {
	if s.tx != nil {
		return fn(&rounds{q: s.tx})
	}
	g := s.db.(guardedPool)
	if err := store.CheckNotInTx(ctx, g.owner); err != nil {
		return err
	}
	conn, err := g.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	r := &rounds{q: conn, own: true}
	err = fn(r)
	if err == nil && !r.done {
		err = errorf("postgres: a transaction ended without its last round")
	}
	if err != nil {
		r.rollback(ctx)
	}
	return err
}

// readSnapshot runs fn's reads on one snapshot: a read-only REPEATABLE
// READ transaction, or the transaction s runs in.
func (s *executor) readSnapshot(ctx context.Context, fn func(q querier) error) error {
	if s.tx != nil {
		return fn(s.tx)
	}
	g := s.db.(guardedPool)
	if err := store.CheckNotInTx(ctx, g.owner); err != nil {
		return err
	}
	return pgx.BeginTxFunc(ctx, g.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead},
		func(tx pgx.Tx) error { return fn(tx) })
}

// guardedPool is the Store's pool, refusing the calls made with the
// context of the Store's own transaction (store.ErrCalledInTx): they would
// run outside it, and could wait for it forever.
type guardedPool struct {
	pool  *pgxpool.Pool
	owner *Store
}

// Query runs sql on the pool, unless ctx is the owner's transaction's.
func (g guardedPool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := store.CheckNotInTx(ctx, g.owner); err != nil {
		return nil, err
	}
	return g.pool.Query(ctx, sql, args...)
}

// QueryRow runs sql on the pool, unless ctx is the owner's transaction's.
func (g guardedPool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := store.CheckNotInTx(ctx, g.owner); err != nil {
		return errRow{err}
	}
	return g.pool.QueryRow(ctx, sql, args...)
}

// Exec runs sql on the pool, unless ctx is the owner's transaction's.
func (g guardedPool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := store.CheckNotInTx(ctx, g.owner); err != nil {
		return pgconn.CommandTag{}, err
	}
	return g.pool.Exec(ctx, sql, args...)
}

// SendBatch sends b on the pool, unless ctx is the owner's transaction's.
func (g guardedPool) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := store.CheckNotInTx(ctx, g.owner); err != nil {
		return errBatch{err}
	}
	return g.pool.SendBatch(ctx, b)
}

// errRow is a row that could not be read.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// errBatch is a batch that could not be sent.
type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow(b) }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }
