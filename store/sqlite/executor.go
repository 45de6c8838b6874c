package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/wakeup"
)

// executor runs store.Executor's operations: on the Store, each write in
// an IMMEDIATE transaction of its own on the one writer connection and
// each read on a reader; inside InTx, all of them in tx.
type executor struct {
	w       *sql.DB // the writer: one connection, IMMEDIATE transactions
	r       *sql.DB // readers
	clock   clock.Clock
	log     *slog.Logger
	maxArgs int

	// lastStamp is the last updated_at the Store gave (see jobWrite).
	lastStamp *atomic.Int64

	hub       *wakeup.Hub[store.Notification]
	scheduler *wakeup.Scheduler
	// counted is the file's queues that count their running jobs, shared
	// with the hub.
	counted *countedQueues

	// owner is the Store: its own transaction's context is refused on it.
	owner *Store
	// tx is the transaction the operations run in; nil on the Store.
	tx *txState
}

// txState is one write transaction that several operations share.
type txState struct {
	sql *sql.Tx
	// write holds the transaction's times once a job operation read them.
	write *jobWrite
	// after is what is to run once it commits: the notifications of its
	// operations.
	after []func()
}

// InTx runs fn in one IMMEDIATE write transaction on the writer
// connection, with an Executor whose operations run in it; see
// store.Store. TxOf gives fn the transaction itself for statements of its
// own. The transaction holds SQLite's one write lock until fn returns:
// keep it short. The notifications of its operations are sent once it has
// committed.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, ex store.Executor) error) error {
	if err := store.CheckNotInTx(ctx, s); err != nil {
		return err
	}
	txCtx := store.TxContext(ctx, s)
	if err := s.atomically(ctx, func(ex *executor) error { return fn(txCtx, ex) }); err != nil {
		return errorf("sqlite: transaction: %w", err)
	}
	return nil
}

// TxOf returns the transaction ex runs in when ex is an Executor that
// InTx gave on a SQLite store, so that the caller's own statements (on
// its own tables, in the same file) and jobd's operations commit together
// or not at all; false for any other Executor. The writer connection
// belongs to the store: this is the way to write with jobd in one
// transaction. The *sql.Tx must not be committed, rolled back or used
// after fn returns.
func TxOf(ex store.Executor) (*sql.Tx, bool) {
	e, ok := ex.(*executor)
	if !ok || e.tx == nil {
		return nil, false
	}
	return e.tx.sql, true
}

// atomically runs fn with an executor on one write transaction: s itself
// when s runs in one already, or else a new IMMEDIATE transaction that
// commits when fn returns nil and rolls back when it fails or panics.
// What fn leaves to run after the commit (afterCommit) runs then.
func (s *executor) atomically(ctx context.Context, fn func(ex *executor) error) error {
	if s.tx != nil {
		return fn(s)
	}
	if err := store.CheckNotInTx(ctx, s.owner); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback()
		}
	}()
	ex := *s
	ex.tx = &txState{sql: tx}
	if err := fn(&ex); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	committed = true
	for _, f := range ex.tx.after {
		f()
	}
	return nil
}

// jobWrite returns the times of the transaction s runs in, reading them
// the first time a job operation asks: after BEGIN IMMEDIATE, so that
// they follow every write committed before.
func (s *executor) jobWrite(ctx context.Context) (*jobWrite, error) {
	if s.tx.write != nil {
		return s.tx.write, nil
	}
	w := &jobWrite{Tx: s.tx.sql, now: s.now()}
	var newest int64
	if err := w.QueryRowContext(ctx, jobStampSQL).Scan(&newest); err != nil {
		return nil, fmt.Errorf("stamp: %w", err)
	}
	w.stamp = max(w.now, newest+1, s.lastStamp.Load()+1)
	s.lastStamp.Store(w.stamp)
	s.tx.write = w
	return w, nil
}

// afterCommit runs f once the transaction s runs in has committed: at
// once on the Store (its operations have committed when they call this),
// at InTx's commit inside InTx.
func (s *executor) afterCommit(f func()) {
	if s.tx != nil {
		s.tx.after = append(s.tx.after, f)
		return
	}
	f()
}

// queryer is where a single read runs: a reader, or the transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// reader returns where a single read runs: the readers on the Store (not
// with its own transaction's context), the transaction inside InTx.
func (s *executor) reader(ctx context.Context) (queryer, error) {
	if s.tx != nil {
		return s.tx.sql, nil
	}
	if err := store.CheckNotInTx(ctx, s.owner); err != nil {
		return nil, err
	}
	return s.r, nil
}
