package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestFailureWaitsQueueBackoff: a retryable failure waits the backoff of
// its queue's pool, which RetryDelay reports for the HTTP API to apply to
// remote workers' failures alike; a queue without a pool here backs off
// by DefaultBackoff (issue 10, defect 7).
func TestFailureWaitsQueueBackoff(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		hourly := engine.QueueConfig{Queue: "hourly", Concurrency: 1,
			Backoff: engine.Backoff{Kind: engine.BackoffLinear, Step: time.Hour, Max: 24 * time.Hour}}
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: []engine.QueueConfig{hourly}})
		engine.Register(e, "fails", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) {
			return "", errors.New("upstream down")
		})
		before := time.Now()
		j := insert(t, s, job.InsertParams{Kind: "fails", Queue: "hourly"})
		start(t, e)
		got := waitJob(t, s, j.ID, "queued again", func(j *job.Job) bool { return j.State == job.StateQueued && j.Attempt == 1 })
		if d := got.RunAt.Sub(before); d < 50*time.Minute || d > 70*time.Minute {
			t.Fatalf("run_at %s after the insert, want the queue's hour", d)
		}
		if d := e.RetryDelay("hourly", 2); d != 2*time.Hour {
			t.Errorf("RetryDelay of the second attempt: %s, want 2h", d)
		}
		for range 20 {
			if d := e.RetryDelay("no-pool-here", 1); d < 800*time.Millisecond || d > 1200*time.Millisecond {
				t.Fatalf("RetryDelay of a queue without a pool: %s, want DefaultBackoff's 1s ±20%%", d)
			}
		}
	})
}
