package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// JobFinish applies the lease holders' outcomes in one transaction. A
// batch of successes of distinct jobs, the hot path, is one statement that
// reads nothing first. Any other batch takes two round trips: one locks
// the rows still held (BEGIN travels with it), then, decided in Go
// (store.DecideFinish), one statement applies the decisions (COMMIT
// travels with it); a batch that ends workflow tasks takes one more
// between them, the workflow step (lockStep). The hot statement leaves
// workflow tasks alone (it commits with its round, before it could know
// of them): the outcomes it did not apply, tasks' and lost leases', then
// take the general path, in a transaction of their own (in the caller's
// transaction, in that one), where each task's end and its workflow step
// commit together. See store.Store.
func (s *executor) JobFinish(ctx context.Context, outcomes []store.Outcome) ([]store.FinishResult, error) {
	if len(outcomes) == 0 {
		return []store.FinishResult{}, nil
	}
	if err := store.CheckOutcomes(outcomes); err != nil {
		return nil, err
	}
	if store.SucceededOnce(outcomes) {
		var results []store.FinishResult
		err := s.transact(ctx, func(r *rounds) error {
			var err error
			results, err = s.finishSucceeded(ctx, r, outcomes)
			return err
		})
		if err != nil {
			return nil, errorf("postgres: finish: %w", err)
		}
		results, err = s.finishRest(ctx, outcomes, results)
		if err != nil {
			return nil, err
		}
		return s.repeats(ctx, outcomes, results)
	}
	results, err := s.finishGeneral(ctx, outcomes)
	if err != nil {
		return nil, errorf("postgres: finish: %w", err)
	}
	return s.repeats(ctx, outcomes, results)
}

// repeats tells, among the lost outcomes of a batch JobFinish applied, the
// repeats of the outcome their rows remember (store.MarkRepeats), in one
// more round that only reads, sent only when an outcome was lost.
func (s *executor) repeats(ctx context.Context, outcomes []store.Outcome, results []store.FinishResult) ([]store.FinishResult, error) {
	lost := store.LostLeases(outcomes, results)
	if len(lost) == 0 {
		return results, nil
	}
	ids := make([][16]byte, len(lost))
	tokens := make([][16]byte, len(lost))
	for i, l := range lost {
		ids[i], tokens[i] = l.ID, l.Token
	}
	var accepted []store.Accepted
	err := s.transact(ctx, func(r *rounds) error {
		return r.pinnedRound(ctx, true, func(b *pgx.Batch) { b.Queue(outcomeAcceptedSQL, ids, tokens) }, func(br pgx.BatchResults) error {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			var (
				a      store.Accepted
				status string
				state  string
			)
			_, err = pgx.ForEachRow(rows, []any{uuidDest(&a.ID), uuidDest(&a.Token), &status, &a.Owner, &state}, func() error {
				a.Status, a.State = store.OutcomeStatus(status), job.State(state)
				accepted = append(accepted, a)
				return nil
			})
			return err
		})
	})
	if err != nil {
		return nil, errorf("postgres: finish: read the outcomes remembered: %w", err)
	}
	store.MarkRepeats(outcomes, results, accepted)
	return results, nil
}

// finishRest applies, by the general path, the outcomes of a batch of
// successes that the hot statement did not apply (results[i].Lost): a
// workflow task's, or a lease lost indeed, which the general path
// reports lost again.
func (s *executor) finishRest(ctx context.Context, outcomes []store.Outcome, results []store.FinishResult) ([]store.FinishResult, error) {
	var (
		rest  []store.Outcome
		index []int
	)
	for i, r := range results {
		if r.Lost {
			rest, index = append(rest, outcomes[i]), append(index, i)
		}
	}
	if len(rest) == 0 {
		return results, nil
	}
	more, err := s.finishGeneral(ctx, rest)
	if err != nil {
		return nil, errorf("postgres: finish: %w", err)
	}
	for n, i := range index {
		results[i] = more[n]
	}
	return results, nil
}

