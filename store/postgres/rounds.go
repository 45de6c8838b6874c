package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// batcher is what rounds sends batches on: a connection of the pool, or
// a transaction that is already open (the caller's).
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// rounds runs the statements of one transaction a round trip at a time:
// the statements of a round travel together as one pipelined batch. A
// transition that reads a row's facts, decides in Go and writes the
// decision takes two rounds. In a transaction of its own, BEGIN travels
// with the first round and COMMIT with the last, so the transaction costs
// the same two round trips; inside a transaction already open (own
// false) the rounds only send their statements.
type rounds struct {
	q     batcher
	own   bool // BEGIN and COMMIT are ours to send
	begin string
	begun bool
	done  bool // committed, or rolled back
}

// readCommitted makes a transaction of its own READ COMMITTED, whatever
// the server's default_transaction_isolation; call it before the first
// round.
func (r *rounds) readCommitted() { r.begin = "BEGIN ISOLATION LEVEL READ COMMITTED" }

// round sends the statements queue adds, as one batch, and hands their
// results to read, in the order queued. last ends a transaction of its
// own with COMMIT once read has succeeded; an error rolls it back.
func (r *rounds) round(ctx context.Context, last bool, queue func(*pgx.Batch), read func(pgx.BatchResults) error) error {
	if r.done {
		return errors.New("postgres: a round after the transaction ended")
	}
	var b pgx.Batch
	begin := r.own && !r.begun
	if begin {
		b.Queue(cmp.Or(r.begin, "BEGIN"))
	}
	queue(&b)
	commit := r.own && last
	if commit {
		b.Queue("COMMIT")
	}
	if b.Len() == 0 {
		return nil // nothing to send, in a transaction not of its own
	}
	br := r.q.SendBatch(ctx, &b)
	err := func() error {
		if begin {
			r.begun = true
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("begin: %w", err)
			}
		}
		if err := read(br); err != nil {
			return err
		}
		if commit {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
		}
		return nil
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.rollback(ctx)
		return err
	}
	r.done = commit
	return nil
}

// pinnedRound is round with its statements planned under
// planner_ordered.sql's settings, whatever the table's statistics say:
// the claim's ordered walk of the claim index, and the probes of the
// primary key of every statement that finds jobs by id. Inside a
// transaction of the caller's, the settings are put back before the
// round ends; in one of its own, they end with it.
func (r *rounds) pinnedRound(ctx context.Context, last bool, queue func(*pgx.Batch), read func(pgx.BatchResults) error) error {
	reset := !r.own
	return r.round(ctx, last, func(b *pgx.Batch) {
		b.Queue(plannerOrderedSQL)
		queue(b)
		if reset {
			b.Queue(plannerResetSQL)
		}
	}, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("planner settings: %w", err)
		}
		if err := read(br); err != nil {
			return err
		}
		if reset {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("planner settings: %w", err)
			}
		}
		return nil
	})
}

// rollbackTimeout bounds a rollback sent after its context ended.
const rollbackTimeout = 5 * time.Second

// rollback ends a transaction of its own that began and did not commit.
// When even that fails, the connection is left in its transaction, and
// the pool destroys a connection released in that state, which ends it.
func (r *rounds) rollback(ctx context.Context) {
	if !r.own || !r.begun || r.done {
		return
	}
	r.done = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	_, _ = r.q.Exec(ctx, "ROLLBACK")
}
