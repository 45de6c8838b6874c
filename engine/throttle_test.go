package engine_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestThrottleHoldsBeforeTheNextClaim: a handler's engine.Throttle goes
// back to the queue without counting its attempt ("throttled"), and the
// pool claims nothing more of the queue before that throttle is written:
// with one worker, on a queue that throttles by partition_key, the next
// job of the throttled partition is never started, and the other
// partition's job, behind it in the queue, is.
func TestThrottleHoldsBeforeTheNextClaim(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		const q = "thr"
		if err := s.QueueSetLimits(context.Background(), q, flow.Limits{ThrottleBy: flow.ByPartitionKey}); err != nil {
			t.Fatal(err)
		}
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: []engine.QueueConfig{{Queue: q, Concurrency: 1}}})
		var mu sync.Mutex
		var ran []string
		engine.Register(e, "call", func(ctx context.Context, j *engine.Job[struct{ N string }]) (string, error) {
			mu.Lock()
			ran = append(ran, j.Args.N)
			mu.Unlock()
			if j.PartitionKey == "a" {
				return "", engine.Throttle(errors.New("the API answered 429"), time.Hour)
			}
			return "ok", nil
		})
		a1 := insert(t, s, job.InsertParams{Kind: "call", Queue: q, PartitionKey: "a", Args: []byte(`{"N":"a1"}`), MaxAttempts: 1})
		a2 := insert(t, s, job.InsertParams{Kind: "call", Queue: q, PartitionKey: "a", Args: []byte(`{"N":"a2"}`)})
		b1 := insert(t, s, job.InsertParams{Kind: "call", Queue: q, PartitionKey: "b", Args: []byte(`{"N":"b1"}`)})
		start(t, e)
		waitState(t, s, b1.ID, job.StateSucceeded)

		mu.Lock()
		got := slices.Clone(ran)
		mu.Unlock()
		if !slices.Equal(got, []string{"a1", "b1"}) {
			t.Fatalf("handlers ran for %v, want a1 then b1 (a2's partition throttled)", got)
		}
		j, err := s.JobGet(context.Background(), a1.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventThrottled}
		if j.State != job.StateQueued || j.Attempt != 0 || !slices.Equal(eventKinds(t, s, a1.ID), want) {
			t.Fatalf("a1: state %s attempt %d journal %v; want queued, attempt 0, %v", j.State, j.Attempt, eventKinds(t, s, a1.ID), want)
		}
		if j, err := s.JobGet(context.Background(), a2.ID); err != nil || j.State != job.StateQueued || j.Attempt != 0 {
			t.Fatalf("a2: %+v, %v; want queued, never claimed", j, err)
		}
	})
}