// finishGeneral is the general path of JobFinish, in a transaction of
// its own (or the caller's). Every transaction locks tasks in one order
// (see workflow_reach_lock.sql); should PostgreSQL still break a
// deadlock by failing this one, a transaction of its own is run again
// (in the caller's, the deadlock aborted it: the error goes back).
func (s *executor) finishGeneral(ctx context.Context, outcomes []store.Outcome) ([]store.FinishResult, error) {
	for try := 0; ; try++ {
		var (
			results []store.FinishResult
			applied applied
		)
		err := s.transact(ctx, func(r *rounds) error {
			var err error
			results, applied, err = s.finish(ctx, r, outcomes)
			return err
		})
		if err != nil && s.tx == nil && deadlock(err) && try < insertRounds {
			continue
		}
		if err != nil {
			return nil, err
		}
		s.afterCommit(func() { s.wakeLater(applied) })
		return results, nil
	}
}

// finishSucceeded applies a batch of successes of distinct jobs in one
// statement (one pinned round), with the state job.Finish decides for every success
// (job.SucceededState), which leaves the journal as it is: the row
// implies the success's entry.
func (s *executor) finishSucceeded(ctx context.Context, r *rounds, outcomes []store.Outcome) ([]store.FinishResult, error) {
	ids := make([][16]byte, len(outcomes))
	tokens := make([][16]byte, len(outcomes))
	owners := make([]string, len(outcomes))
	results := make([]json.RawMessage, len(outcomes))
	for i, o := range outcomes {
		ids[i], tokens[i], owners[i] = o.ID, o.Token, o.Owner
		if len(o.Result) > 0 {
			results[i] = o.Result
		}
	}
	done := make(map[[2]uuid.UUID]bool, len(outcomes))
	err := r.pinnedRound(ctx, true, func(b *pgx.Batch) {
		b.Queue(finishSucceededSQL, s.now(), ids, tokens, results, string(job.SucceededState), owners,
			s.limited.countedQueues())
	}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		var id, token uuid.UUID
		_, err = pgx.ForEachRow(rows, []any{uuidDest(&id), uuidDest(&token)}, func() error {
			done[[2]uuid.UUID{id, token}] = true
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]store.FinishResult, len(outcomes))
	for i, o := range outcomes {
		if done[[2]uuid.UUID{o.ID, o.Token}] {
			out[i] = store.FinishResult{State: job.SucceededState}
		} else {
			out[i] = store.FinishResult{Lost: true}
		}
	}
	return out, nil
}

// finish is the general path of JobFinish, in two rounds: lock the rows
// still held; decide, and apply.
func (s *executor) finish(ctx context.Context, r *rounds, outcomes []store.Outcome) ([]store.FinishResult, applied, error) {
	now := s.now()
	ids := make([][16]byte, len(outcomes))
	tokens := make([][16]byte, len(outcomes))
	for i, o := range outcomes {
		ids[i], tokens[i] = o.ID, o.Token
	}
	held, at, err := lockHeld(ctx, r, lockHeldSQL, now, ids, tokens)
	if err != nil {
		return nil, applied{}, fmt.Errorf("lock: %w", err)
	}
	decided, results, err := store.DecideFinish(outcomes, held, at)
	if err != nil {
		return nil, applied{}, err
	}
	st, err := s.lockStep(ctx, r, store.EndsOf(decided), nil, at)
	if err != nil {
		return nil, applied{}, fmt.Errorf("workflow step: %w", err)
	}
	if err := s.setStateIfRunning(ctx, r, now, decided, st); err != nil {
		return nil, applied{}, err
	}
	return results, applied{decided: decided, at: at, step: st}, nil
}

// lockHeld runs query, lock_held.sql, lock_expired.sql or
// lock_timed_out.sql, in a pinned round of its own: it locks running jobs
// and returns their facts and the transaction's time. lock_timed_out.sql,
// which reads the jobs' timeouts too, is told by its text.
func lockHeld(ctx context.Context, r *rounds, query string, args ...any) ([]store.Held, time.Time, error) {
	withTimeout := query == lockTimedOutSQL
	var (
		held []store.Held
		at   time.Time
	)
	err := r.pinnedRound(ctx, false, func(b *pgx.Batch) { b.Queue(query, args...) }, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		var (
			h          store.Held
			timeout    *time.Duration
			workflowID pgtype.UUID
			parent     pgtype.UUID
		)
		dest := []any{uuidDest(&h.ID), uuidDest(&h.Token), &h.Queue, &h.Attempt,
			&h.MaxAttempts, &h.CancelRequested, &h.LeaseOwner, &h.AttemptedAt, &workflowID, &h.Task.Ref, &parent}
		if withTimeout {
			dest = append(dest, &timeout)
		}
		_, err = pgx.ForEachRow(rows, append(dest, &at), func() error {
			h.State = job.StateRunning // the statement's fence
			h.Timeout = 0
			if timeout != nil {
				h.Timeout = *timeout
			}
			h.Task.WorkflowID, h.Task.Parent = workflowID.Bytes, parent.Bytes
			held = append(held, h)
			return nil
		})
		return err
	})
	return held, at, err
}

