package sqlite

import (
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/storetest"
)

// TestStampsIncreaseOnStillClock: with a clock that stands still, each
// write transaction still stamps its jobs' updated_at after every earlier
// one, even after the newest row was deleted, while created_at and the
// other times keep the clock's value.
func TestStampsIncreaseOnStillClock(t *testing.T) {
	now := time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC)
	s := openTemp(t, clock.NewFake(now))
	ctx := t.Context()
	insert := func(queue string) *job.Job {
		t.Helper()
		res, err := s.JobInsertMany(ctx, []job.InsertParams{{Queue: queue, Kind: "k"}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0].Job
	}
	a := insert("q")
	b := insert("q")
	if !a.UpdatedAt.Equal(now) || !b.UpdatedAt.After(a.UpdatedAt) {
		t.Fatalf("updated_at %v then %v on a clock standing at %v: want the clock's, then later", a.UpdatedAt, b.UpdatedAt, now)
	}
	if !b.CreatedAt.Equal(now) || !b.RunAt.Equal(now) {
		t.Fatalf("created_at %v run_at %v, want the clock's %v", b.CreatedAt, b.RunAt, now)
	}

	// The newest row goes: the next stamp still comes after it.
	gone, err := s.JobCancel(ctx, insert("gone").ID)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.QueuePurge(ctx, "gone"); err != nil || n != 1 {
		t.Fatalf("QueuePurge: %d, %v; want 1", n, err)
	}
	c, err := s.JobClaim(ctx, store.ClaimParams{Queue: "q", Max: 1, Owner: "w"})
	if err != nil || len(c) != 1 {
		t.Fatalf("JobClaim: %d jobs, %v", len(c), err)
	}
	if !c[0].UpdatedAt.After(gone.UpdatedAt) {
		t.Fatalf("updated_at %v after a deleted job's %v: want later", c[0].UpdatedAt, gone.UpdatedAt)
	}
	if !c[0].StartedAt.Equal(now) || !c[0].LeaseExpiresAt.Equal(now.Add(job.DefaultLeaseTTL)) {
		t.Fatalf("started_at %v lease_expires_at %v, want the clock's", c[0].StartedAt, c[0].LeaseExpiresAt)
	}
}

// TestFeedExactOnStillClock runs the suite's feed check with a clock that
// stands still, so that every stamp comes from the table's newest one.
func TestFeedExactOnStillClock(t *testing.T) {
	storetest.FeedExactlyOnce(t, openTemp(t, clock.NewFake(time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC))))
}
