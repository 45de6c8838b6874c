package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// JobFinish applies the lease holders' outcomes in one statement, which is
// one transaction. A batch of successes, the hot path, takes a leaner
// statement than a mix of outcomes. See store.Store.
func (s *Store) JobFinish(ctx context.Context, outcomes []store.Outcome) ([]store.FinishResult, error) {
	results := make([]store.FinishResult, len(outcomes))
	if len(outcomes) == 0 {
		return results, nil
	}
	allSucceeded := true
	for i, o := range outcomes {
		switch o.Status {
		case store.OutcomeSucceeded:
		case store.OutcomeFailed, store.OutcomeCanceled, store.OutcomeReleased:
			allSucceeded = false
		default:
			return nil, job.Invalid("status", "outcome %d: unknown status %q", i, o.Status)
		}
		if len(o.Result) > 0 && !json.Valid(o.Result) {
			return nil, job.Invalid("result", "outcome %d: must be JSON", i)
		}
	}
	var done map[store.Lease]store.FinishResult
	var err error
	if allSucceeded {
		done, err = s.finishSucceeded(ctx, outcomes)
	} else {
		done, err = s.finishMixed(ctx, outcomes)
	}
	if err != nil {
		return nil, err
	}
	for i, o := range outcomes {
		r, ok := done[o.Lease]
		if !ok {
			r = store.FinishResult{Lost: true}
		}
		results[i] = r
	}
	return results, nil
}

func (s *Store) finishSucceeded(ctx context.Context, outcomes []store.Outcome) (map[store.Lease]store.FinishResult, error) {
	ids, tokens, results := finishArrays(outcomes)
	rows, err := s.pool.Query(ctx, finishSucceededSQL, s.now(), ids, tokens, results)
	if err != nil {
		return nil, fmt.Errorf("postgres: finish: %w", err)
	}
	defer rows.Close()
	done := make(map[store.Lease]store.FinishResult, len(outcomes))
	for rows.Next() {
		var l store.Lease
		if err := rows.Scan(uuidDest(&l.ID), uuidDest(&l.Token)); err != nil {
			return nil, fmt.Errorf("postgres: finish: %w", err)
		}
		done[l] = store.FinishResult{State: job.StateSucceeded}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: finish: %w", err)
	}
	return done, nil
}

func (s *Store) finishMixed(ctx context.Context, outcomes []store.Outcome) (map[store.Lease]store.FinishResult, error) {
	ids, tokens, results := finishArrays(outcomes)
	statuses := make([]string, len(outcomes))
	errs := make([]string, len(outcomes))
	retryable := make([]bool, len(outcomes))
	delays := make([]time.Duration, len(outcomes))
	for i, o := range outcomes {
		statuses[i] = string(o.Status)
		errs[i] = o.Error
		retryable[i] = o.Retryable
		delays[i] = max(o.RetryDelay, 0)
	}
	rows, err := s.pool.Query(ctx, finishSQL, s.now(), ids, tokens, statuses, results, errs, retryable, delays)
	if err != nil {
		return nil, fmt.Errorf("postgres: finish: %w", err)
	}
	defer rows.Close()
	done := make(map[store.Lease]store.FinishResult, len(outcomes))
	later := make(map[string]time.Time) // queue -> earliest run_at of a delayed retry
	for rows.Next() {
		var (
			l            store.Lease
			queue, state string
			runAt        time.Time
			isLater      bool
		)
		if err := rows.Scan(uuidDest(&l.ID), uuidDest(&l.Token), &queue, &state, &runAt, &isLater); err != nil {
			return nil, fmt.Errorf("postgres: finish: %w", err)
		}
		r := store.FinishResult{State: job.State(state)}
		if r.State == job.StateQueued {
			r.RunAt = runAt
			if t, ok := later[queue]; isLater && (!ok || runAt.Before(t)) {
				later[queue] = runAt
			}
		}
		done[l] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: finish: %w", err)
	}
	for queue, t := range later {
		s.delayed.At(queue, t)
	}
	return done, nil
}

func finishArrays(outcomes []store.Outcome) (ids, tokens [][16]byte, results []json.RawMessage) {
	ids = make([][16]byte, len(outcomes))
	tokens = make([][16]byte, len(outcomes))
	results = make([]json.RawMessage, len(outcomes))
	for i, o := range outcomes {
		ids[i], tokens[i] = o.ID, o.Token
		if len(o.Result) > 0 {
			results[i] = o.Result
		}
	}
	return ids, tokens, results
}