// applied is what a committed batch of transitions leaves to do: wake the
// queues of jobs that come due later.
type applied struct {
	decided []store.Decided
	at      time.Time // the transaction's time
	step    *step     // the workflow step, if any
}

// setStateIfRunning applies decided transitions out of running, each
// fenced by state running and its lease token, in one statement
// (set_state_if_running.sql), in the last round of r, with the journal
// entries, attempted_at and outbox events they decided, and the
// throttles they set (flow_throttle.sql, in the same round), and the
// workflow step st (nil for none). The rows were locked by this
// transaction, so every one of them applies; one that did not would be a
// bug, and fails the transaction.
func (s *executor) setStateIfRunning(ctx context.Context, r *rounds, now *time.Time, decided []store.Decided, st *step) error {
	if err := st.prepare(now); err != nil {
		return err
	}
	n := len(decided)
	var (
		ids, tokens                       = make([][16]byte, n), make([][16]byte, n)
		states                            = make([]string, n)
		runAts, finishedAts, attemptedAts = make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
		attempts                          = make([]int32, n)
		results, entries                  = make([]json.RawMessage, n), make([]json.RawMessage, n)
		lastErrors, alerts, accepted      = make([]*string, n), make([]*string, n), make([]*string, n)
	)
	for i, d := range decided {
		ids[i], tokens[i] = d.ID, d.Token
		states[i], runAts[i], attempts[i] = string(d.State), timePtr(d.RunAt), int32(d.Attempt)
		finishedAts[i], lastErrors[i], attemptedAts[i] = d.FinishedAt, d.LastError, d.AttemptedAt
		alerts[i], accepted[i] = nullText(d.Alert), nullText(string(d.Outcome))
		if len(d.Result) > 0 {
			results[i] = d.Result
		}
		var err error
		if entries[i], err = job.MarshalJournal(d.Events); err != nil {
			return fmt.Errorf("job %s: %w", d.ID, err)
		}
	}
	throttles := store.ThrottlesOf(decided)
	throttled, untils := make([][16]byte, len(throttles)), make([]time.Time, len(throttles))
	for i, t := range throttles {
		throttled[i], untils[i] = t.ID, t.Until
	}
	queue := func(b *pgx.Batch) {
		if n > 0 {
			b.Queue(setStateIfRunningSQL, now, ids, tokens, states, runAts, attempts,
				finishedAts, results, lastErrors, entries, attemptedAts, alerts, s.limited.countedQueues(), accepted)
		}
		if len(throttles) > 0 {
			b.Queue(flowThrottleSQL, now, throttled, untils)
		}
		st.queue(b)
	}
	send := r.round
	if n > 0 || !st.empty() {
		send = r.pinnedRound // each job a probe of the primary key
	}
	return send(ctx, true, queue, func(br pgx.BatchResults) error {
		if n == 0 {
			return st.read(br)
		}
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("apply: %w", err)
		}
		if tag.RowsAffected() != int64(n) {
			return fmt.Errorf("apply: %d of %d locked jobs changed", tag.RowsAffected(), n)
		}
		if len(throttles) > 0 {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("throttle: %w", err)
			}
		}
		return st.read(br)
	})
}

// wakeLater arranges, once the transitions committed, a wake-up for the
// queues of jobs that went back to the queue due later (a retry's
// delay). Those due now were woken by the statement itself.
func (s *executor) wakeLater(a applied) {
	later := make(map[string]time.Time)
	for _, d := range a.decided {
		if d.State != job.StateQueued || !d.RunAt.After(a.at) {
			continue
		}
		if t, ok := later[d.Queue]; !ok || d.RunAt.Before(t) {
			later[d.Queue] = d.RunAt
		}
	}
	for queue, t := range later {
		s.delayed.At(queue, t)
	}
	s.wakeStepLater(a.step)
}
