package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestWakeUpRunsJobsWithoutPolling: with a poll of an hour, only the
// store's wake-ups can get a job inserted after the start claimed.
func TestWakeUpRunsJobsWithoutPolling(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		start(t, newEngine(t, s, newLogs(t), engine.Config{Queues: queue(1), PollInterval: time.Hour}))
		j := insert(t, s, job.InsertParams{Kind: "noop"})
		// The insert's own wake-up may come before the engine listens:
		// wake again until the job runs.
		waitFor(t, 30*time.Second, "the job to run", func() bool {
			got, err := s.JobGet(context.Background(), j.ID)
			if err != nil {
				t.Fatalf("JobGet: %v", err)
			}
			if got.State == job.StateSucceeded {
				return true
			}
			if err := s.Wake(context.Background(), job.DefaultQueue); err != nil {
				t.Fatalf("Wake: %v", err)
			}
			return false
		})
	})
}

// claimCounter is the real store, counting JobClaim calls.
type claimCounter struct {
	store.Store
	n atomic.Int64
}

func (c *claimCounter) JobClaim(ctx context.Context, p store.ClaimParams) ([]*job.Job, error) {
	c.n.Add(1)
	return c.Store.JobClaim(ctx, p)
}

// TestIdleQueueClaimsOncePerPoll: an idle engine claims once per
// PollInterval, not more (the engine runs on a fake clock).
func TestIdleQueueClaimsOncePerPoll(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		c := &claimCounter{Store: s}
		clk := clock.NewFake(time.Now())
		const poll = time.Second
		start(t, newEngine(t, c, newLogs(t), engine.Config{
			Queues: queue(4), Clock: clk, PollInterval: poll,
			HeartbeatInterval: time.Hour, ReaperInterval: time.Hour,
		}))
		waitFor(t, 30*time.Second, "the first claim", func() bool { return c.n.Load() >= 1 })
		// Each advance lets at most one poll claim; advance until five
		// more claims came (an advance may land before the engine armed
		// its next poll, and then claims nothing).
		advances := 0
		waitFor(t, 30*time.Second, "five polls", func() bool {
			if c.n.Load() >= 6 {
				return true
			}
			clk.Advance(poll)
			advances++
			return false
		})
		// One claim at the start, at most one per advance, and one spare
		// for a wake-up from the store's listener when it connects.
		if n := c.n.Load(); n > int64(advances)+2 {
			t.Errorf("%d claims for %d polls of an idle queue", n, advances)
		}
	})
}
