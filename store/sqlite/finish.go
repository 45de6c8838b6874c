package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// finishSQL is the statement of each outcome.
var finishSQL = map[store.OutcomeStatus]*string{
	store.OutcomeSucceeded: &finishSucceededSQL,
	store.OutcomeFailed:    &finishFailedSQL,
	store.OutcomeCanceled:  &finishCanceledSQL,
	store.OutcomeReleased:  &finishReleasedSQL,
}

// JobFinish applies the lease holders' outcomes in one transaction, each
// fenced by its token. Outcomes are checked first: one with an unknown
// status or a result that is not JSON fails the call and writes nothing.
// A batch of successes of distinct jobs, the hot path, is one statement;
// any other batch is applied outcome by outcome, in order, so that of two
// outcomes for one lease the first wins.
func (s *Store) JobFinish(ctx context.Context, outcomes []store.Outcome) ([]store.FinishResult, error) {
	if len(outcomes) == 0 {
		return nil, nil
	}
	for i, o := range outcomes {
		if _, ok := finishSQL[o.Status]; !ok {
			return nil, job.Invalid("status", "outcome %d: unknown status %q", i, o.Status)
		}
		if err := checkJSON("result", o.Result); err != nil {
			return nil, err
		}
	}

	var wake *wakeups
	results := make([]store.FinishResult, len(outcomes))
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		wake = newWakeups(tx.now)
		journal := newJournal(tx.now)
		if successesOnce(outcomes) {
			if err := finishSuccesses(ctx, tx, journal, outcomes, results); err != nil {
				return err
			}
			return journal.flush(ctx, tx.Tx)
		}
		stmts := make(map[store.OutcomeStatus]*sql.Stmt)
		defer func() {
			for _, st := range stmts {
				st.Close()
			}
		}()
		for i, o := range outcomes {
			stmt, ok := stmts[o.Status]
			if !ok {
				var err error
				if stmt, err = tx.PrepareContext(ctx, *finishSQL[o.Status]); err != nil {
					return fmt.Errorf("prepare %s: %w", o.Status, err)
				}
				stmts[o.Status] = stmt
			}
			res, err := finishOne(ctx, stmt, journal, o, tx)
			if err != nil {
				return err
			}
			results[i] = res.FinishResult
			if res.State == job.StateQueued {
				wake.add(res.queue, res.runAt)
			}
		}
		return journal.flush(ctx, tx.Tx)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: finish jobs: %w", err)
	}
	s.send(wake)
	return results, nil
}

type finished struct {
	store.FinishResult
	queue string
	runAt int64
}

// finishOne applies one outcome, with the times of tx, and journals the
// transition it made.
func finishOne(ctx context.Context, stmt *sql.Stmt, journal *journal, o store.Outcome, tx *jobWrite) (finished, error) {
	var (
		f       finished
		state   string
		attempt int
	)
	err := stmt.QueryRowContext(ctx,
		sql.Named("id", o.ID.String()),
		sql.Named("token", o.Token.String()),
		sql.Named("now", tx.now),
		sql.Named("stamp", tx.stamp),
		sql.Named("result", nullJSON(o.Result)),
		sql.Named("error", o.Error),
		sql.Named("retryable", o.Retryable),
		sql.Named("retry_at", tx.now+max(o.RetryDelay, 0).Microseconds()),
	).Scan(&f.queue, &state, &f.runAt, &attempt)
	if errors.Is(err, sql.ErrNoRows) {
		f.Lost = true
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("finish job %s: %w", o.ID, err)
	}
	f.State = job.State(state)

	var (
		kind   job.EventKind
		detail string
	)
	switch {
	case f.State == job.StateSucceeded:
		kind = job.EventSucceeded
	case f.State == job.StateFailed:
		kind, detail = job.EventFailed, o.Error
	case f.State == job.StateCanceled:
		kind, detail = job.EventCanceled, o.Error
	case o.Status == store.OutcomeReleased:
		// The event names the attempt given back, not the counter's new value.
		kind, attempt = job.EventRequeued, attempt+1
		f.RunAt = fromMicro(f.runAt)
	default:
		kind, detail = job.EventRetried, o.Error
		f.RunAt = fromMicro(f.runAt)
	}
	journal.add(o.ID, kind, attempt, detail)
	return f, nil
}

// successesOnce reports whether outcomes is the hot path: successes only,
// each job once, which one statement can apply.
func successesOnce(outcomes []store.Outcome) bool {
	seen := make(map[uuid.UUID]bool, len(outcomes))
	for _, o := range outcomes {
		if o.Status != store.OutcomeSucceeded || seen[o.ID] {
			return false
		}
		seen[o.ID] = true
	}
	return true
}

// finishSuccesses applies a batch of successes of distinct jobs in one
// statement, filling results and journaling in the outcomes' order.
func finishSuccesses(ctx context.Context, tx *jobWrite, journal *journal, outcomes []store.Outcome, results []store.FinishResult) error {
	type success struct {
		ID     string  `json:"id"`
		Token  string  `json:"token"`
		Result *string `json:"result,omitempty"`
	}
	batch := make([]success, len(outcomes))
	index := make(map[string]int, len(outcomes))
	for i, o := range outcomes {
		batch[i] = success{ID: o.ID.String(), Token: o.Token.String()}
		if len(o.Result) > 0 {
			r := string(o.Result)
			batch[i].Result = &r
		}
		index[batch[i].ID] = i
		results[i] = store.FinishResult{Lost: true}
	}
	body, err := json.Marshal(batch)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, finishSucceededBatchSQL,
		sql.Named("batch", string(body)), sql.Named("now", tx.now), sql.Named("stamp", tx.stamp))
	if err != nil {
		return fmt.Errorf("finish successes: %w", err)
	}
	defer rows.Close()
	attempts := make([]int, len(outcomes))
	for rows.Next() {
		var (
			id      string
			attempt int
		)
		if err := rows.Scan(&id, &attempt); err != nil {
			return fmt.Errorf("finish successes: %w", err)
		}
		i, ok := index[id]
		if !ok {
			return fmt.Errorf("finish successes: job %s was not in the batch", id)
		}
		results[i] = store.FinishResult{State: job.StateSucceeded}
		attempts[i] = attempt
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("finish successes: %w", err)
	}
	for i, o := range outcomes {
		if !results[i].Lost {
			journal.add(o.ID, job.EventSucceeded, attempts[i], "")
		}
	}
	return nil
}
