package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestLimitedClaimIsReadCommitted: the limited claim's transactions are
// READ COMMITTED even when the server's default is REPEATABLE READ (its
// own, InTx's, and a savepoint's inside InTx); in a caller's transaction
// that is not, a limited claim fails and claims nothing (its snapshot
// could predate the claims committed before it took the queue's lock).
func TestLimitedClaimIsReadCommitted(t *testing.T) {
	t.Parallel()
	url := migratedDatabase(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	s := openStore(t, url+sep+"default_transaction_isolation=repeatable%20read", clock.Real)
	ctx := t.Context()
	var isolation string
	if err := s.pool.QueryRow(ctx, "SHOW default_transaction_isolation").Scan(&isolation); err != nil || isolation != "repeatable read" {
		t.Fatalf("the server's default isolation: %q, %v; want repeatable read", isolation, err)
	}
	for _, q := range []string{"a", "b"} {
		if err := s.QueueSetLimits(ctx, q, flow.Limits{GlobalLimit: 2}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.JobInsertMany(ctx, []job.InsertParams{{Queue: q, Kind: "k"}, {Queue: q, Kind: "k"}, {Queue: q, Kind: "k"}}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.JobClaim(ctx, store.ClaimParams{Queue: "a", Max: 1, Owner: "me"}); err != nil || len(got) != 1 {
		t.Fatalf("claim of its own: %d jobs, %v; want 1", len(got), err)
	}
	err := s.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
		for _, q := range []string{"a", "b"} {
			got, err := ex.JobClaim(ctx, store.ClaimParams{Queue: q, Max: 5, Owner: "me"})
			if err != nil {
				return err
			}
			if want := map[string]int{"a": 1, "b": 2}[q]; len(got) != want {
				t.Errorf("claim of %s in InTx: %d jobs, want %d", q, len(got), want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("InTx: %v", err)
	}

	if _, err := s.JobInsertMany(ctx, []job.InsertParams{{Queue: "c", Kind: "k"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.QueueSetLimits(ctx, "c", flow.Limits{GlobalLimit: 1}); err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		got, err := s.WithTx(tx).JobClaim(ctx, store.ClaimParams{Queue: "c", Max: 1, Owner: "me"})
		if len(got) != 0 {
			t.Errorf("claimed %d jobs in a REPEATABLE READ transaction", len(got))
		}
		return err
	})
	if !errors.Is(err, errClaimIsolation) {
		t.Fatalf("a limited claim in a REPEATABLE READ transaction: %v, want %v", err, errClaimIsolation)
	}
}

// TestLimitedClaimInTxSkipsBusyQueues: inside a transaction that holds
// the lock of one limited queue already, the claim of another whose lock
// a claim elsewhere holds claims nothing rather than wait for it (two
// such transactions, locking in opposite orders, would deadlock); the
// first lock of a transaction waits.
func TestLimitedClaimInTxSkipsBusyQueues(t *testing.T) {
	t.Parallel()
	url := migratedDatabase(t)
	s := openStore(t, url, clock.Real)
	ctx := t.Context()
	for _, q := range []string{"a", "b"} {
		if err := s.QueueSetLimits(ctx, q, flow.Limits{GlobalLimit: 5}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.JobInsertMany(ctx, []job.InsertParams{{Queue: q, Kind: "k"}}); err != nil {
			t.Fatal(err)
		}
	}
	// Another transaction holds b's lock.
	other := connect(t, url)
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	var isolation string
	var limited, counted *bool
	if err := tx.QueryRow(ctx, flowLockSQL, "b").Scan(&isolation, &limited, &counted); err != nil || limited == nil {
		t.Fatalf("lock b: %v, %v", limited, err)
	}
	err = s.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
		got, err := ex.JobClaim(ctx, store.ClaimParams{Queue: "a", Max: 5, Owner: "me"})
		if err != nil || len(got) != 1 {
			t.Errorf("claim of a: %d jobs, %v; want 1", len(got), err)
		}
		got, err = ex.JobClaim(ctx, store.ClaimParams{Queue: "b", Max: 5, Owner: "me"})
		if err != nil || len(got) != 0 {
			t.Errorf("claim of b, locked elsewhere: %d jobs, %v; want none at once", len(got), err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("InTx: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := s.JobClaim(ctx, store.ClaimParams{Queue: "b", Max: 5, Owner: "me"}); err != nil || len(got) != 1 {
		t.Fatalf("claim of b once free: %d jobs, %v; want 1", len(got), err)
	}
}
