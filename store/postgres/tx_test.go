package postgres

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/job"
)

// TestWithTxCommitsWithTheCallersStatements: the caller's own statements
// and the jobs inserted through WithTx of its transaction commit together,
// or not at all.
func TestWithTxCommitsWithTheCallersStatements(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s := openStore(t, url, clock.Real)
	conn := connect(t, url)
	ctx := t.Context()
	if _, err := conn.Exec(ctx, `CREATE TABLE orders (id integer PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	// order inserts the order and its job in one transaction of the
	// caller's, and commits unless fail says otherwise.
	order := func(id int, fail error) (job.InsertParams, error) {
		p := job.InsertParams{Kind: "ship", IdempotencyKey: fmt.Sprintf("order-%d", id)}
		return p, pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := s.WithTx(tx).JobInsertMany(ctx, []job.InsertParams{p}); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO orders (id) VALUES ($1)`, id); err != nil {
				return err
			}
			return fail
		})
	}
	counts := func() (orders, jobs, events int) {
		t.Helper()
		err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM jobd_jobs)`).Scan(&orders, &jobs)
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
