package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestUnstorableOutcomeFailsItsJob: a handler whose result no store can
// keep (a Go string with a NUL marshals to "\u0000", which PostgreSQL's
// jsonb refuses) fails its job, not retried, with an error that says why;
// a handler whose error text holds a NUL fails its job with that text
// made storable. Every other job of the node, finished in the same
// batches, succeeds (issue 10, defect 3).
func TestUnstorableOutcomeFailsItsJob(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		l := newLogs(t)
		e := newEngine(t, s, l, engine.Config{Queues: queue(8)})
		engine.Register(e, "nul-result", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) {
			return "a\x00b", nil
		})
		engine.Register(e, "nul-error", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) {
			return "", engine.Permanent(errors.New("bad\x00error"))
		})
		params := []job.InsertParams{{Kind: "nul-result", MaxAttempts: 5}, {Kind: "nul-error"}}
		for range 30 {
			params = append(params, job.InsertParams{Kind: "noop"})
		}
		res, err := s.JobInsertMany(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		start(t, e)

		bad := waitState(t, s, res[0].Job.ID, job.StateFailed)
		if bad.Attempt != 1 || !strings.Contains(bad.LastError, "result refused by the store") ||
			!strings.Contains(bad.LastError, `\u0000`) {
			t.Fatalf("the job of the unstorable result: attempt %d, error %q; want attempt 1 and an error saying why",
				bad.Attempt, bad.LastError)
		}
		nulErr := waitState(t, s, res[1].Job.ID, job.StateFailed)
		if nulErr.LastError != "bad\uFFFDerror" {
			t.Fatalf("the job of the NUL error: error %q, want %q", nulErr.LastError, "bad\uFFFDerror")
		}
		for _, r := range res[2:] {
			waitState(t, s, r.Job.ID, job.StateSucceeded)
		}
	})
}

// refusingStore is a real store whose database refuses (store.ErrRefused)
// every batch of outcomes that holds the success of one job, as a
// database refuses a value that passed the checks in Go (a result over a
// limit of its own).
type refusingStore struct {
	store.Store
	bad     uuid.UUID
	refused atomic.Int64
}

func (s *refusingStore) JobFinish(ctx context.Context, outcomes []store.Outcome) ([]store.FinishResult, error) {
	for _, o := range outcomes {
		if o.ID == s.bad && o.Status == store.OutcomeSucceeded {
			s.refused.Add(1)
			return nil, store.Mark(errors.New("value too large to store"), store.ErrRefused)
		}
	}
	return s.Store.JobFinish(ctx, outcomes)
}

// TestRefusedBatchIsIsolated: when the database refuses a batch of
// outcomes, the finisher isolates the outcome it refuses, which fails its
// job saying why, and writes the rest of the batch (issue 10, defect 3).
func TestRefusedBatchIsIsolated(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		params := make([]job.InsertParams, 40)
		for i := range params {
			params[i] = job.InsertParams{Kind: "noop"}
		}
		res, err := s.JobInsertMany(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		rs := &refusingStore{Store: s, bad: res[17].Job.ID}
		l := newLogs(t)
		start(t, newEngine(t, rs, l, engine.Config{Queues: queue(40)}))

		bad := waitState(t, s, rs.bad, job.StateFailed)
		if bad.Attempt != 1 || !strings.Contains(bad.LastError, "result refused by the store") ||
			!strings.Contains(bad.LastError, "value too large to store") {
			t.Fatalf("the refused job: attempt %d, error %q; want attempt 1 and an error saying why", bad.Attempt, bad.LastError)
		}
		for i, r := range res {
			if i != 17 {
				waitState(t, s, r.Job.ID, job.StateSucceeded)
			}
		}
		if rs.refused.Load() == 0 {
			t.Fatal("the store never refused a batch: the test tested nothing")
		}
	})
}
