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
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(1), PollInterval: time.Hour})
		start(t, e)
		// The insert's own wake-up must not come before the engine listens.
		waitListening(t, e, s)
		j := insert(t, s, job.InsertParams{Kind: "noop"})
		waitState(t, s, j.ID, job.StateSucceeded)
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
		e := newEngine(t, c, newLogs(t), engine.Config{
			Queues: queue(4), Clock: clk, PollInterval: poll,
			HeartbeatInterval: time.Hour, ReaperInterval: time.Hour,
		})
		armed := engine.PollArmedSignal(e)
		armed.Init()
		start(t, e)
		armed.Wait(t, "the first claim")
		// Each advance lets at most one poll claim; after each, wait for
		// the poll to be armed again (each claim arms it) before the next.
		advances := 0
		for c.n.Load() < 6 {
			clk.Advance(poll)
			advances++
			armed.Wait(t, "a claim after an advance")
		}
		// One claim at the start, at most one per advance, and one spare
		// for a wake-up from the store's listener when it connects.
		if n := c.n.Load(); n > int64(advances)+2 {
			t.Errorf("%d claims for %d polls of an idle queue", n, advances)
		}
	})
}
