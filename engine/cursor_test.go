package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestClaimsFindJobsAheadOfTheCursor: a busy queue's claims start near
// the last job they took rather than at the best job, and still find
// every job that waits ahead of that: one whose wake-up says it sorts
// ahead (a better priority, an earlier run_at), and one they skipped
// while its lock_key was busy, once a PollInterval has passed since
// their last look from the best job. The engine runs on a fake clock,
// so nothing polls unless the test advances it.
func TestClaimsFindJobsAheadOfTheCursor(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		pri := func(p int) *int { return &p }
		now := time.Now()

		// A remote worker holds lock_key k, so the engine's claims skip
		// the job that waits for it, which sorts before all the others.
		holder := insert(t, s, job.InsertParams{Kind: "noop", LockKey: "k"})
		held, err := s.JobClaim(ctx, store.ClaimParams{Queue: job.DefaultQueue, Max: 1, Owner: "remote"})
		if err != nil || len(held) != 1 || held[0].ID != holder.ID {
			t.Fatalf("remote claim: %v, %d jobs", err, len(held))
		}
		waiter := insert(t, s, job.InsertParams{Kind: "noop", LockKey: "k", Priority: pri(0), RunAt: now.Add(-time.Hour)})

		clk := clock.NewFake(now)
		const poll = time.Hour
		e := newEngine(t, s, newLogs(t), engine.Config{
			Queues: queue(4), Clock: clk, PollInterval: poll,
			HeartbeatInterval: 10 * poll, ReaperInterval: 10 * poll,
		})
		start(t, e)
		waitListening(t, e, s)

		// The claims take a job and keep their place after it.
		first := insert(t, s, job.InsertParams{Kind: "noop", Priority: pri(5)})
		waitState(t, s, first.ID, job.StateSucceeded)

		// A better priority than the last job taken: its wake-up sends
		// the claim back to the best job.
		better := insert(t, s, job.InsertParams{Kind: "noop", Priority: pri(1)})
		waitState(t, s, better.ID, job.StateSucceeded)

		// The same priority, an earlier run_at (an insert that began
		// long before it committed, or another node's clock): likewise.
		earlier := insert(t, s, job.InsertParams{Kind: "noop", Priority: pri(1), RunAt: now.Add(-time.Minute)})
		waitState(t, s, earlier.ID, job.StateSucceeded)

		// The lock_key is free, and no wake-up says so: the claims that
		// the next wake-ups cause find the waiter once a PollInterval has
		// passed since the last look from the best job, before any poll.
		if _, err := s.JobFinish(ctx, []store.Outcome{{Lease: store.Lease{ID: holder.ID, Token: held[0].LeaseToken, Owner: "remote"}, Outcome: job.Outcome{Status: store.OutcomeSucceeded}}}); err != nil {
			t.Fatalf("remote finish: %v", err)
		}
		clk.Advance(poll / 2)
		later := insert(t, s, job.InsertParams{Kind: "noop", Priority: pri(5)})
		waitState(t, s, later.ID, job.StateSucceeded)
		if j, err := s.JobGet(ctx, waiter.ID); err != nil || j.State != job.StateQueued {
			t.Fatalf("the waiter is %v (%v) before a PollInterval passed, want it still queued behind the cursor", j.State, err)
		}
		clk.Advance(poll / 2)
		insert(t, s, job.InsertParams{Kind: "noop", Priority: pri(5)})
		waitState(t, s, waiter.ID, job.StateSucceeded)
	})
}
