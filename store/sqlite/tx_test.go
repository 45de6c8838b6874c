package sqlite

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestTxOfCommitsWithTheCallersStatements: the caller's own statements,
// on the transaction TxOf gives, and the jobs inserted through the same
// Executor commit together, or not at all.
func TestTxOfCommitsWithTheCallersStatements(t *testing.T) {
	s := openTemp(t, nil)
	ctx := t.Context()
	if _, ok := TxOf(&s.executor); ok {
		t.Fatal("TxOf of the Store's own executor: a transaction, want none")
	}
	// order inserts the order and its job in one transaction, and commits
	// unless fail says otherwise.
	order := func(id int, fail error) (job.InsertParams, error) {
		p := job.InsertParams{Kind: "ship", IdempotencyKey: fmt.Sprintf("order-%d", id)}
		return p, s.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
			tx, ok := TxOf(ex)
			if !ok {
				return errors.New("TxOf of InTx's Executor: no transaction")
			}
			if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY)`); err != nil {
				return err
			}
			if _, err := ex.JobInsertMany(ctx, []job.InsertParams{p}); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id) VALUES (?)`, id); err != nil {
				return err
			}
			return fail
		})
	}
	counts := func() (orders, jobs, events int) {
		t.Helper()
		err := s.r.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM jobd_jobs)`).Scan(&orders, &jobs)
		if err != nil {
			t.Fatal(err)
		}
		return orders, jobs, journalEntries(t, s)
	}

	if _, err := order(1, nil); err != nil {
		t.Fatalf("order 1: %v", err)
	}
	if o, j, ev := counts(); o != 1 || j != 1 || ev != 1 {
		t.Fatalf("after a commit: %d orders, %d jobs, %d events; want 1 each", o, j, ev)
	}
	// The caller's statement fails after the job's insert: neither stays.
	if _, err := order(1, nil); err == nil {
		t.Fatal("a duplicate order committed")
	}
	// The caller rolls back after both: neither stays.
	stop := errors.New("changed my mind")
	p, err := order(2, stop)
	if !errors.Is(err, stop) {
		t.Fatalf("order 2: %v", err)
	}
	if o, j, ev := counts(); o != 1 || j != 1 || ev != 1 {
		t.Fatalf("after two rollbacks: %d orders, %d jobs, %d events; want 1 each", o, j, ev)
	}
	// Nothing of the rolled back insert holds its idempotency key.
	res, err := s.JobInsertMany(ctx, []job.InsertParams{p})
	if err != nil || !res[0].Created {
		t.Fatalf("insert after the rollback: %+v %v, want a new job", res, err)
	}
}
