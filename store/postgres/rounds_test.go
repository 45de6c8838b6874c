package postgres

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/job"
)

// TestRoundsAreOneTransaction: the rounds of a transaction of its own are
// one transaction, BEGIN riding with the first and COMMIT with the last:
// the row the first round locks stays locked until the last commits, and
// a failing round rolls everything back.
func TestRoundsAreOneTransaction(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s := openStore(t, url, clock.Real)
	other := connect(t, url)
	res, err := s.JobInsertMany(t.Context(), []job.InsertParams{{Kind: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	id := res[0].Job.ID
	// locked reports whether another session finds the job's row locked.
	locked := func() bool {
		t.Helper()
		_, err := other.Exec(t.Context(), "SELECT 1 FROM jobd_jobs WHERE id = $1 FOR UPDATE NOWAIT", pgUUID(id))
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
			return true
		}
		if err != nil {
			t.Fatal(err)
		}
		return false
	}

	err = s.transact(t.Context(), func(r *rounds) error {
		cur, at, err := lockJob(t.Context(), r, nil, id)
		if err != nil {
			return err
		}
		if !locked() {
			t.Error("the first round's lock is gone before the last round")
		}
		tr, _, err := job.Cancel(job.FactsOf(cur), at)
		if err != nil {
			return err
		}
		_, err = setState(t.Context(), r, nil, cur, tr)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if locked() {
		t.Error("the row is still locked after the last round")
	}
	if j, err := s.JobGet(t.Context(), id); err != nil || j.State != job.StateCanceled {
		t.Fatalf("after the commit: %+v %v, want canceled", j, err)
	}

	// A last round that fails rolls the first back: nothing written, the
	// lock released, the connection back in the pool.
	res, err = s.JobInsertMany(t.Context(), []job.InsertParams{{Kind: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	id = res[0].Job.ID
	err = s.transact(t.Context(), func(r *rounds) error {
		if _, _, err := lockJob(t.Context(), r, nil, id); err != nil {
			return err
		}
		return r.round(t.Context(), true, func(b *pgx.Batch) { b.Queue("SELECT 1/0") }, func(br pgx.BatchResults) error {
			_, err := br.Exec()
			return err
		})
	})
	if err == nil {
		t.Fatal("a division by zero committed")
	}
	if locked() {
		t.Error("the row is still locked after the failed round")
	}
	if j, err := s.JobGet(t.Context(), id); err != nil || j.State != job.StateQueued {
		t.Fatalf("after the rollback: %+v %v, want queued", j, err)
	}
	events, err := s.JobEvents(t.Context(), id)
	if err != nil || len(events) != 1 {
		t.Fatalf("after the rollback: events %+v %v, want only queued", events, err)
	}
}
