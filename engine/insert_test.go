package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestInsertTx: jobs inserted through a transaction's Executor run once it
// commits, and never exist when it rolls back.
func TestInsertTx(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(2)})
		start(t, e)
		ctx := t.Context()

		var committed []store.InsertResult
		err := s.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
			one, err := e.InsertTx(ctx, ex, job.InsertParams{Kind: "noop", IdempotencyKey: "one"})
			if err != nil {
				return err
			}
			more, err := e.InsertManyTx(ctx, ex, []job.InsertParams{{Kind: "noop"}, {Kind: "noop"}})
			committed = append([]store.InsertResult{one}, more...)
			return err
		})
		if err != nil {
			t.Fatalf("InTx: %v", err)
		}
		for _, r := range committed {
			if !r.Created {
				t.Fatalf("InsertTx result %+v, want a new job", r)
			}
			waitState(t, s, r.Job.ID, job.StateSucceeded)
		}

		rollback := errors.New("roll back")
		var gone store.InsertResult
		err = s.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
			var err error
			if gone, err = e.InsertTx(ctx, ex, job.InsertParams{Kind: "noop", IdempotencyKey: "two"}); err != nil {
				return err
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatalf("InTx: %v, want the function's error", err)
		}
		if _, err := s.JobGet(ctx, gone.Job.ID); !errors.Is(err, job.ErrNotFound) {
			t.Fatalf("job inserted in a rolled back transaction: %v, want job.ErrNotFound", err)
		}
		// Its idempotency key is free: a new insert creates a job.
		again, err := e.Insert(ctx, job.InsertParams{Kind: "noop", IdempotencyKey: "two"})
		if err != nil || !again.Created {
			t.Fatalf("insert after the rollback: %+v %v, want a new job", again, err)
		}
		waitState(t, s, again.Job.ID, job.StateSucceeded)
	})
}
