package postgres

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestFeedWaitsForOpenTransactions: a transaction that began before
// another one committed stamps its job earlier (updated_at is the
// transaction's start) but commits later. A feed that handed out the
// committed job would move its cursor past the other one, which would
// then never be delivered. The feed holds both back while the older
// transaction is open, and delivers both, in order, once it commits.
func TestFeedWaitsForOpenTransactions(t *testing.T) {
	t.Parallel()
	s := openStore(t, migratedDatabase(t), clock.Real)
	ctx := t.Context()
	since := time.Unix(0, 0).UTC()
	feed := func() []uuid.UUID {
		t.Helper()
		res, err := s.JobList(ctx, store.ListParams{UpdatedSince: &since, Limit: 10})
		if err != nil {
			t.Fatalf("JobList: %v", err)
		}
		ids := make([]uuid.UUID, len(res.Jobs))
		for i, j := range res.Jobs {
			ids[i] = j.ID
		}
		return ids
	}

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	early, err := s.WithTx(tx).JobInsertMany(ctx, []job.InsertParams{{Kind: "early"}})
	if err != nil {
		t.Fatal(err)
	}
	late, err := s.JobInsertMany(ctx, []job.InsertParams{{Kind: "late"}})
	if err != nil {
		t.Fatal(err)
	}
	if !early[0].Job.UpdatedAt.Before(late[0].Job.UpdatedAt) {
		t.Fatalf("updated_at: early %v, late %v; want early first", early[0].Job.UpdatedAt, late[0].Job.UpdatedAt)
	}
	if got := feed(); len(got) != 0 {
		t.Fatalf("feed while an older transaction is open: %v, want nothing yet", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got := feed()
	if len(got) != 2 || got[0] != early[0].Job.ID || got[1] != late[0].Job.ID {
		t.Fatalf("feed after the commit: %v, want [%s %s]", got, early[0].Job.ID, late[0].Job.ID)
	}
}

// TestFeedWithoutHorizonOnFakeClock: with a fake clock, updated_at is the
// clock's time, not a transaction's start, so no horizon applies: an open
// transaction does not hold the feed back.
func TestFeedWithoutHorizonOnFakeClock(t *testing.T) {
	t.Parallel()
	url := migratedDatabase(t)
	s := openStore(t, url, clock.NewFake(time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC)))
	ctx := t.Context()
	tx, err := connect(t, url).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read only
	if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	res, err := s.JobInsertMany(ctx, []job.InsertParams{{Kind: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	since := res[0].Job.UpdatedAt
	page, err := s.JobList(ctx, store.ListParams{UpdatedSince: &since, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Jobs) != 1 || page.Jobs[0].ID != res[0].Job.ID {
		t.Fatalf("feed: %d jobs, want the one inserted", len(page.Jobs))
	}
}
